"""Dify's Knowledge API (the subset clients use), with dataset API keys (``Bearer dataset-…``).

``POST/GET /v1/datasets``, ``DELETE /v1/datasets/{id}``, ``POST …/document/create-by-text`` and
``…/create-by-file`` (indexed after the response, as Dify does: poll ``GET …/documents`` or
``…/documents/{batch}/indexing-status``), ``GET …/documents``, ``DELETE …/documents/{doc_id}``,
``POST …/retrieve``. Bodies and responses follow Dify's field names; the work is
:mod:`loopwright.app.admin.datasets`'s. The knowledge base is the server's (``AppRuntime.knowledge()``: the
one beside its database unless another was given); keys are made with ``loopwright kb key``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from fastapi import APIRouter, BackgroundTasks, Depends, File, Form, Query, Response, UploadFile
from pydantic import BaseModel, Field

from loopwright.app.admin import dataset_tags, datasets
from loopwright.app.admin.dataset_metadata import BUILT_IN_FIELDS
from loopwright.app.admin.datasets import (
    MAX_FILE_BYTES,
    Dataset,
    Document,
    Hit,
    KnowledgeBase,
    NewDataset,
    Queued,
    Segment,
    Tag,
)
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import dataset_key
from loopwright.server.bodies import json_body
from loopwright.server.errors import ApiError, invalid_param
from loopwright.server.state import get_state

router = APIRouter(prefix="/v1")

_STATUS = {"queued": "waiting", "indexing": "indexing", "completed": "completed", "error": "error"}
_DISPLAY = {"queued": "queuing", "indexing": "indexing", "completed": "available", "error": "error"}


# --- the knowledge base, the key and the errors -------------------------------------------------------


async def get_knowledge(state: Annotated[AppRuntime, Depends(get_state)]) -> KnowledgeBase:
    """The server's knowledge base (the one its apps' retriever tools use), opened on first use."""
    return state.knowledge()


Knowledge = Annotated[KnowledgeBase, Depends(get_knowledge)]
Authed = Annotated[str, Depends(dataset_key)]


async def find_dataset(kb: KnowledgeBase, dataset_id: str) -> Dataset:
    return await datasets.get_dataset(kb, dataset_id)


# --- bodies -------------------------------------------------------------------------------------------


def dataset_body(d: Dataset, tags: Sequence[Tag] = ()) -> dict[str, Any]:
    provider = "openai" if d.embedding.startswith("openai:") else ("loopwright" if d.has_vectors else None)
    return {
        "id": d.id,
        "name": d.name,
        "description": d.description,  # "" when empty, as Dify
        "provider": "vendor",
        "permission": "only_me",
        "data_source_type": "upload_file" if d.document_count else None,
        "indexing_technique": d.indexing_technique,
        "app_count": 0,
        "document_count": d.document_count,
        "word_count": d.word_count,
        "created_by": "",
        "created_at": d.created_at,
        "updated_by": "",
        "updated_at": d.updated_at,
        "embedding_model": _embedding_model(d.embedding),
        "embedding_model_provider": provider,
        "embedding_available": True,
        "retrieval_model_dict": d.retrieval.to_dict(),
        "tags": [{"id": t.id, "name": t.name, "type": "knowledge"} for t in tags],
        "doc_form": d.doc_form,
        # the rest of Dify's dataset fields, as a workspace without those features has them
        "author_name": None,
        "external_knowledge_info": {
            "external_knowledge_id": None,
            "external_knowledge_api_id": None,
            "external_knowledge_api_name": None,
            "external_knowledge_api_endpoint": None,
        },
        "external_retrieval_model": None,
        "doc_metadata": [{"id": f.id, "name": f.name, "type": f.type} for f in d.metadata_fields],
        "built_in_field_enabled": d.built_in_field_enabled,
        "pipeline_id": None,
        "runtime_mode": "general",
        "chunk_structure": None,
        "icon_info": {"icon_type": None, "icon": None, "icon_background": None, "icon_url": None},
        "is_published": False,
        "total_documents": d.document_count,
        "total_available_documents": d.document_count,
        "enable_api": True,
        "is_multimodal": False,
    }


def _embedding_model(spec: str) -> str | None:
    if spec == "minilm":
        return "all-MiniLM-L6-v2"
    return spec.split(":", 1)[1] if spec.startswith("openai:") else None


def document_body(d: Document, dataset: Dataset) -> dict[str, Any]:
    doc_form = dataset.doc_form
    return {
        "id": d.id,
        "position": d.position,
        "data_source_type": "upload_file",
        "data_source_info": {"upload_file_id": d.id},  # Dify keeps a text as an upload too
        "data_source_detail_dict": {"upload_file": {"id": d.id, "name": d.name, "extension": _extension(d)}},
        "dataset_process_rule_id": None,
        "name": d.name,
        "created_from": "api",
        "created_by": "",
        "created_at": d.created_at,
        "tokens": d.tokens,
        "indexing_status": _STATUS[d.status],
        "error": d.error,
        "enabled": d.enabled,
        "disabled_at": None,
        "disabled_by": None,
        "archived": d.archived,
        "display_status": display_status(d),
        "word_count": d.word_count,
        "hit_count": 0,
        "doc_form": doc_form,
        "doc_metadata": metadata_details(d, dataset),
        "summary_index_status": None,
        "need_summary": False,
    }


def _extension(d: Document) -> str:
    """The extension Dify's upload of the document would have (``txt`` for a text)."""
    if d.source == "text":
        return "txt"
    return d.name.rpartition(".")[2].lower() if "." in d.name else ""


