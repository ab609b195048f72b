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
    document_ids: set[str] | None = None
    hidden = await store.hidden_documents(dataset.id)  # disabled or archived: never retrieved
    if metadata_filter is not None or hidden:
        completed = [d for d in await store.completed_documents(dataset.id) if d.id not in hidden]
        document_ids = metadata_filter.allowed(completed) if metadata_filter else {d.id for d in completed}
        if not document_ids:
            return []
    method = effective_method(dataset, model, embedder)
    pool = model.top_k if method != "hybrid" else max(model.top_k * HYBRID_POOL_FACTOR, HYBRID_MIN_POOL)
    keyword: dict[int, float] = {}
    vector: dict[int, float] = {}
    if method in ("keyword", "hybrid"):
        keyword = dict(await store.keyword_search(dataset.id, query, pool, document_ids))
    if method in ("vector", "hybrid"):
        assert embedder is not None
        query_vector = (await embedder.embed([query]))[0]
        vector = dict(await store.vector_search(dataset, query_vector, pool, document_ids))
    scores = _combine(method, keyword, vector, model)
    threshold = model.threshold
    ranked = sorted(((s, seq) for seq, s in scores.items() if s >= threshold), key=lambda x: (-x[0], x[1]))
    ranked = ranked[: model.top_k]
    if not ranked:
        return []
    seqs = [seq for _, seq in ranked]
    segments = await store.segments_by_seq(seqs)
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
    if count_hits and hits:
        await store.count_hits([h.segment.seq for h in hits])
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
