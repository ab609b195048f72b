"""``KnowledgeStore``: the knowledge tables and indexes behind an async API.

Every SQLite (and LanceDB) call runs in one dedicated worker thread that owns one connection. A
SQLite connection may not cross threads, and SQLite takes one writer at a time anyway, so a single
owner thread serialises writes without locks, keeps sqlite-vec loaded and the statement cache warm on
one connection, and leaves the event loop free. Heavy work that needs no connection (reading files,
splitting, embedding) happens elsewhere, so the thread is only busy for the SQL itself: queries stay
in the millisecond range while a large document is being embedded.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from loopwright.knowledge import repo
from loopwright.knowledge.connection import connect
from loopwright.knowledge.entities import Dataset, Document, DocumentStatus, Segment, Tag
from loopwright.knowledge.keyword import KeywordIndex
from loopwright.knowledge.schema import ensure_schema, transaction
from loopwright.knowledge.vectors import LanceVectorStore, SqliteVecStore, Vectors, VectorStore

T = TypeVar("T")
# edit(dataset, its documents) -> (the dataset to save or None, {document id: metadata}, a result)
MetadataEdit = Callable[[Dataset, list[Document]], tuple[Dataset | None, dict[str, dict[str, Any]], T]]


class KnowledgeStore:
    """The knowledge tables in the SQLite file at ``path`` (``":memory:"`` for a throwaway one).
    LanceDB datasets keep their vectors in ``lance_dir`` (default: ``<file stem>-lancedb`` beside it)."""

    def __init__(self, path: str | Path, *, lance_dir: str | Path | None = None) -> None:
        self.path = str(path)
        if lance_dir is None:
            base = Path(self.path) if self.path != ":memory:" else Path(".")
            lance_dir = base.with_name(f"{base.stem or 'knowledge'}-lancedb")
        self.lance_dir = Path(lance_dir)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="loopwright-kb")
        self._conn: Any = None
        self._keyword: KeywordIndex | None = None
        self._vectors: dict[str, VectorStore] = {}
        self._closed = False

    # --- the worker thread ----------------------------------------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise RuntimeError("the knowledge store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(self._in_thread, fn, *args))

    def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        if self._conn is None:
            conn = connect(self.path)
            ensure_schema(conn)
            self._conn = conn
            self._keyword = KeywordIndex(conn)
        return fn(*args)

    async def close(self) -> None:
        if self._closed:
            return
        await self._call(self._close_in_thread)
        self._closed = True
        self._executor.shutdown(wait=True)

    def _close_in_thread(self) -> None:
        self._vectors.clear()
        self._keyword = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _vector_store(self, dataset: Dataset) -> VectorStore | None:
        if not dataset.has_vectors or not dataset.embedding_dim:
            return None
        store = self._vectors.get(dataset.id)
        if store is None:
            if dataset.vector_store == "lancedb":
                store = LanceVectorStore(self.lance_dir, dataset.id, dataset.embedding_dim)
            else:
                store = SqliteVecStore(self._conn, dataset.id, dataset.embedding_dim)
            self._vectors[dataset.id] = store
        return store

    # --- datasets -------------------------------------------------------------------------------------

    async def create_dataset(self, dataset: Dataset) -> Dataset:
        return await self._call(lambda: repo.insert_dataset(self._conn, dataset))

    async def update_dataset(self, dataset: Dataset) -> None:
        def run() -> None:
            repo.update_dataset(self._conn, dataset)
            self._vectors.pop(dataset.id, None)  # the dimension may have been set just now

        await self._call(run)

    async def get_dataset(self, id_or_name: str) -> Dataset | None:
        return await self._call(lambda: repo.get_dataset(self._conn, id_or_name))

    async def list_datasets(self, keyword: str | None = None) -> list[Dataset]:
        return await self._call(lambda: repo.list_datasets(self._conn, keyword))

    async def delete_dataset(self, dataset: Dataset) -> None:
        def run() -> None:
            store = self._vector_store(dataset)
            repo.delete_dataset_rows(self._conn, dataset.id)
            if store is not None:
                store.drop()
            self._vectors.pop(dataset.id, None)
            assert self._keyword is not None
            self._keyword.invalidate()

        await self._call(run)

    # --- documents ------------------------------------------------------------------------------------

    async def create_document(
        self, dataset_id: str, name: str, source: str, metadata: dict[str, Any] | None = None, batch: str = ""
    ) -> Document:
        return await self._call(
            lambda: repo.insert_document(self._conn, dataset_id, name, source, dict(metadata or {}), batch)
        )

    async def set_status(self, document_id: str, status: DocumentStatus, error: str | None = None) -> None:
        await self._call(lambda: repo.set_status(self._conn, document_id, status, error))

    async def get_document(self, document_id: str) -> Document | None:
        return await self._call(lambda: repo.get_document(self._conn, document_id))

    async def list_documents(
        self, dataset_id: str, keyword: str | None = None, limit: int = -1, offset: int = 0
    ) -> tuple[list[Document], int]:
        return await self._call(lambda: repo.list_documents(self._conn, dataset_id, keyword, limit, offset))

    async def documents_by_ids(self, ids: Collection[str]) -> dict[str, Document]:
        return await self._call(lambda: repo.documents_by_ids(self._conn, ids))

    async def completed_documents(self, dataset_id: str) -> list[Document]:
        return await self._call(lambda: repo.completed_documents(self._conn, dataset_id))

    async def complete_document(
        self,
        dataset: Dataset,
        document: Document,
        segments: Sequence[Segment],
        vectors: Vectors | None,
        *,
        word_count: int,
        tokens: int,
    ) -> Document:
        """Store a document's segments (and vectors), mark it completed and remove the documents it
        replaces (same name), all in one transaction: searches see the old version or the new one."""

        def run() -> Document:
            conn = self._conn
            store = self._vector_store(dataset)
            with transaction(conn):
                old = repo.superseded_documents(conn, document)
                if old and store is not None:
                    marks = ",".join("?" * len(old))
                    store.delete(repo.segment_seqs(conn, f"document_id IN ({marks})", old))
                repo.delete_documents_rows(conn, old)
                # A document indexed again (updated by text or file) drops its own earlier segments.
                own = repo.segment_seqs(conn, "document_id = ?", (document.id,))
                if own and store is not None:
                    store.delete(own)
                repo.delete_segment_rows(conn, own)
                seqs = repo.insert_segments(conn, segments)
                if store is not None and vectors is not None and len(seqs):
                    store.add(seqs, vectors, [document.id] * len(seqs))
                conn.execute(
                    "UPDATE kb_documents SET status = 'completed', error = NULL, word_count = ?, tokens = ?, "
                    "segment_count = ?, updated_at = ?, completed_at = ? WHERE id = ?",
                    (word_count, tokens, len(seqs), repo.now(), repo.now(), document.id),
                )
            assert self._keyword is not None
            self._keyword.invalidate()
            found = repo.get_document(conn, document.id)
            assert found is not None
            return found

        return await self._call(run)

    async def delete_document(self, dataset: Dataset, document_id: str) -> bool:
        def run() -> bool:
            conn = self._conn
            if repo.get_document(conn, document_id) is None:
                return False
            store = self._vector_store(dataset)
            with transaction(conn):
                if store is not None:
                    store.delete(repo.segment_seqs(conn, "document_id = ?", (document_id,)))
                repo.delete_documents_rows(conn, [document_id])
            assert self._keyword is not None
            self._keyword.invalidate()
            return True

        return await self._call(run)

    async def requeue_document(self, document: Document, name: str, source: str, batch: str) -> Document:
        def run() -> Document:
            repo.requeue_document(self._conn, document.id, name, source, batch)
            found = repo.get_document(self._conn, document.id)
            assert found is not None
            return found

        return await self._call(run)

    async def set_document_flags(self, document_ids: Sequence[str], **flags: bool) -> None:
        await self._call(lambda: repo.set_document_flags(self._conn, document_ids, **flags))

    async def hidden_documents(self, dataset_id: str) -> set[str]:
        return await self._call(lambda: repo.hidden_documents(self._conn, dataset_id))

    async def rename_document(self, document: Document, name: str) -> Document:
        def run() -> Document:
            repo.rename_document(self._conn, document.id, name)
            found = repo.get_document(self._conn, document.id)
            assert found is not None
            return found

        return await self._call(run)

    async def edit_metadata(self, dataset_id: str, edit: MetadataEdit[T]) -> T:
        """Run ``edit(dataset, documents)`` and store what it changed, in one transaction on the store's
        thread, so concurrent edits of a dataset's metadata cannot lose one another. ``edit`` returns
        ``(dataset to save or None, {document id: its whole metadata}, result)``; what it raises
        propagates and nothing is written."""

        def run() -> T:
            conn = self._conn
            with transaction(conn):
                dataset = repo.get_dataset(conn, dataset_id)
                if dataset is None:
                    raise LookupError(dataset_id)
                documents, _ = repo.list_documents(conn, dataset_id)
                changed, metadata, result = edit(dataset, documents)
                if changed is not None:
                    conn.execute(
                        "UPDATE kb_datasets SET settings = ?, updated_at = ? WHERE id = ?",
                        (json.dumps(changed.settings_dict()), repo.now(), dataset_id),
                    )
                repo.set_document_metadata(conn, metadata)
            return result

        return await self._call(run)

    # --- segment edits --------------------------------------------------------------------------------

    async def get_segment(self, segment_id: str) -> Segment | None:
        return await self._call(lambda: repo.get_segment(self._conn, segment_id))

    async def next_segment_position(self, document_id: str) -> int:
        return await self._call(lambda: repo.next_segment_position(self._conn, document_id))

    async def add_segments(
        self, dataset: Dataset, segments: Sequence[Segment], vectors: Vectors | None
    ) -> list[Segment]:
        """Store new segments of one document (and their vectors) and update its counts."""

        def run() -> list[Segment]:
            conn = self._conn
            store = self._vector_store(dataset)
            with transaction(conn):
                seqs = repo.insert_segments(conn, segments)
                if store is not None and vectors is not None and seqs:
                    store.add(seqs, vectors, [s.document_id for s in segments])
                for document_id in {s.document_id for s in segments}:
                    repo.refresh_document_counts(conn, document_id)
            self._invalidate_keywords()
            stored = repo.segments_by_seq(conn, seqs)
            return [stored[q] for q in seqs]

        return await self._call(run)

    async def update_segment(self, dataset: Dataset, segment: Segment, vector: Vectors | None) -> Segment:
        """Write a segment's new text (``segment.seq`` names the row) and its new vector."""

        def run() -> Segment:
            conn = self._conn
            store = self._vector_store(dataset)
            with transaction(conn):
                repo.update_segment_row(conn, segment)
                if store is not None and vector is not None:
                    store.delete([segment.seq])
                    store.add([segment.seq], vector, [segment.document_id])
                repo.refresh_document_counts(conn, segment.document_id)
            self._invalidate_keywords()
            found = repo.get_segment(conn, segment.id)
            assert found is not None
            return found

        return await self._call(run)

    async def delete_segment(self, dataset: Dataset, segment: Segment) -> None:
        def run() -> None:
            conn = self._conn
            store = self._vector_store(dataset)
            with transaction(conn):
                if store is not None:
                    store.delete([segment.seq])
                repo.delete_segment_rows(conn, [segment.seq])
                repo.refresh_document_counts(conn, segment.document_id)
            self._invalidate_keywords()

        await self._call(run)

    def _invalidate_keywords(self) -> None:
        assert self._keyword is not None
        self._keyword.invalidate()

    # --- segments and search --------------------------------------------------------------------------

    async def list_segments(self, document_id: str) -> list[Segment]:
        return await self._call(lambda: repo.list_segments(self._conn, document_id))

    async def segments_by_seq(self, seqs: Sequence[int]) -> dict[int, Segment]:
        return await self._call(lambda: repo.segments_by_seq(self._conn, seqs))

    async def count_segments(self, dataset_id: str) -> int:
        return await self._call(lambda: repo.count_segments(self._conn, dataset_id))

    async def keyword_search(
        self, dataset_id: str, query: str, k: int, document_ids: Collection[str] | None = None
    ) -> list[tuple[int, float]]:
        def run() -> list[tuple[int, float]]:
            assert self._keyword is not None
            return self._keyword.search(dataset_id, query, k, document_ids)

        return await self._call(run)

    async def vector_search(
        self, dataset: Dataset, vector: Vectors, k: int, document_ids: Collection[str] | None = None
    ) -> list[tuple[int, float]]:
        def run() -> list[tuple[int, float]]:
            store = self._vector_store(dataset)
            return [] if store is None else store.search(vector, k, document_ids)

        return await self._call(run)

    async def count_hits(self, seqs: Sequence[int]) -> None:
        await self._call(lambda: repo.count_hits(self._conn, seqs))

    # --- tags -----------------------------------------------------------------------------------------

    async def list_tags(self) -> list[Tag]:
        return await self._call(lambda: repo.list_tags(self._conn))

    async def get_tag(self, tag_id: str) -> Tag | None:
        return await self._call(lambda: repo.get_tag(self._conn, tag_id))

    async def tag_named(self, name: str) -> Tag | None:
        return await self._call(lambda: repo.tag_named(self._conn, name))

    async def create_tag(self, name: str) -> Tag:
        return await self._call(lambda: repo.insert_tag(self._conn, name))

    async def rename_tag(self, tag_id: str, name: str) -> None:
        await self._call(lambda: repo.rename_tag(self._conn, tag_id, name))

    async def delete_tag(self, tag_id: str) -> None:
        await self._call(lambda: repo.delete_tag(self._conn, tag_id))

    async def bind_tags(self, tag_ids: Sequence[str], dataset_id: str, *, bound: bool) -> None:
        await self._call(lambda: repo.bind_tags(self._conn, tag_ids, dataset_id, bound=bound))

    async def tags_of_datasets(self, dataset_ids: Sequence[str]) -> dict[str, list[Tag]]:
        return await self._call(lambda: repo.tags_of_datasets(self._conn, dataset_ids))

    async def datasets_with_tags(self, tag_ids: Sequence[str]) -> set[str]:
        return await self._call(lambda: repo.datasets_with_tags(self._conn, tag_ids))

    # --- dataset API keys -----------------------------------------------------------------------------

    async def create_api_key(self) -> str:
        return await self._call(lambda: repo.create_api_key(self._conn))

    async def check_api_key(self, token: str) -> bool:
        return await self._call(lambda: repo.check_api_key(self._conn, token))