def display_status(d: Document) -> str:
    """Dify's ``display_status``: archived and disabled before the indexing status."""
    if d.archived:
        return "archived"
    if not d.enabled and d.status == "completed":
        return "disabled"
    return _DISPLAY[d.status]


def metadata_details(d: Document, dataset: Dataset) -> list[dict[str, Any]]:
    """Dify's ``doc_metadata_details``: ``{id, name, type, value}`` of each value the document has (a
    built-in field's id is ``built-in``; a value of no field, from the CLI, is a string)."""
    fields = {f.name: (f.id, f.type) for f in dataset.metadata_fields}
    built_in = dict(BUILT_IN_FIELDS) if dataset.built_in_field_enabled else {}
    out = []
    for name, value in d.metadata.items():
        if name in fields:
            field_id, type_ = fields[name]
        elif name in built_in:
            field_id, type_ = "built-in", built_in[name]
        else:
            field_id, type_ = None, "string"
        out.append({"id": field_id, "name": name, "type": type_, "value": value})
    return out


def segment_body(s: Segment, hit_count: int | None = None) -> dict[str, Any]:
    """A segment in Dify's shape (``hit_count``: the count to show, default the stored one)."""
    return {
        "id": s.id,
        "position": s.position,
        "document_id": s.document_id,
        "content": s.content,
        "answer": s.answer,
        "word_count": s.word_count,
        "tokens": s.tokens,
        "keywords": [],
        "index_node_id": s.id,
        "index_node_hash": s.hash,
        "hit_count": s.hit_count if hit_count is None else hit_count,
        "enabled": True,
        "disabled_at": None,
        "disabled_by": None,
        "status": "completed",
        "created_by": "",
        "created_at": s.created_at,
        "indexing_at": s.created_at,
        "completed_at": s.created_at,
        "error": None,
        "stopped_at": None,
    }


def record_body(hit: Hit, document_source: str = "upload_file") -> dict[str, Any]:
    s = hit.segment
    return {
        "segment": {
            **segment_body(s, s.hit_count + 1),
            "sign_content": s.content,  # Dify signs image URLs in it; loopwright segments hold none
            "document": {
                "id": s.document_id,
                "data_source_type": document_source,
                "name": hit.document_name,
                "doc_type": None,
                "doc_metadata": hit.document_metadata or None,
            },
        },
        "child_chunks": [],
        "score": hit.score,
        "tsne_position": None,
        "files": [],
        "summary": None,
    }


# --- datasets -----------------------------------------------------------------------------------------


class CreateDataset(BaseModel):
    name: str
    description: str = ""
    indexing_technique: str | None = None
    permission: str | None = None
    embedding_model: str | None = None
    embedding_model_provider: str | None = None
    retrieval_model: dict[str, Any] | None = None
    # loopwright's own: a spec (none | minilm | openai:<model>) and splitting settings.
    embedding: str | None = None
    vector_store: str = "sqlite-vec"
    chunk_tokens: int | None = Field(default=None, ge=1)
    chunk_overlap: int | None = Field(default=None, ge=0)
    doc_form: str = "text_model"

    def new_dataset(self) -> NewDataset:
        """The dataset this body asks for (the Knowledge API's and the console's)."""
        return NewDataset(
            name=self.name,
            description=self.description,
            indexing_technique=self.indexing_technique,
            embedding_model=self.embedding_model,
            retrieval_model=self.retrieval_model,
            embedding=self.embedding,
            vector_store=self.vector_store,
            chunk_tokens=self.chunk_tokens,
            chunk_overlap=self.chunk_overlap,
            doc_form=self.doc_form,
        )


