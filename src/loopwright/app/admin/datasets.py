"""Knowledge datasets as Dify's Knowledge API uses them: dataset keys, datasets, documents queued and
indexed after the answer, and retrieval — over the server's :class:`KnowledgeBase`.

Dify's request fields are read here (``indexing_technique`` and ``embedding_model`` → an embedding
spec, a ``process_rule`` → splitting rules, a ``retrieval_model`` → retrieval settings and a metadata
filter). Refusals are :class:`~loopwright.errors.UserInputError` (:class:`NotFoundError` for what does
not exist); :class:`DatasetExistsError` and :class:`DocumentIndexingError` name the two Dify gives codes
of their own. The knowledge types the server answers with are re-exported from here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from loopwright.errors import NotFoundError, UserInputError
from loopwright.knowledge import Dataset, DatasetExistsError, Document, Hit, KnowledgeBase, MetadataFilter
from loopwright.knowledge.embeddings import parse_embedding_spec
from loopwright.knowledge.entities import MetadataField, RetrievalModel, Segment, Tag
from loopwright.knowledge.extract import ExtractError, kind_of
from loopwright.knowledge.ingest import Progress, Source
from loopwright.knowledge.kb import SPLIT_RULES

__all__ = [
    "MAX_FILE_BYTES",
    "Dataset",
    "DatasetExistsError",
    "MetadataField",
    "Segment",
    "Tag",
    "get_document",
    "document_segments",
    "DatasetPage",
    "Document",
    "DocumentIndexingError",
    "Hit",
    "KnowledgeBase",
    "NewDataset",
    "Queued",
    "batch_documents",
    "create_dataset",
    "create_key",
    "dataset_page",
    "delete_dataset",
    "delete_document",
    "document_kind",
    "embedding_spec",
    "find_dataset",
    "get_dataset",
    "key_is_valid",
    "list_documents",
    "queue_document",
    "retrieve",
    "splitting_rules",
    "try_query",
]

MAX_FILE_BYTES = 15 * 1024 * 1024  # Dify's default upload limit
MAX_NAME_CHARS = 40  # Dify's limit on a dataset's name

DATASET_NOT_FOUND = "Dataset not found."
DOCUMENT_NOT_FOUND = "Document Not Exists."
DOCUMENTS_NOT_FOUND = "Documents not found."


class DocumentIndexingError(UserInputError):
    """A document being indexed cannot be deleted (Dify: 400 ``document_indexing``)."""

    code = "document_indexing"

    def __init__(self) -> None:
        super().__init__("Cannot delete document during indexing.")


async def key_is_valid(kb: KnowledgeBase, token: str) -> bool:
    """Whether ``token`` is a dataset API key (made with ``loopwright kb key``)."""
    return await kb.store.check_api_key(token)


async def create_key(kb: KnowledgeBase) -> str:
    """A new dataset API key (``dataset-…``) for the Knowledge API (``loopwright kb key``, the console)."""
    return await kb.store.create_api_key()


# --- datasets -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewDataset:
    """A dataset to create: Dify's fields, and loopwright's own (``embedding`` spec, vector store,
    splitting)."""

    name: str
    description: str = ""
    indexing_technique: str | None = None
    embedding_model: str | None = None
    retrieval_model: dict[str, Any] | None = None
    embedding: str | None = None  # none | minilm | openai:<model>; wins over the Dify fields
    vector_store: str = "sqlite-vec"
    chunk_tokens: int | None = None
    chunk_overlap: int | None = None
    doc_form: str = "text_model"


def embedding_spec(embedding: str | None, indexing_technique: str | None, embedding_model: str | None) -> str:
    """The embedding spec of a new dataset: ``embedding`` when given, else Dify's ``high_quality`` with
    its ``embedding_model`` (MiniLM when none or MiniLM is named, else an OpenAI-compatible model), else
    none (keyword search only, Dify's ``economy``)."""
    if embedding:
        try:
            return parse_embedding_spec(embedding)
        except ValueError as exc:
            raise UserInputError(str(exc)) from None
    if indexing_technique not in (None, "economy", "high_quality"):
        raise UserInputError("indexing_technique must be high_quality or economy")
    if indexing_technique != "high_quality":
        return "none"
    model = (embedding_model or "").strip()
    if not model or model.lower() in ("all-minilm-l6-v2", "minilm"):
        return "minilm"
    return f"openai:{model}"


async def create_dataset(kb: KnowledgeBase, new: NewDataset) -> Dataset:
    """A new dataset; :class:`DatasetExistsError` when the name is taken."""
    if not 1 <= len(new.name.strip()) <= MAX_NAME_CHARS:
        raise UserInputError(f"Name must be between 1 to {MAX_NAME_CHARS} characters.")
    if new.doc_form not in ("text_model", "qa_model"):
        raise UserInputError("doc_form must be text_model or qa_model")
    try:
        return await kb.create_dataset(
            new.name,
            description=new.description,
            embedding=embedding_spec(new.embedding, new.indexing_technique, new.embedding_model),
            vector_store="lancedb" if new.vector_store == "lancedb" else "sqlite-vec",
            chunk_tokens=new.chunk_tokens,
            overlap_tokens=new.chunk_overlap,
            doc_form="qa_model" if new.doc_form == "qa_model" else "text_model",
            retrieval=new.retrieval_model,
        )
    except DatasetExistsError:
        raise
    except ValueError as exc:  # the knowledge base's own checks (name, vector store, chunking)
        raise UserInputError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class DatasetPage:
    datasets: list[Dataset]
    total: int
    has_more: bool


def _check_page(page: int, limit: int) -> None:
    if page < 1:
        raise UserInputError("page must be at least 1")
    if not 1 <= limit <= 100:
        raise UserInputError("limit must be between 1 and 100")


async def dataset_page(
    kb: KnowledgeBase, keyword: str | None, page: int, limit: int, tag_ids: Sequence[str] = ()
) -> DatasetPage:
    """Page ``page`` (from 1) of ``limit`` datasets whose name contains ``keyword`` (and, with
    ``tag_ids``, that carry one of those tags, as Dify filters)."""
    _check_page(page, limit)
    datasets = await kb.list_datasets(keyword)
    if tag_ids:
        tagged = await kb.store.datasets_with_tags(list(tag_ids))
        datasets = [d for d in datasets if d.id in tagged]
    return DatasetPage(
        datasets[(page - 1) * limit : page * limit], len(datasets), page * limit < len(datasets)
    )


async def get_dataset(kb: KnowledgeBase, dataset_id: str) -> Dataset:
    """The dataset with this id (not a name), or :class:`NotFoundError`."""
    found = await kb.store.get_dataset(dataset_id)
    if found is None or found.id != dataset_id:
        raise NotFoundError(DATASET_NOT_FOUND)
    return found


async def update_dataset(
    kb: KnowledgeBase,
    dataset_id: str,
    *,
    name: str | None = None,
    description: str | None = None,
    retrieval_model: dict[str, Any] | None = None,
) -> Dataset:
    """Change a dataset's name, description or retrieval settings (Dify's ``PATCH``; what is not
    given stays). :class:`DatasetExistsError` when the new name is another dataset's."""
    dataset = await get_dataset(kb, dataset_id)
    if name is not None:
        if not 1 <= len(name.strip()) <= MAX_NAME_CHARS:
            raise UserInputError(f"Name must be between 1 to {MAX_NAME_CHARS} characters.")
        other = await kb.store.get_dataset(name.strip())
        if other is not None and other.id != dataset.id:
            raise DatasetExistsError(name)
        dataset = replace(dataset, name=name.strip())
    if description is not None:
        dataset = replace(dataset, description=description)
    if retrieval_model is not None:
        try:
            return await kb.update_retrieval(dataset, retrieval_model)
        except ValueError as exc:
            raise UserInputError(str(exc)) from None
    await kb.store.update_dataset(dataset)
    return await get_dataset(kb, dataset_id)


async def delete_dataset(kb: KnowledgeBase, dataset_id: str) -> None:
    await kb.delete_dataset(await get_dataset(kb, dataset_id))


# --- documents ----------------------------------------------------------------------------------------


def splitting_rules(process_rule: dict[str, Any] | None) -> dict[str, Any]:
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
        if rule.get("id") in ("remove_extra_spaces", "remove_urls_emails"):
            out[rule["id"]] = bool(rule.get("enabled"))
    if out.get("chunk_tokens", 1) < 1 or out.get("overlap_tokens", 0) < 0:
        raise UserInputError("segmentation max_tokens must be at least 1 and chunk_overlap 0 or more")
    assert set(out) <= set(SPLIT_RULES)
    return out


def document_kind(filename: str, content_type: str | None) -> str | None:
    """The kind of document a file is (``text``, ``markdown``, ``html``, ``pdf``, ``csv``), or None when
    it cannot be read as text."""
    try:
        return kind_of(filename, content_type)
    except ExtractError:
        return None


@dataclass(frozen=True, slots=True)
class Queued:
    """A document queued for indexing, and the job that indexes it (to run after the answer)."""

    document: Document
    index: Callable[[], Awaitable[Document]]


async def queue_document(
    kb: KnowledgeBase,
    dataset: Dataset,
    name: str,
    *,
    text: str | None = None,
    data: bytes | None = None,
    kind: str = "text",
    process_rule: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> Queued:
    """Queue a document of ``text``, or of file ``data`` of a :func:`document_kind`; indexing it is left
    to the caller (Dify answers first: clients poll the document's status). ``progress`` is told of
    the chunks made and embedded while it is indexed."""
    rules = splitting_rules(process_rule)
    source = Source(kind="text", text=text) if text is not None else Source(kind=kind, data=data)
    document = await kb.queue_document(dataset, name, source.kind)

    async def index() -> Document:
        return await kb.index(dataset, document, source, progress, rules=rules)

    return Queued(document, index)


async def list_documents(
    kb: KnowledgeBase,
    dataset: Dataset,
    keyword: str | None,
    page: int,
    limit: int,
    keep: Callable[[Document], bool] | None = None,
) -> tuple[list[Document], int]:
    """Page ``page`` (from 1) of ``limit`` documents, and how many there are in all; with ``keep``,
    only the documents it keeps (Dify's ``status`` filter) are paged and counted."""
    _check_page(page, limit)
    if keep is None:
        return await kb.list_documents(dataset, keyword, limit, (page - 1) * limit)
    documents = [d for d in (await kb.list_documents(dataset, keyword))[0] if keep(d)]
    return documents[(page - 1) * limit : page * limit], len(documents)


async def batch_documents(kb: KnowledgeBase, dataset: Dataset, batch: str) -> list[Document]:
    """The documents queued together as ``batch``, or :class:`NotFoundError`."""
    documents, _total = await kb.list_documents(dataset)
    found = [d for d in documents if d.batch == batch]
    if not found:
        raise NotFoundError(DOCUMENTS_NOT_FOUND)
    return found


async def get_document(kb: KnowledgeBase, dataset: Dataset, document_id: str) -> Document:
    """A document of the dataset, or :class:`NotFoundError` (Dify's "Document Not Exists.")."""
    document = await kb.store.get_document(document_id)
    if document is None or document.dataset_id != dataset.id:
        raise NotFoundError(DOCUMENT_NOT_FOUND)
    return document


async def document_segments(
    kb: KnowledgeBase, dataset: Dataset, document_id: str, keyword: str | None = None
) -> list[Segment]:
    """The segments of a document of the dataset in order, those containing ``keyword`` (any case)
    when given; :class:`NotFoundError` for a document that is not the dataset's."""
    document = await get_document(kb, dataset, document_id)
    segments = await kb.store.list_segments(document.id)
    if keyword:
        word = keyword.lower()
        segments = [g for g in segments if word in g.content.lower() or word in (g.answer or "").lower()]
    return segments


async def delete_document(kb: KnowledgeBase, dataset: Dataset, document_id: str) -> None:
    """Delete a document of the dataset; :class:`DocumentIndexingError` while it is being indexed."""
    document = await get_document(kb, dataset, document_id)
    if document.status == "indexing":
        raise DocumentIndexingError()
    await kb.delete_document(dataset, document_id)


# --- retrieval ----------------------------------------------------------------------------------------


async def retrieve(
    kb: KnowledgeBase, dataset: Dataset, query: str, retrieval_model: dict[str, Any] | None
) -> list[Hit]:
    """The dataset's segments that best match ``query``, with Dify's ``retrieval_model`` options (the
    dataset's own settings for what they leave out) and its ``metadata_filtering_conditions``."""
    if not query.strip():
        raise UserInputError("query is required")
    options = retrieval_model or {}
    try:
        model = RetrievalModel.from_dict(options, dataset.retrieval)
        metadata_filter = MetadataFilter.from_dict(options.get("metadata_filtering_conditions"))
    except (ValueError, KeyError, TypeError) as exc:
        raise UserInputError(f"retrieval_model: {exc}") from None
    return await kb.search(dataset, query, retrieval=model, metadata_filter=metadata_filter)


async def try_query(
    kb: KnowledgeBase,
    dataset: Dataset,
    query: str,
    *,
    method: str | None = None,
    top_k: int | None = None,
    score_threshold: float | None = None,
) -> list[Hit]:
    """The dataset's best segments for ``query`` as an operator tries it (``loopwright kb search``, the
    console): the dataset's settings with these overrides (``method``: keyword, vector, semantic or
    hybrid), and the segments' hit counts left alone."""
    if not query.strip():
        raise UserInputError("query is required")
    if method not in (None, "keyword", "vector", "semantic", "hybrid"):
        raise UserInputError("method must be keyword, vector, semantic or hybrid")
    if top_k is not None and not 1 <= top_k <= 100:
        raise UserInputError("top_k must be between 1 and 100")
    return await kb.search(
        dataset,
        query,
        method=method,  # type: ignore[arg-type]  # checked above
        top_k=top_k,
        score_threshold=score_threshold,
        count_hits=False,
    )


async def find_dataset(kb: KnowledgeBase, id_or_name: str) -> Dataset:
    """The dataset with this id or name, or :class:`NotFoundError`."""
    found = await kb.find_dataset(id_or_name)
    if found is None:
        raise NotFoundError(f"no dataset named {id_or_name!r}")
    return found
