"""Dify's Knowledge API writes beyond creating documents: ``POST …/documents/{doc_id}/update-by-text``
and ``…/update-by-file`` (also with underscores; indexed again after the answer, as Dify), and a
document's segments: ``POST …/segments`` (create), ``GET``/``POST``/``DELETE …/segments/{segment_id}``
(read, update, delete). Dataset API keys, Dify's bodies; the work is
:mod:`loopwright.app.dataset_edits`'s.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Depends, File, Form, Response, UploadFile
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from loopwright.app import dataset_edits, datasets
from loopwright.app.datasets import MAX_FILE_BYTES
from loopwright.server.bodies import json_body
from loopwright.server.errors import ApiError, invalid_param
from loopwright.server.routes_datasets import Authed, Knowledge, find_dataset, queued_body, segment_body

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
    args = _data_object(data)
    content, kind, name = None, "text", args.get("name")
    if file is not None:
        if not file.filename:
            raise ApiError(400, "filename_not_exists_error", "The specified filename does not exist.")
        found_kind = datasets.document_kind(file.filename, file.content_type)
        if found_kind is None:
            raise ApiError(415, "unsupported_file_type", "File type not allowed.")
        content = await file.read(MAX_FILE_BYTES + 1)
        if len(content) > MAX_FILE_BYTES:
            raise ApiError(413, "file_too_large", "File size exceeded. The limit is 15 MB.")
        kind, name = found_kind, name or file.filename
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


def _data_object(data: str | None) -> dict[str, Any]:
    try:
        args = json.loads(data) if data else {}
    except json.JSONDecodeError:
        raise invalid_param("data must be a JSON object") from None
    if not isinstance(args, dict):
        raise invalid_param("data must be a JSON object")
    return args


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
