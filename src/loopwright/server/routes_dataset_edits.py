"""Dify's Knowledge API writes beyond creating documents: ``POST …/documents/{doc_id}/update-by-text``
and ``…/update-by-file`` (also with underscores; indexed again after the answer, as Dify), a
document's segments: ``POST …/segments`` (create), ``GET``/``POST``/``DELETE …/segments/{segment_id}``
(read, update, delete), document metadata: ``…/metadata`` fields (create, list, rename, delete),
``…/metadata/built-in`` and its ``enable``/``disable``, ``POST …/documents/metadata`` (values in a
batch), and ``PATCH …/documents/status/{action}``. Dataset API keys, Dify's bodies; the work is
:mod:`loopwright.app.admin.dataset_edits`'s and :mod:`loopwright.app.admin.dataset_metadata`'s.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Depends, File, Form, Response, UploadFile
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from loopwright.app.admin import dataset_edits, dataset_metadata
from loopwright.app.admin.datasets import MetadataField
from loopwright.server.bodies import json_body
from loopwright.server.routes_datasets import (
    Authed,
    Knowledge,
    data_object,
    find_dataset,
    queued_body,
    read_document_file,
    segment_body,
)

router = APIRouter(prefix="/v1")

DOCUMENT = "/datasets/{dataset_id}/documents/{document_id}"


class UpdateByText(BaseModel):
    name: str | None = None
    text: str | None = None
    process_rule: dict[str, Any] | None = None
    doc_form: str | None = None
    doc_language: str | None = None
    retrieval_model: dict[str, Any] | None = None


@router.post(DOCUMENT + "/update-by-text")
@router.post(DOCUMENT + "/update_by_text", include_in_schema=False)
async def update_by_text(
    dataset_id: str,
    document_id: str,
    tasks: BackgroundTasks,
    kb: Knowledge,
    _: Authed,
    body: Annotated[UpdateByText, Depends(json_body(UpdateByText))],
) -> dict[str, Any]:
    """Rename a document and/or give it new text; ``{document, batch}`` as when it was created."""
    dataset = await find_dataset(kb, dataset_id)
    queued = await dataset_edits.update_document(
        kb, dataset, document_id, name=body.name, text=body.text, process_rule=body.process_rule
    )
    return queued_body(queued, dataset, tasks)


@router.post(DOCUMENT + "/update-by-file")
@router.post(DOCUMENT + "/update_by_file", include_in_schema=False)
async def update_by_file(
    dataset_id: str,
    document_id: str,
    tasks: BackgroundTasks,
    kb: Knowledge,
    _: Authed,
    file: Annotated[UploadFile | None, File()] = None,
    data: Annotated[str | None, Form()] = None,
) -> dict[str, Any]:
    """Give a document a new file (optional, as in Dify: ``data`` alone renames it)."""
    dataset = await find_dataset(kb, dataset_id)
    args = data_object(data)
    content: bytes | None = None
    kind, name = "text", args.get("name")
    if file is not None:
        content, kind = await read_document_file(file)
        name = name or file.filename
    queued = await dataset_edits.update_document(
        kb,
        dataset,
        document_id,
        name=str(name) if name else None,
        data=content,
        kind=kind,
        process_rule=args.get("process_rule"),
    )
    return queued_body(queued, dataset, tasks)


# --- segments -----------------------------------------------------------------------------------------


class CreateSegments(BaseModel):
    segments: list[dict[str, Any]] | None = None


class UpdateSegment(BaseModel):
    segment: dict[str, Any]


@router.post(DOCUMENT + "/segments", response_model=None)
async def create_segments(
    dataset_id: str,
    document_id: str,
    kb: Knowledge,
    _: Authed,
    body: Annotated[CreateSegments, Depends(json_body(CreateSegments))],
) -> dict[str, Any] | JSONResponse:
    """Add segments to a completed document: ``{data: [segment], doc_form}``."""
    dataset = await find_dataset(kb, dataset_id)
    document = await dataset_edits.segment_document(kb, dataset, document_id, completed=True)
    if body.segments is None:
        return JSONResponse({"error": "Segments is required"}, status_code=400)  # Dify's own body
    added = await dataset_edits.add_segments(kb, dataset, document, body.segments)
    return {"data": [segment_body(s) for s in added], "doc_form": dataset.doc_form}


@router.get(DOCUMENT + "/segments/{segment_id}")
async def get_segment(
    dataset_id: str, document_id: str, segment_id: str, kb: Knowledge, _: Authed
) -> dict[str, Any]:
    dataset = await find_dataset(kb, dataset_id)
    document = await dataset_edits.segment_document(kb, dataset, document_id)
    segment = await dataset_edits.find_segment(kb, document, segment_id)
    return {"data": segment_body(segment), "doc_form": dataset.doc_form}


@router.post(DOCUMENT + "/segments/{segment_id}")
async def update_segment(
    dataset_id: str,
    document_id: str,
    segment_id: str,
    kb: Knowledge,
    _: Authed,
    body: Annotated[UpdateSegment, Depends(json_body(UpdateSegment))],
) -> dict[str, Any]:
    """Change a segment's content (and a Q&A segment's answer); it is embedded again."""
    dataset = await find_dataset(kb, dataset_id)
    document = await dataset_edits.segment_document(kb, dataset, document_id)
    segment = await dataset_edits.find_segment(kb, document, segment_id)
    updated = await dataset_edits.update_segment(kb, dataset, segment, body.segment)
    return {"data": segment_body(updated), "doc_form": dataset.doc_form}


@router.delete(DOCUMENT + "/segments/{segment_id}", status_code=204)
async def delete_segment(
    dataset_id: str, document_id: str, segment_id: str, kb: Knowledge, _: Authed
) -> Response:
    dataset = await find_dataset(kb, dataset_id)
    document = await dataset_edits.segment_document(kb, dataset, document_id)
    segment = await dataset_edits.find_segment(kb, document, segment_id)
    await dataset_edits.delete_segment(kb, dataset, segment)
    return Response(status_code=204)


# --- metadata -----------------------------------------------------------------------------------------


class MetadataArgs(BaseModel):
    type: str
    name: str


class MetadataName(BaseModel):
    name: str


class MetadataOperations(BaseModel):
    operation_data: list[Any]


def field_body(f: MetadataField) -> dict[str, Any]:
    return {"id": f.id, "type": f.type, "name": f.name}


@router.post("/datasets/{dataset_id}/metadata", status_code=201)
async def create_metadata(
    dataset_id: str, kb: Knowledge, _: Authed, body: Annotated[MetadataArgs, Depends(json_body(MetadataArgs))]
) -> dict[str, Any]:
    dataset = await find_dataset(kb, dataset_id)
    return field_body(await dataset_metadata.create_field(kb, dataset, body.name, body.type))


@router.get("/datasets/{dataset_id}/metadata")
async def list_metadata(dataset_id: str, kb: Knowledge, _: Authed) -> dict[str, Any]:
    dataset = await find_dataset(kb, dataset_id)
    uses, built_in = await dataset_metadata.list_fields(kb, dataset)
    return {
        "doc_metadata": [{**field_body(u.field), "count": u.count} for u in uses],
        "built_in_field_enabled": built_in,
    }


@router.get("/datasets/{dataset_id}/metadata/built-in")
@router.get("/datasets/metadata/built-in", include_in_schema=False)
async def built_in_metadata(_: Authed) -> dict[str, Any]:
    return {"fields": [{"name": name, "type": type_} for name, type_ in dataset_metadata.BUILT_IN_FIELDS]}


@router.post("/datasets/{dataset_id}/metadata/built-in/{action}")
async def switch_built_in_metadata(dataset_id: str, action: str, kb: Knowledge, _: Authed) -> dict[str, Any]:
    """``enable`` or ``disable`` Dify's built-in fields (another action changes nothing, as in Dify)."""
    dataset = await find_dataset(kb, dataset_id)
    if action in ("enable", "disable"):
        await dataset_metadata.set_built_in(kb, dataset, action == "enable")
    return {"result": "success"}


@router.patch("/datasets/{dataset_id}/metadata/{metadata_id}")
async def rename_metadata(
    dataset_id: str,
    metadata_id: str,
    kb: Knowledge,
    _: Authed,
    body: Annotated[MetadataName, Depends(json_body(MetadataName))],
) -> dict[str, Any]:
    dataset = await find_dataset(kb, dataset_id)
    return field_body(await dataset_metadata.rename_field(kb, dataset, metadata_id, body.name))


@router.delete("/datasets/{dataset_id}/metadata/{metadata_id}", status_code=204)
async def delete_metadata(dataset_id: str, metadata_id: str, kb: Knowledge, _: Authed) -> Response:
    dataset = await find_dataset(kb, dataset_id)
    await dataset_metadata.delete_field(kb, dataset, metadata_id)
    return Response(status_code=204)


@router.post("/datasets/{dataset_id}/documents/metadata")
async def update_documents_metadata(
    dataset_id: str,
    kb: Knowledge,
    _: Authed,
    body: Annotated[MetadataOperations, Depends(json_body(MetadataOperations))],
) -> dict[str, Any]:
    """Set documents' metadata values in a batch (each document's list replaces its values)."""
    dataset = await find_dataset(kb, dataset_id)
    await dataset_metadata.update_documents(kb, dataset, body.operation_data)
    return {"result": "success"}


# --- document status ----------------------------------------------------------------------------------


class DocumentIds(BaseModel):
    document_ids: list[Any]


@router.patch("/datasets/{dataset_id}/documents/status/{action}")
async def document_status(
    dataset_id: str,
    action: str,
    kb: Knowledge,
    _: Authed,
    body: Annotated[DocumentIds, Depends(json_body(DocumentIds))],
) -> dict[str, Any]:
    """``enable``, ``disable``, ``archive`` or ``un_archive`` documents (Dify's batch status)."""
    dataset = await find_dataset(kb, dataset_id)
    await dataset_edits.set_document_status(kb, dataset, action, body.document_ids)
    return {"result": "success"}