def data_object(data: str | None) -> dict[str, Any]:
    """The ``data`` form field of a document upload: a JSON object (absent: empty)."""
    try:
        args = json.loads(data) if data else {}
    except json.JSONDecodeError:
        raise invalid_param("data must be a JSON object") from None
    if not isinstance(args, dict):
        raise invalid_param("data must be a JSON object")
    return args


async def read_document_file(file: UploadFile) -> tuple[bytes, str]:
    """An uploaded document's content and kind, with Dify's refusals: no file name, a type that is
    not taken, more than 15 MB (read no further than one byte past the limit)."""
    if not file.filename:
        raise ApiError(400, "filename_not_exists_error", "The specified filename does not exist.")
    kind = datasets.document_kind(file.filename, file.content_type)
    if kind is None:
        raise ApiError(415, "unsupported_file_type", "File type not allowed.")
    content = await file.read(MAX_FILE_BYTES + 1)
    if len(content) > MAX_FILE_BYTES:
        raise ApiError(413, "file_too_large", "File size exceeded. The limit is 15 MB.")
    return content, kind


@router.post("/datasets")
async def create_dataset(
    kb: Knowledge, _: Authed, body: Annotated[CreateDataset, Depends(json_body(CreateDataset))]
) -> dict[str, Any]:
    dataset = await datasets.create_dataset(kb, body.new_dataset())
    return dataset_body(dataset)


@router.get("/datasets")
async def list_datasets(
    kb: Knowledge,
    _: Authed,
    keyword: str | None = None,
    page: int = 1,
    limit: int = 20,
    tag_ids: Annotated[list[str] | None, Query()] = None,
) -> dict[str, Any]:
    found = await datasets.dataset_page(kb, keyword, page, limit, tag_ids or ())
    tags = await dataset_tags.tags_by_dataset(kb, found.datasets)
    return {
        "data": [dataset_body(d, tags.get(d.id, ())) for d in found.datasets],
        "has_more": found.has_more,
        "limit": limit,
        "total": found.total,
        "page": page,
    }


class UpdateDataset(BaseModel):
    name: str | None = None
    description: str | None = None
    retrieval_model: dict[str, Any] | None = None


@router.get("/datasets/{dataset_id}")
async def get_dataset(dataset_id: str, kb: Knowledge, _: Authed) -> dict[str, Any]:
    """Dify's dataset detail (what ``KnowledgeBaseClient.get_dataset`` reads)."""
    dataset = await find_dataset(kb, dataset_id)
    return dataset_body(dataset, await dataset_tags.dataset_tags(kb, dataset))


@router.patch("/datasets/{dataset_id}")
async def update_dataset(
    dataset_id: str,
    kb: Knowledge,
    _: Authed,
    body: Annotated[UpdateDataset, Depends(json_body(UpdateDataset))],
) -> dict[str, Any]:
    """Change the name, description or retrieval settings; the dataset's detail after the change."""
    updated = await datasets.update_dataset(
        kb, dataset_id, name=body.name, description=body.description, retrieval_model=body.retrieval_model
    )
    return dataset_body(updated, await dataset_tags.dataset_tags(kb, updated))


@router.delete("/datasets/{dataset_id}", status_code=204)
async def delete_dataset(dataset_id: str, kb: Knowledge, _: Authed) -> Response:
    await datasets.delete_dataset(kb, dataset_id)
    return Response(status_code=204)


# --- documents ----------------------------------------------------------------------------------------


def queued_body(queued: Queued, dataset: Dataset, tasks: BackgroundTasks) -> dict[str, Any]:
    """Index after the answer (as Dify), and answer with the queued document and its batch."""
    tasks.add_task(queued.index)
    return {"document": document_body(queued.document, dataset), "batch": queued.document.batch}


class CreateByText(BaseModel):
    name: str
    text: str
    indexing_technique: str | None = None
    doc_form: str | None = None
    doc_language: str | None = None
    process_rule: dict[str, Any] | None = None
    retrieval_model: dict[str, Any] | None = None
    embedding_model: str | None = None
    embedding_model_provider: str | None = None


