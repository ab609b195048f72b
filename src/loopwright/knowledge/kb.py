"""``KnowledgeBase``: datasets, documents and search in one object (what the CLI, the HTTP routes and
the retriever tool use).

    kb = KnowledgeBase.open()                      # beside the app database, see knowledge_path()
    ds = await kb.create_dataset("handbook", embedding="minilm")
    await kb.add_file(ds, Path("handbook.pdf"))
    hits = await kb.search(ds, "how many vacation days?")
    await kb.close()
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from loopwright._threads import run_sync
from loopwright.errors import NotFoundError, UserInputError
from loopwright.knowledge.connection import knowledge_path
from loopwright.knowledge.embeddings import (
    MINILM_DIM,
    Embedder,
    EndpointSettings,
    embedder_for,
    parse_embedding_spec,
)
from loopwright.knowledge.entities import (
    DEFAULT_CHUNK_TOKENS,
    DEFAULT_OVERLAP_TOKENS,
    DEFAULT_SEPARATOR,
    MINILM_CHUNK_TOKENS,
    ChunkDraft,
    Dataset,
    DocForm,
    Document,
    Hit,
    RetrievalModel,
    SearchMethod,
    Segment,
    VectorBackend,
)
from loopwright.knowledge.extract import kind_of
from loopwright.knowledge.filters import MetadataFilter
from loopwright.knowledge.ingest import Progress, Source, index_document, new_segments, segment_counts
from loopwright.knowledge.retrieve import retrieve
from loopwright.knowledge.store import KnowledgeStore
from loopwright.knowledge.vectors import Vectors

MAX_NAME_CHARS = 40  # Dify's limit for dataset names
SPLIT_RULES = ("chunk_tokens", "overlap_tokens", "separator", "remove_extra_spaces", "remove_urls_emails")
_METHODS: dict[str, SearchMethod] = {
    "keyword": "keyword_search",
    "vector": "semantic_search",
    "semantic": "semantic_search",
    "hybrid": "hybrid_search",
}


class DatasetNotFoundError(NotFoundError):
    """No dataset has the id or name given (a ``LookupError``, as it always was)."""


class DatasetExistsError(UserInputError):
    """Another dataset has the name given (a ``ValueError``, as it always was)."""


class KnowledgeBase:
    """Datasets in the SQLite file at ``path``. ``settings`` (e.g. ``loopwright.config.Settings``) give
    OpenAI-compatible embedding endpoints their base URL and key (default: the ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY`` environment variables)."""

    def __init__(
        self,
        path: str | Path,
        *,
        settings: EndpointSettings | None = None,
        lance_dir: str | Path | None = None,
    ) -> None:
        self.store = KnowledgeStore(path, lance_dir=lance_dir)
        self._settings = settings
        self._embedders: dict[str, Embedder] = {}

    @classmethod
    def open(
        cls,
        database_url: str,
        *,
        data_dir: str | Path | None = None,
        settings: EndpointSettings | None = None,
    ) -> KnowledgeBase:
        """The knowledge base beside the app database (see :func:`knowledge_path`)."""
        return cls(knowledge_path(database_url, data_dir), settings=settings)

    async def close(self) -> None:
        for embedder in self._embedders.values():
            close = getattr(embedder, "close", None)
            if close is not None:
                await close()
        await self.store.close()

    def embedder(self, dataset: Dataset) -> Embedder | None:
        """The dataset's embedding model (one instance per spec; MiniLM's weights once per process)."""
        if not dataset.has_vectors:
            return None
        found = self._embedders.get(dataset.embedding)
        if found is None:
            found = embedder_for(dataset.embedding, self._settings)
            if found is None:
                return None
            self._embedders[dataset.embedding] = found
        return found

    # --- datasets -------------------------------------------------------------------------------------

    async def create_dataset(
        self,
        name: str,
        *,
        description: str = "",
        embedding: str = "none",
        vector_store: VectorBackend = "sqlite-vec",
        chunk_tokens: int | None = None,
        overlap_tokens: int | None = None,
        separator: str | None = None,
        doc_form: DocForm = "text_model",
        retrieval: RetrievalModel | dict[str, Any] | None = None,
    ) -> Dataset:
        name = name.strip()
        if not name or len(name) > MAX_NAME_CHARS:
            raise ValueError(f"a dataset name is 1 to {MAX_NAME_CHARS} characters")
        spec = parse_embedding_spec(embedding)
        if vector_store not in ("sqlite-vec", "lancedb"):
            raise ValueError(f"vector_store must be sqlite-vec or lancedb, got {vector_store!r}")
        if await self.store.get_dataset(name) is not None:
            raise DatasetExistsError(f"a dataset named {name!r} already exists")
        chunk = chunk_tokens or (MINILM_CHUNK_TOKENS if spec == "minilm" else DEFAULT_CHUNK_TOKENS)
        # The default overlap shrinks with small chunks (it must stay below a chunk).
        overlap = min(DEFAULT_OVERLAP_TOKENS, chunk // 4) if overlap_tokens is None else overlap_tokens
        if chunk < 1 or overlap < 0 or overlap >= chunk:
            raise ValueError("chunk tokens must be at least 1 and the overlap smaller than a chunk")
        default_method: SearchMethod = "keyword_search" if spec == "none" else "semantic_search"
        base = RetrievalModel(search_method=default_method)
        if isinstance(retrieval, RetrievalModel):
            model = retrieval
        else:
            model = RetrievalModel.from_dict(retrieval, base)
        dataset = Dataset(
            id=str(uuid.uuid4()),
            name=name,
            description=description,
            embedding=spec,
            # An endpoint's dimension is learnt from its first answer.
            embedding_dim=MINILM_DIM if spec == "minilm" else None,
            vector_store=vector_store,
            chunk_tokens=chunk,
            overlap_tokens=overlap,
            separator=DEFAULT_SEPARATOR if separator is None else separator,
            doc_form=doc_form,
            retrieval=model,
        )
        return await self.store.create_dataset(dataset)

    async def update_retrieval(self, dataset: Dataset, retrieval: dict[str, Any]) -> Dataset:
        updated = replace(dataset, retrieval=RetrievalModel.from_dict(retrieval, dataset.retrieval))
        await self.store.update_dataset(updated)
        return updated

    async def find_dataset(self, id_or_name: str) -> Dataset | None:
        return await self.store.get_dataset(id_or_name)

    async def get_dataset(self, id_or_name: str) -> Dataset:
        found = await self.store.get_dataset(id_or_name)
        if found is None:
            raise DatasetNotFoundError(f"no dataset named {id_or_name!r}")
        return found

    async def list_datasets(self, keyword: str | None = None) -> list[Dataset]:
        return await self.store.list_datasets(keyword)

    async def delete_dataset(self, dataset: Dataset) -> None:
        await self.store.delete_dataset(dataset)

    # --- documents ------------------------------------------------------------------------------------

    async def queue_document(
        self, dataset: Dataset, name: str, source: str, metadata: dict[str, Any] | None = None
    ) -> Document:
        """A new document row in status ``queued``; :meth:`index` fills it."""
        return await self.store.create_document(dataset.id, name, source, metadata, batch=_batch())

    async def index(
        self,
        dataset: Dataset,
        document: Document,
        source: Source,
        progress: Progress | None = None,
        *,
        rules: dict[str, Any] | None = None,
    ) -> Document:
        """Index a queued document. ``rules`` override the dataset's splitting settings for this
        document only (``chunk_tokens``, ``overlap_tokens``, ``separator``, ``remove_extra_spaces``,
        ``remove_urls_emails``), as a Dify ``process_rule`` does."""
        # Re-read the dataset: an earlier document may have fixed the embedding dimension since.
        current = await self.store.get_dataset(dataset.id) or dataset
        if rules:
            unknown = set(rules) - set(SPLIT_RULES)
            if unknown:
                raise ValueError(f"unknown splitting rule {sorted(unknown)[0]!r}")
            current = replace(current, **rules)
        return await index_document(
            self.store, current, document, source, embedder=self.embedder(current), progress=progress
        )

    async def add_text(
        self,
        dataset: Dataset,
        name: str,
        text: str,
        *,
        metadata: dict[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> Document:
        document = await self.queue_document(dataset, name, "text", metadata)
        return await self.index(dataset, document, Source(kind="text", text=text), progress)

    async def add_bytes(
        self,
        dataset: Dataset,
        name: str,
        data: bytes,
        *,
        mime_type: str | None = None,
        metadata: dict[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> Document:
        kind = kind_of(name, mime_type)
        document = await self.queue_document(dataset, name, kind, metadata)
        return await self.index(dataset, document, Source(kind=kind, data=data), progress)

    async def add_file(
        self,
        dataset: Dataset,
        path: str | Path,
        *,
        name: str | None = None,
        metadata: dict[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> Document:
        file = Path(path)
        kind_of(file.name)  # an unsupported type fails before a document row is made
        data = await run_sync(file.read_bytes)
        return await self.add_bytes(dataset, name or file.name, data, metadata=metadata, progress=progress)

    async def add_qa(
        self,
        dataset: Dataset,
        name: str,
        pairs: Sequence[tuple[str, str]],
        *,
        metadata: dict[str, Any] | None = None,
    ) -> Document:
        document = await self.queue_document(dataset, name, "qa", metadata)
        drafts = tuple(ChunkDraft(q, a) for q, a in pairs)
        return await self.index(dataset, document, Source(kind="qa", pairs=drafts))

    async def list_documents(
        self, dataset: Dataset, keyword: str | None = None, limit: int = -1, offset: int = 0
    ) -> tuple[list[Document], int]:
        return await self.store.list_documents(dataset.id, keyword, limit, offset)

    async def delete_document(self, dataset: Dataset, document_id: str) -> bool:
        return await self.store.delete_document(dataset, document_id)

    async def requeue_document(self, document: Document, name: str, source: str) -> Document:
        """Queue a document again (same id, a new batch) for :meth:`index` from a new source; its
        segments are replaced when that indexing completes."""
        return await self.store.requeue_document(document, name, source, _batch())

    async def rename_document(self, document: Document, name: str) -> Document:
        return await self.store.rename_document(document, name)

    # --- segments -------------------------------------------------------------------------------------

    async def get_segment(self, segment_id: str) -> Segment | None:
        return await self.store.get_segment(segment_id)

    async def add_segments(
        self, dataset: Dataset, document: Document, drafts: Sequence[ChunkDraft]
    ) -> list[Segment]:
        """New segments at the end of a document, embedded as the dataset's are."""
        first = await self.store.next_segment_position(document.id)
        segments = new_segments(dataset, document.id, drafts, first)
        vectors = await self._embed_contents(dataset, [s.content for s in segments])
        return await self.store.add_segments(dataset, segments, vectors)

    async def update_segment(
        self, dataset: Dataset, segment: Segment, content: str, answer: str | None
    ) -> Segment:
        """A segment with new text (embedded again when the dataset has vectors)."""
        changed = replace(segment, content=content, answer=answer, **segment_counts(content, answer))
        vectors = await self._embed_contents(dataset, [content])
        return await self.store.update_segment(dataset, changed, vectors)

    async def delete_segment(self, dataset: Dataset, segment: Segment) -> None:
        await self.store.delete_segment(dataset, segment)

    async def _embed_contents(self, dataset: Dataset, texts: list[str]) -> Vectors | None:
        embedder = self.embedder(dataset)
        if embedder is None or not texts:
            return None
        return await embedder.embed(texts)

    # --- search ---------------------------------------------------------------------------------------

    async def search(
        self,
        dataset: Dataset,
        query: str,
        *,
        method: Literal["keyword", "vector", "semantic", "hybrid"] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
        retrieval: RetrievalModel | None = None,
        metadata_filter: MetadataFilter | None = None,
        count_hits: bool = True,
    ) -> list[Hit]:
        """Search with the dataset's retrieval settings, or ``retrieval``, with these overrides."""
        model = retrieval or dataset.retrieval
        changes: dict[str, Any] = {}
        if method is not None:
            changes["search_method"] = _METHODS[method]
        if top_k is not None:
            changes["top_k"] = top_k
        if score_threshold is not None:
            changes.update(score_threshold_enabled=True, score_threshold=score_threshold)
        model = replace(model, **changes) if changes else model
        return await retrieve(
            self.store,
            dataset,
            query,
            embedder=self.embedder(dataset),
            model=model,
            metadata_filter=metadata_filter,
            count_hits=count_hits,
        )


def _batch() -> str:
    return uuid.uuid4().hex
