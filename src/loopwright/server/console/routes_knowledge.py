"""Admin API: knowledge bases — create, list, delete; upload a document (indexed after the answer:
poll its status); list documents with their indexing status; try a query and see the hits. The work is
:mod:`loopwright.app.admin.datasets`'s (as for the Knowledge API and ``loopwright kb``); the bodies are the
Knowledge API's (Dify's shapes), so one client reads both."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Depends, File, Form, Response, UploadFile
from pydantic import BaseModel, Field

from loopwright.app.admin import datasets
from loopwright.server.bodies import json_body
from loopwright.server.console.auth import require_admin
from loopwright.server.errors import ApiError
from loopwright.server.routes_datasets import (
    CreateDataset,
    Knowledge,
    dataset_body,
    document_body,
    read_document_file,
    segment_body,
)

router = APIRouter(prefix="/console/api", dependencies=[Depends(require_admin)])


@router.get("/datasets")
async def list_datasets(kb: Knowledge, keyword: str | None = None) -> dict[str, Any]:
    found = await datasets.dataset_page(kb, keyword, 1, 100)
    return {"data": [dataset_body(d) for d in found.datasets], "total": found.total}


@router.post("/datasets", status_code=201)
async def create_dataset(
    kb: Knowledge, body: Annotated[CreateDataset, Depends(json_body(CreateDataset))]
) -> dict[str, Any]:
    return dataset_body(await datasets.create_dataset(kb, body.new_dataset()))


@router.post("/dataset-keys", status_code=201)
async def create_dataset_key(kb: Knowledge) -> dict[str, Any]:
    """A new dataset API key (``dataset-…``) for the Knowledge API (``/v1/datasets``), shown this once."""
    return {"token": await datasets.create_key(kb)}


@router.get("/datasets/{dataset_id}")
async def get_dataset(dataset_id: str, kb: Knowledge) -> dict[str, Any]:
    return dataset_body(await datasets.get_dataset(kb, dataset_id))


@router.delete("/datasets/{dataset_id}", status_code=204)
async def delete_dataset(dataset_id: str, kb: Knowledge) -> Response:
    await datasets.delete_dataset(kb, dataset_id)
    return Response(status_code=204)


@router.get("/datasets/{dataset_id}/documents")
async def list_documents(dataset_id: str, kb: Knowledge, page: int = 1, limit: int = 100) -> dict[str, Any]:
    """The dataset's documents with their indexing status (``waiting``, ``indexing``, ``completed``,
    ``error`` with its ``error``) and segment counts."""
    dataset = await datasets.get_dataset(kb, dataset_id)
    documents, total = await datasets.list_documents(kb, dataset, None, page, limit)
    return {
        "data": [_document(d, dataset) for d in documents],
        "total": total,
        "has_more": page * limit < total,
    }


@router.get("/datasets/{dataset_id}/documents/{document_id}")
async def get_document(dataset_id: str, document_id: str, kb: Knowledge) -> dict[str, Any]:
    dataset = await datasets.get_dataset(kb, dataset_id)
    return _document(await datasets.get_document(kb, dataset, document_id), dataset)


def _document(d: datasets.Document, dataset: datasets.Dataset) -> dict[str, Any]:
    return {**document_body(d, dataset), "segment_count": d.segment_count, "completed_at": d.completed_at}


@router.post("/datasets/{dataset_id}/documents", status_code=201)
async def upload_document(
    dataset_id: str,
    tasks: BackgroundTasks,
    kb: Knowledge,
    file: Annotated[UploadFile | None, File()] = None,
    name: Annotated[str | None, Form()] = None,
) -> dict[str, Any]:
    """Upload a file (text, Markdown, HTML, PDF; CSV for Q&A datasets) as a document; it is indexed
    after the answer, which carries the queued document (poll it for its status)."""
    dataset = await datasets.get_dataset(kb, dataset_id)
    if file is None or not file.filename:
        raise ApiError(400, "no_file_uploaded", "Please upload your file.")
    content, kind = await read_document_file(file)
    queued = await datasets.queue_document(kb, dataset, name or file.filename, data=content, kind=kind)
    tasks.add_task(queued.index)
    return {"document": _document(queued.document, dataset), "batch": queued.document.batch}


@router.delete("/datasets/{dataset_id}/documents/{document_id}", status_code=204)
async def delete_document(dataset_id: str, document_id: str, kb: Knowledge) -> Response:
    dataset = await datasets.get_dataset(kb, dataset_id)
    await datasets.delete_document(kb, dataset, document_id)
    return Response(status_code=204)


class TryQuery(BaseModel):
    query: str
    method: str | None = None  # keyword | vector | semantic | hybrid; default: the dataset's
    top_k: int | None = Field(None, ge=1, le=100)
    score_threshold: float | None = Field(None, ge=0, le=1)


@router.post("/datasets/{dataset_id}/query")
async def try_query(
    dataset_id: str, kb: Knowledge, body: Annotated[TryQuery, Depends(json_body(TryQuery))]
) -> dict[str, Any]:
    """The segments a query finds, best first, with their scores (hit counts are not touched)."""
    dataset = await datasets.get_dataset(kb, dataset_id)
    hits = await datasets.try_query(
        kb, dataset, body.query, method=body.method, top_k=body.top_k, score_threshold=body.score_threshold
    )
    return {"query": {"content": body.query}, "records": [_record(h) for h in hits]}


def _record(hit: datasets.Hit) -> dict[str, Any]:
    """A hit in the Knowledge API's shape, its segment's hit count as stored (trying counts none)."""
    document = {"id": hit.segment.document_id, "data_source_type": "upload_file", "name": hit.document_name}
    return {"segment": {**segment_body(hit.segment), "document": document}, "score": hit.score}