@router.post("/datasets/{dataset_id}/document/create-by-text")
@router.post("/datasets/{dataset_id}/document/create_by_text", include_in_schema=False)
async def create_by_text(
    dataset_id: str,
    tasks: BackgroundTasks,
    kb: Knowledge,
    _: Authed,
    body: Annotated[CreateByText, Depends(json_body(CreateByText))],
) -> dict[str, Any]:
    dataset = await find_dataset(kb, dataset_id)
    if not body.name.strip():
        raise invalid_param("name is required")
    queued = await datasets.queue_document(
        kb, dataset, body.name, text=body.text, process_rule=body.process_rule
    )
    return queued_body(queued, dataset, tasks)


@router.post("/datasets/{dataset_id}/document/create-by-file")
@router.post("/datasets/{dataset_id}/document/create_by_file", include_in_schema=False)
async def create_by_file(
    dataset_id: str,
    tasks: BackgroundTasks,
    kb: Knowledge,
    _: Authed,
    file: Annotated[UploadFile | None, File()] = None,
    data: Annotated[str | None, Form()] = None,
) -> dict[str, Any]:
    dataset = await find_dataset(kb, dataset_id)
    if file is None:
        raise ApiError(400, "no_file_uploaded", "Please upload your file.")
    if not file.filename:
        raise ApiError(400, "filename_not_exists_error", "The specified filename does not exist.")
    args = data_object(data)
    content, kind = await read_document_file(file)
    name = str(args.get("name") or file.filename)
    queued = await datasets.queue_document(
        kb, dataset, name, data=content, kind=kind, process_rule=args.get("process_rule")
    )
    return queued_body(queued, dataset, tasks)


@router.get("/datasets/{dataset_id}/documents")
async def list_documents(
    dataset_id: str,
    kb: Knowledge,
    _: Authed,
    keyword: str | None = None,
    page: int = 1,
    limit: int = 20,
    status: str | None = None,
) -> dict[str, Any]:
    """A page of the dataset's documents; ``status`` keeps those of that Dify display status
    (``queuing``, ``indexing``, ``available``, ``error``, …)."""
    dataset = await find_dataset(kb, dataset_id)
    keep = (lambda d: display_status(d) == status) if status else None
    documents, total = await datasets.list_documents(kb, dataset, keyword, page, limit, keep)
    return {
        "data": [document_body(d, dataset) for d in documents],
        "has_more": page * limit < total,
        "limit": limit,
        "total": total,
        "page": page,
    }


@router.get("/datasets/{dataset_id}/documents/{document_id}")
async def get_document(
    dataset_id: str,
    document_id: str,
    kb: Knowledge,
    _: Authed,
    metadata: Literal["all", "only", "without"] = "all",
) -> dict[str, Any]:
    """One document of the dataset, in Dify's detail shape (``metadata``: ``only`` its metadata,
    ``without`` the rest)."""
    dataset = await find_dataset(kb, dataset_id)
    return document_detail_body(await datasets.get_document(kb, dataset, document_id), dataset, metadata)


def document_detail_body(d: Document, dataset: Dataset, metadata: str = "all") -> dict[str, Any]:
    """Dify's ``DocumentApi.get`` body: the list item's fields without the upload's details and word
    count, with the processing rules (none kept: ``{}``, as Dify for a dataset without one), the
    times, the segment figures and the document type and language (unset: null)."""
    typed = {"doc_type": None, "doc_metadata": metadata_details(d, dataset)}
    if metadata == "only":
        return {"id": d.id, **typed}
    item = document_body(d, dataset)
    body = {
        **{k: item[k] for k in _DETAIL_KEYS},
        "dataset_process_rule": {},
        "document_process_rule": {},
        "completed_at": d.completed_at,
        "updated_at": d.updated_at,
        "indexing_latency": None if d.completed_at is None else max(0, d.completed_at - d.created_at),
        "segment_count": d.segment_count,
        "average_segment_length": d.word_count // d.segment_count if d.segment_count else 0,
        "doc_language": None,
    }
    return body if metadata == "without" else {**body, **typed}


