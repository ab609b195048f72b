"""Ingesting one document: extract → clean → split (or read Q&A pairs) → embed → store.

The document row exists first with status ``queued``; indexing moves it to ``indexing`` and then to
``completed`` (its segments and vectors stored, older documents of the same name removed, in one
transaction) or to ``error`` with the reason. Extraction and splitting run in a worker thread, and
embedding in batches, so progress can be reported as ``("chunks", total)`` once the text is split and
``("embedded", n)`` after each batch.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from loopwright._threads import run_sync
from loopwright.knowledge.embeddings import Embedder, EmbeddingError
from loopwright.knowledge.entities import ChunkDraft, Dataset, Document, Segment
from loopwright.knowledge.extract import ExtractError, extract_text
from loopwright.knowledge.repo import now
from loopwright.knowledge.split import clean, parse_qa, separators_for, split_text
from loopwright.knowledge.store import KnowledgeStore
from loopwright.knowledge.vectors import Vectors
from loopwright.model.base import estimate_tokens

log = logging.getLogger(__name__)

Progress = Callable[[str, int], None]
MAX_ERROR_CHARS = 500


@dataclass(frozen=True, slots=True)
class Source:
    """What to ingest: file bytes of a ``kind`` (see ``extract.kind_of``), text, or ready Q&A pairs."""

    kind: str = "text"
    data: bytes | None = None
    text: str | None = None
    pairs: tuple[ChunkDraft, ...] | None = None


def prepare(dataset: Dataset, source: Source) -> list[ChunkDraft]:
    """The segments' texts for a source under the dataset's rules (blocking)."""
    if source.pairs is not None:
        return [ChunkDraft(p.content.strip(), (p.answer or "").strip() or None) for p in source.pairs]
    if source.text is not None:
        text = source.text
    elif source.data is not None:
        text = extract_text(source.data, source.kind)
    else:
        raise ExtractError("nothing to ingest")
    if dataset.doc_form == "qa_model":
        pairs = parse_qa(text, csv_format=source.kind == "csv")
        if not pairs:
            raise ExtractError(
                "no question/answer pairs found (expected 'Q: … A: …' blocks or a 2-column CSV)"
            )
        return pairs
    cleaned = clean(
        text, remove_extra_spaces=dataset.remove_extra_spaces, remove_urls_emails=dataset.remove_urls_emails
    )
    chunks = split_text(
        cleaned, dataset.chunk_tokens, dataset.overlap_tokens, separators_for(dataset.separator)
    )
    if not chunks:
        raise ExtractError("no text could be extracted")
    return [ChunkDraft(c) for c in chunks]


async def index_document(
    store: KnowledgeStore,
    dataset: Dataset,
    document: Document,
    source: Source,
    *,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> Document:
    """Index a queued document. Never raises for a bad source or a failing embedder: the document
    ends with status ``error`` and the reason instead."""
    await store.set_status(document.id, "indexing")
    try:
        drafts = await run_sync(prepare, dataset, source)
        if progress:
            progress("chunks", len(drafts))
        vectors: Vectors | None = None
        if embedder is not None and dataset.has_vectors:
            vectors = await _embed(embedder, [d.content for d in drafts], progress)
            if dataset.embedding_dim is None and vectors.shape[0]:
                dataset = replace(dataset, embedding_dim=int(vectors.shape[1]))
                await store.update_dataset(dataset)
        segments = new_segments(dataset, document.id, drafts)
        return await store.complete_document(
            dataset,
            document,
            segments,
            vectors,
            word_count=sum(s.word_count for s in segments),
            tokens=sum(s.tokens for s in segments),
        )
    except Exception as exc:  # a bad file or a failing endpoint must end as a status, not a crash
        reason = " ".join(str(exc).split())[:MAX_ERROR_CHARS] or type(exc).__name__
        if not isinstance(exc, ExtractError | ValueError | EmbeddingError):  # these say it all
            log.warning("indexing %s failed: %s", document.name, reason, exc_info=True)
        await store.set_status(document.id, "error", reason)
        found = await store.get_document(document.id)
        return found if found is not None else replace(document, status="error", error=reason)


async def _embed(embedder: Embedder, texts: list[str], progress: Progress | None) -> Vectors:
    parts: list[Vectors] = []
    size = max(1, embedder.batch_size)
    for start in range(0, len(texts), size):
        batch = texts[start : start + size]
        parts.append(await embedder.embed(batch))
        if progress:
            progress("embedded", len(batch))
    return np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)


def new_segments(
    dataset: Dataset, document_id: str, drafts: Sequence[ChunkDraft], first_position: int = 1
) -> list[Segment]:
    """Segments (not stored yet) of a document from their texts, numbered from ``first_position``."""
    stamp = now()
    out: list[Segment] = []
    for i, d in enumerate(drafts, first_position):
        out.append(
            Segment(
                id=str(uuid.uuid4()),
                dataset_id=dataset.id,
                document_id=document_id,
                position=i,
                content=d.content,
                answer=d.answer,
                created_at=stamp,
                **segment_counts(d.content, d.answer),
            )
        )
    return out


def segment_counts(content: str, answer: str | None) -> dict[str, Any]:
    """A segment's ``word_count`` (characters, as Dify counts), ``tokens`` and ``hash``."""
    text = content + (answer or "")
    return {
        "word_count": len(text),
        "tokens": estimate_tokens(text),
        "hash": hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }
