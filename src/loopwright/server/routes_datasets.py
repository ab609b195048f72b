"""Dify's Knowledge API (the subset clients use), with dataset API keys (``Bearer dataset-…``).

``POST/GET /v1/datasets``, ``DELETE /v1/datasets/{id}``, ``POST …/document/create-by-text`` and
``…/create-by-file`` (indexed after the response, as Dify does: poll ``GET …/documents`` or
``…/documents/{batch}/indexing-status``), ``GET …/documents``, ``DELETE …/documents/{doc_id}``,
``POST …/retrieve``. Bodies and responses follow Dify's field names. The knowledge base is the one
beside the server's database (``app.state.knowledge`` when set, else opened on first use); keys are
made with ``loopwright kb key``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Depends, File, Form, Request, Response, UploadFile
from pydantic import BaseModel, Field

from loopwright.knowledge import Dataset, DatasetExistsError, Document, Hit, KnowledgeBase, MetadataFilter
from loopwright.knowledge.embeddings import parse_embedding_spec
from loopwright.knowledge.entities import RetrievalModel
from loopwright.knowledge.extract import ExtractError, kind_of
from loopwright.knowledge.ingest import Source
from loopwright.knowledge.kb import SPLIT_RULES
from loopwright.server.errors import ApiError, invalid_param, not_found
from loopwright.server.state import ServerState

router = APIRouter(prefix="/v1")

MAX_FILE_BYTES = 15 * 1024 * 1024  # Dify's default upload limit
_STATUS = {"queued": "waiting", "indexing": "indexing", "completed": "completed", "error": "error"}
_DISPLAY = {"queued": "queuing", "indexing": "indexing", "completed": "available", "error": "error"}


# --- the knowledge base and the key ------------------------------------------------------------------


async def get_knowledge(request: Request) -> KnowledgeBase:
    """The server's knowledge base (the one its apps' retriever tools use), opened on first use."""
    state: ServerState = request.app.state.loopwright
    return state.knowledge()


Knowledge = Annotated[KnowledgeBase, Depends(get_knowledge)]


async def dataset_key(request: Request, kb: Knowledge) -> str:
    """FastAPI dependency: a valid dataset API key, or 401 as Dify answers."""
    header = request.headers.get("authorization")
    if header is None:
        raise ApiError(401, "unauthorized", "Authorization header must be provided and start with 'Bearer'")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "unauthorized", "Authorization scheme must be 'Bearer'")
    if not await kb.store.check_api_key(token.strip()):
        raise ApiError(401, "unauthorized", "Access token is invalid")
    return token.strip()


Authed = Annotated[str, Depends(dataset_key)]


async def _dataset(kb: KnowledgeBase, dataset_id: str) -> Dataset:
    found = await kb.store.get_dataset(dataset_id)
    if found is None or found.id != dataset_id:
        raise not_found("Dataset not found.")
    return found


# --- bodies -------------------------------------------------------------------------------------------


def dataset_body(d: Dataset) -> dict[str, Any]:
    provider = "openai" if d.embedding.startswith("openai:") else ("loopwright" if d.has_vectors else None)
    return {
        "id": d.id,
        "name": d.name,
        "description": d.description or None,
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
        "tags": [],
        "doc_form": d.doc_form,
    }


def _embedding_model(spec: str) -> str | None:
    if spec == "minilm":
        return "all-MiniLM-L6-v2"
    return spec.split(":", 1)[1] if spec.startswith("openai:") else None


def document_body(d: Document, doc_form: str) -> dict[str, Any]:
    return {
        "id": d.id,
        "position": d.position,
        "data_source_type": "upload_file",
        "data_source_info": {"upload_file_id": d.id} if d.source != "text" else None,
        "dataset_process_rule_id": None,
        "name": d.name,
        "created_from": "api",
        "created_by": "",
        "created_at": d.created_at,
        "tokens": d.tokens,
        "indexing_status": _STATUS[d.status],
        "error": d.error,
        "enabled": True,
        "disabled_at": None,
        "disabled_by": None,
        "archived": False,
        "display_status": _DISPLAY[d.status],
        "word_count": d.word_count,
        "hit_count": 0,
        "doc_form": doc_form,
        "doc_metadata": [{"name": k, "value": v} for k, v in d.metadata.items()],
    }


def record_body(hit: Hit, document_source: str = "upload_file") -> dict[str, Any]:
    s = hit.segment
    return {
        "segment": {
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
            "hit_count": s.hit_count + 1,
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
            "document": {"id": s.document_id, "data_source_type": document_source, "name": hit.document_name},
        },
        "score": hit.score,
        "tsne_position": None,
    }


def _page(page: int, limit: int) -> tuple[int, int]:
    if page < 1:
        raise invalid_param("page must be at least 1")
    if not 1 <= limit <= 100:
        raise invalid_param("limit must be between 1 and 100")
    return page, limit


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


def _embedding_spec(body: CreateDataset) -> str:
    if body.embedding:
        return parse_embedding_spec(body.embedding)
    if body.indexing_technique not in (None, "economy", "high_quality"):
        raise invalid_param("indexing_technique must be high_quality or economy")
    if body.indexing_technique != "high_quality":
        return "none"
    model = (body.embedding_model or "").strip()
    if not model or model.lower() in ("all-minilm-l6-v2", "minilm"):
        return "minilm"
    return f"openai:{model}"


@router.post("/datasets")
async def create_dataset(body: CreateDataset, kb: Knowledge, _: Authed) -> dict[str, Any]:
    if not 1 <= len(body.name.strip()) <= 40:
        raise invalid_param("Name must be between 1 to 40 characters.")
    if body.doc_form not in ("text_model", "qa_model"):
        raise invalid_param("doc_form must be text_model or qa_model")
    try:
        dataset = await kb.create_dataset(
            body.name,
            description=body.description,
            embedding=_embedding_spec(body),
            vector_store="lancedb" if body.vector_store == "lancedb" else "sqlite-vec",
            chunk_tokens=body.chunk_tokens,
            overlap_tokens=body.chunk_overlap,
            doc_form="qa_model" if body.doc_form == "qa_model" else "text_model",
            retrieval=body.retrieval_model,
        )
    except DatasetExistsError:
        raise ApiError(
            409, "dataset_name_duplicate", "The dataset name already exists. Please modify your dataset name."
        ) from None
    except ValueError as exc:
        raise invalid_param(str(exc)) from None
    return dataset_body(dataset)


@router.get("/datasets")
async def list_datasets(
    kb: Knowledge, _: Authed, keyword: str | None = None, page: int = 1, limit: int = 20
) -> dict[str, Any]:
    page, limit = _page(page, limit)
    datasets = await kb.list_datasets(keyword)
    chunk = datasets[(page - 1) * limit : page * limit]
    return {
        "data": [dataset_body(d) for d in chunk],
        "has_more": page * limit < len(datasets),
        "limit": limit,
        "total": len(datasets),
        "page": page,
    }


@router.delete("/datasets/{dataset_id}", status_code=204)
async def delete_dataset(dataset_id: str, kb: Knowledge, _: Authed) -> Response:
    await kb.delete_dataset(await _dataset(kb, dataset_id))
    return Response(status_code=204)


# --- documents ----------------------------------------------------------------------------------------


def _rules(process_rule: dict[str, Any] | None) -> dict[str, Any]:
    """Splitting overrides from a Dify ``process_rule`` (``mode: custom``)."""
    if not process_rule or process_rule.get("mode") != "custom":
        return {}
    rules = process_rule.get("rules") or {}
    out: dict[str, Any] = {}
    segmentation = rules.get("segmentation") or {}
    if segmentation.get("max_tokens"):
        out["chunk_tokens"] = int(segmentation["max_tokens"])
    if segmentation.get("chunk_overlap") is not None:
        out["overlap_tokens"] = int(segmentation["chunk_overlap"])
    if segmentation.get("separator"):
        out["separator"] = str(segmentation["separator"])
    for rule in rules.get("pre_processing_rules") or []:
        name = {"remove_extra_spaces": "remove_extra_spaces", "remove_urls_emails": "remove_urls_emails"}
        if rule.get("id") in name:
            out[name[rule["id"]]] = bool(rule.get("enabled"))
    if out.get("chunk_tokens", 1) < 1 or out.get("overlap_tokens", 0) < 0:
        raise invalid_param("segmentation max_tokens must be at least 1 and chunk_overlap 0 or more")
    assert set(out) <= set(SPLIT_RULES)
    return out


async def _queue(
    kb: KnowledgeBase,
    dataset: Dataset,
    name: str,
    source: Source,
    process_rule: dict[str, Any] | None,
    tasks: BackgroundTasks,
) -> dict[str, Any]:
    rules = _rules(process_rule)
    document = await kb.queue_document(dataset, name, source.kind)
    tasks.add_task(kb.index, dataset, document, source, None, rules=rules)
    return {"document": document_body(document, dataset.doc_form), "batch": document.batch}


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
    dataset_id: str, body: CreateByText, tasks: BackgroundTasks, kb: Knowledge, _: Authed
) -> dict[str, Any]:
    dataset = await _dataset(kb, dataset_id)
    if not body.name.strip():
        raise invalid_param("name is required")
    return await _queue(kb, dataset, body.name, Source(kind="text", text=body.text), body.process_rule, tasks)


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
    dataset = await _dataset(kb, dataset_id)
    if file is None:
        raise ApiError(400, "no_file_uploaded", "Please upload your file.")
    if not file.filename:
        raise ApiError(400, "filename_not_exists_error", "The specified filename does not exist.")
    try:
        args = json.loads(data) if data else {}
    except json.JSONDecodeError:
        raise invalid_param("data must be a JSON object") from None
    if not isinstance(args, dict):
        raise invalid_param("data must be a JSON object")
    try:
        kind = kind_of(file.filename, file.content_type)
    except ExtractError:
        raise ApiError(415, "unsupported_file_type", "File type not allowed.") from None
    content = await file.read(MAX_FILE_BYTES + 1)
    if len(content) > MAX_FILE_BYTES:
        raise ApiError(413, "file_too_large", "File size exceeded. The limit is 15 MB.")
    name = str(args.get("name") or file.filename)
    return await _queue(kb, dataset, name, Source(kind=kind, data=content), args.get("process_rule"), tasks)


@router.get("/datasets/{dataset_id}/documents")
async def list_documents(
    dataset_id: str, kb: Knowledge, _: Authed, keyword: str | None = None, page: int = 1, limit: int = 20
) -> dict[str, Any]:
    dataset = await _dataset(kb, dataset_id)
    page, limit = _page(page, limit)
    documents, total = await kb.list_documents(dataset, keyword, limit, (page - 1) * limit)
    return {
        "data": [document_body(d, dataset.doc_form) for d in documents],
        "has_more": page * limit < total,
        "limit": limit,
        "total": total,
        "page": page,
    }


@router.get("/datasets/{dataset_id}/documents/{batch}/indexing-status")
async def indexing_status(dataset_id: str, batch: str, kb: Knowledge, _: Authed) -> dict[str, Any]:
    dataset = await _dataset(kb, dataset_id)
    documents, _total = await kb.list_documents(dataset)
    found = [d for d in documents if d.batch == batch]
    if not found:
        raise not_found("Documents not found.")
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
    dataset = await _dataset(kb, dataset_id)
    document = await kb.store.get_document(document_id)
    if document is None or document.dataset_id != dataset.id:
        raise not_found("Document Not Exists.")
    if document.status == "indexing":
        raise ApiError(400, "document_indexing", "Cannot delete document during indexing.")
    await kb.delete_document(dataset, document_id)
    return Response(status_code=204)


# --- retrieval ----------------------------------------------------------------------------------------


class RetrieveBody(BaseModel):
    query: str
    retrieval_model: dict[str, Any] | None = None
    external_retrieval_model: dict[str, Any] | None = None


@router.post("/datasets/{dataset_id}/retrieve")
@router.post("/datasets/{dataset_id}/hit-testing", include_in_schema=False)
async def retrieve(dataset_id: str, body: RetrieveBody, kb: Knowledge, _: Authed) -> dict[str, Any]:
    dataset = await _dataset(kb, dataset_id)
    if not body.query.strip():
        raise invalid_param("query is required")
    options = body.retrieval_model or {}
    try:
        model = RetrievalModel.from_dict(options, dataset.retrieval)
        metadata_filter = MetadataFilter.from_dict(options.get("metadata_filtering_conditions"))
    except (ValueError, KeyError, TypeError) as exc:
        raise invalid_param(f"retrieval_model: {exc}") from None
    hits = await kb.search(dataset, body.query, retrieval=model, metadata_filter=metadata_filter)
    return {"query": {"content": body.query}, "records": [record_body(h) for h in hits]}