# the list item's fields Dify's detail shares (it has no data_source_detail_dict, word_count,
# summary_index_status or need_summary)
_DETAIL_KEYS = (
    "id",
    "position",
    "data_source_type",
    "data_source_info",
    "dataset_process_rule_id",
    "name",
    "created_from",
    "created_by",
    "created_at",
    "tokens",
    "indexing_status",
    "error",
    "enabled",
    "disabled_at",
    "disabled_by",
    "archived",
    "display_status",
    "hit_count",
    "doc_form",
)


@router.get("/datasets/{dataset_id}/documents/{document_id}/segments")
async def list_segments(
    dataset_id: str,
    document_id: str,
    kb: Knowledge,
    _: Authed,
    keyword: str | None = None,
    page: Annotated[int, Query(ge=1)] = 1,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    """A page of a document's segments in order (Dify's shape; ``keyword`` filters by content)."""
    dataset = await find_dataset(kb, dataset_id)
    segments = await datasets.document_segments(kb, dataset, document_id, keyword)
    shown = segments[(page - 1) * limit : page * limit]
    return {
        "data": [segment_body(g) for g in shown],
        "doc_form": dataset.doc_form,
        "has_more": page * limit < len(segments),
        "limit": limit,
        "total": len(segments),
        "page": page,
    }


@router.get("/datasets/{dataset_id}/documents/{batch}/indexing-status")
async def indexing_status(dataset_id: str, batch: str, kb: Knowledge, _: Authed) -> dict[str, Any]:
    dataset = await find_dataset(kb, dataset_id)
    found = await datasets.batch_documents(kb, dataset, batch)
    return {
        "data": [
            {
                "id": d.id,
                "indexing_status": _STATUS[d.status],
                "processing_started_at": d.created_at,
                "parsing_completed_at": None,
                "cleaning_completed_at": None,
                "splitting_completed_at": None,
                "completed_at": d.completed_at,
                "paused_at": None,
                "error": d.error,
                "stopped_at": None,
                "completed_segments": d.segment_count,
                "total_segments": d.segment_count,
            }
            for d in found
        ]
    }


@router.delete("/datasets/{dataset_id}/documents/{document_id}", status_code=204)
async def delete_document(dataset_id: str, document_id: str, kb: Knowledge, _: Authed) -> Response:
    dataset = await find_dataset(kb, dataset_id)
    await datasets.delete_document(kb, dataset, document_id)
    return Response(status_code=204)


# --- retrieval ----------------------------------------------------------------------------------------


class RetrieveBody(BaseModel):
    query: str
    retrieval_model: dict[str, Any] | None = None
    external_retrieval_model: dict[str, Any] | None = None


@router.post("/datasets/{dataset_id}/retrieve")
@router.post("/datasets/{dataset_id}/hit-testing", include_in_schema=False)
async def retrieve(
    dataset_id: str, kb: Knowledge, _: Authed, body: Annotated[RetrieveBody, Depends(json_body(RetrieveBody))]
) -> dict[str, Any]:
    dataset = await find_dataset(kb, dataset_id)
    hits = await datasets.retrieve(kb, dataset, body.query, body.retrieval_model)
    return {"query": {"content": body.query}, "records": [record_body(h) for h in hits]}


# --- workspace models -----------------------------------------------------------------------------

MINILM = "all-MiniLM-L6-v2"


@router.get("/workspaces/current/models/model-types/{model_type}")
async def models_of_type(model_type: str, _: Authed) -> dict[str, Any]:
    """The models a dataset may name, in Dify's provider shape: for ``text-embedding`` the embedded
    MiniLM (what ``high_quality`` without a model uses; another ``embedding_model`` is asked of the
    OpenAI-compatible endpoint, which lists its own); no other type is chosen through this API here."""
    if model_type != "text-embedding":
        return {"data": []}
    label = {"en_US": MINILM, "zh_Hans": MINILM}
    model = {
        "model": MINILM,
        "label": label,
        "model_type": "text-embedding",
        "features": None,
        "fetch_from": "predefined-model",
        "model_properties": {"context_size": 256, "max_chunks": 1},
        "deprecated": False,
        "status": "active",
        "load_balancing_enabled": False,
    }
    provider = {"en_US": "loopwright (embedded)", "zh_Hans": "loopwright (embedded)"}
    return {
        "data": [
            {
                "tenant_id": None,
                "provider": "loopwright",
                "label": provider,
                "icon_small": None,
                "icon_large": None,
                "status": "active",
                "models": [model],
            }
        ]
    }
