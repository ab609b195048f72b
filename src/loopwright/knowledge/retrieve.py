"""Retrieval: keyword (BM25), vector (cosine) or hybrid (weighted sum), then threshold and top-k.

Scores are all 0..1 (keyword scores are normalised, see ``keyword.py``), so a threshold and the hybrid
weights mean the same for every method. Hybrid search takes a wider candidate pool from both indexes
and scores each candidate ``vector_weight · vector + keyword_weight · keyword`` (Dify's weighted
score), a side that did not return a candidate counting 0. A dataset without embeddings always uses
keyword search (as Dify's economy datasets do).
"""

from __future__ import annotations

from typing import Literal

from loopwright.knowledge.embeddings import Embedder
from loopwright.knowledge.entities import Dataset, Hit, RetrievalModel
from loopwright.knowledge.filters import MetadataFilter
from loopwright.knowledge.store import KnowledgeStore

Method = Literal["keyword", "vector", "hybrid"]
HYBRID_POOL_FACTOR = 3
HYBRID_MIN_POOL = 20


def effective_method(dataset: Dataset, model: RetrievalModel, embedder: Embedder | None) -> Method:
    if embedder is None or not dataset.has_vectors or not dataset.embedding_dim:
        return "keyword"
    return model.method


async def retrieve(
    store: KnowledgeStore,
    dataset: Dataset,
    query: str,
    *,
    embedder: Embedder | None,
    model: RetrievalModel | None = None,
    metadata_filter: MetadataFilter | None = None,
    count_hits: bool = True,
) -> list[Hit]:
    """The best segments for ``query``, best first, at most ``top_k``, none under the threshold."""
    model = model or dataset.retrieval
    if not query.strip() or model.top_k <= 0:
        return []
    document_ids = await _searchable_documents(store, dataset.id, metadata_filter)
    if document_ids is not None and not document_ids:
        return []  # every document is hidden or filtered out
    method = effective_method(dataset, model, embedder)
    # Hybrid search ranks the union of both sides: each side is asked for more than top_k.
    pool = model.top_k if method != "hybrid" else max(model.top_k * HYBRID_POOL_FACTOR, HYBRID_MIN_POOL)
    keyword, vector = await _search(store, dataset, query, method, embedder, pool, document_ids)
    ranked = _rank(_combine(method, keyword, vector, model), model)
    if not ranked:
        return []
    hits = await _hits(store, ranked, keyword, vector)
    if count_hits and hits:
        await store.count_hits([h.segment.seq for h in hits])
    return hits


async def _searchable_documents(
    store: KnowledgeStore, dataset_id: str, metadata_filter: MetadataFilter | None
) -> set[str] | None:
    """The documents a search may return, or None for all of them (no filter, nothing hidden):
    both indexes search faster without a list of ids."""
    hidden = await store.hidden_documents(dataset_id)  # disabled or archived: never retrieved
    if metadata_filter is None and not hidden:
        return None
    completed = [d for d in await store.completed_documents(dataset_id) if d.id not in hidden]
    return metadata_filter.allowed(completed) if metadata_filter else {d.id for d in completed}


async def _search(
    store: KnowledgeStore,
    dataset: Dataset,
    query: str,
    method: Method,
    embedder: Embedder | None,
    pool: int,
    document_ids: set[str] | None,
) -> tuple[dict[int, float], dict[int, float]]:
    """Keyword and vector scores by segment row; a side the method does not use is empty."""
    keyword: dict[int, float] = {}
    vector: dict[int, float] = {}
    if method in ("keyword", "hybrid"):
        keyword = dict(await store.keyword_search(dataset.id, query, pool, document_ids))
    if method in ("vector", "hybrid"):
        assert embedder is not None  # effective_method chose keywords without one
        query_vector = (await embedder.embed([query]))[0]
        vector = dict(await store.vector_search(dataset, query_vector, pool, document_ids))
    return keyword, vector


def _rank(scores: dict[int, float], model: RetrievalModel) -> list[tuple[float, int]]:
    """(score, row) best first, at most top_k, none under the threshold; equal scores by row, so a
    ranking is repeatable."""
    threshold = model.threshold
    ranked = sorted(((s, seq) for seq, s in scores.items() if s >= threshold), key=lambda x: (-x[0], x[1]))
    return ranked[: model.top_k]


async def _hits(
    store: KnowledgeStore,
    ranked: list[tuple[float, int]],
    keyword: dict[int, float],
    vector: dict[int, float],
) -> list[Hit]:
    segments = await store.segments_by_seq([seq for _, seq in ranked])
    documents = await store.documents_by_ids({s.document_id for s in segments.values()})
    hits: list[Hit] = []
    for score, seq in ranked:
        segment = segments.get(seq)
        document = documents.get(segment.document_id) if segment else None
        if segment is None or document is None:
            continue  # deleted between search and lookup
        hits.append(
            Hit(
                segment=segment,
                document_name=document.name,
                score=round(score, 6),
                keyword_score=keyword.get(seq),
                vector_score=vector.get(seq),
                document_metadata=dict(document.metadata),
            )
        )
    return hits


def _combine(
    method: Method, keyword: dict[int, float], vector: dict[int, float], model: RetrievalModel
) -> dict[int, float]:
    if method == "keyword":
        return keyword
    if method == "vector":
        return vector
    total = model.vector_weight + model.keyword_weight
    vw, kw = (model.vector_weight / total, model.keyword_weight / total) if total > 0 else (0.5, 0.5)
    return {seq: vw * vector.get(seq, 0.0) + kw * keyword.get(seq, 0.0) for seq in set(keyword) | set(vector)}
