"""retrieve() step by step against a recording store: which documents are searched, how wide the
candidate pool is, how scores combine and rank, and what is looked up and counted. No database and
no embedding model: the store and the embedder answer from tables."""

from __future__ import annotations

from typing import Any, cast

import pytest

from loopwright.knowledge import Dataset, MetadataFilter, RetrievalModel
from loopwright.knowledge.entities import Document, Segment
from loopwright.knowledge.retrieve import retrieve
from loopwright.knowledge.store import KnowledgeStore


def doc(i: str, **meta: Any) -> Document:
    return Document(id=i, dataset_id="ds", name=f"{i}.txt", position=0, status="completed", metadata=meta)


def seg(seq: int, document_id: str) -> Segment:
    return Segment(
        id=f"s{seq}", dataset_id="ds", document_id=document_id, position=seq, content=f"c{seq}", seq=seq
    )


class Store:
    def __init__(
        self,
        keyword: dict[int, float],
        vector: dict[int, float],
        *,
        hidden: set[str] | None = None,
        missing: set[int] | None = None,
    ) -> None:
        self.keyword, self.vector = keyword, vector
        self.hidden = hidden or set()
        self.missing = missing or set()
        self.docs = {"a": doc("a", kind="x"), "b": doc("b", kind="y"), "h": doc("h", kind="x")}
        self.segments = {1: seg(1, "a"), 2: seg(2, "b"), 3: seg(3, "a"), 4: seg(4, "gone"), 5: seg(5, "b")}
        self.calls: list[tuple[Any, ...]] = []

    async def hidden_documents(self, dataset_id: str) -> set[str]:
        self.calls.append(("hidden", dataset_id))
        return self.hidden

    async def completed_documents(self, dataset_id: str) -> list[Document]:
        self.calls.append(("completed", dataset_id))
        return list(self.docs.values())

    async def keyword_search(self, dataset_id: str, query: str, k: int, ids: set[str] | None) -> list[Any]:
        self.calls.append(("keyword", query, k, ids))
        return list(self.keyword.items())

    async def vector_search(
        self, dataset: Dataset, vector: list[float], k: int, ids: set[str] | None
    ) -> list[Any]:
        self.calls.append(("vector", vector, k, ids))
        return list(self.vector.items())

    async def segments_by_seq(self, seqs: list[int]) -> dict[int, Segment]:
        self.calls.append(("segments", seqs))
        return {s: self.segments[s] for s in seqs if s in self.segments and s not in self.missing}

    async def documents_by_ids(self, ids: set[str]) -> dict[str, Document]:
        self.calls.append(("documents", ids))
        return {i: self.docs[i] for i in ids if i in self.docs}

    async def count_hits(self, seqs: list[int]) -> None:
        self.calls.append(("count", seqs))


class Embed:
    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(t))] for t in texts]


VECTORS = Dataset(id="ds", name="d", embedding="minilm", embedding_dim=1)
ECONOMY = Dataset(id="ds", name="d")


async def run(store: Store, dataset: Dataset = VECTORS, query: str = "q", **kw: Any) -> list[Any]:
    kw.setdefault("embedder", Embed())
    hits = await retrieve(cast(KnowledgeStore, store), dataset, query, **kw)
    return [(h.segment.seq, h.document_name, h.score, h.keyword_score, h.vector_score) for h in hits]


async def test_nothing_to_search_asks_nothing() -> None:
    store = Store({1: 1.0}, {1: 1.0})
    assert await run(store, query="  ") == []
    assert await run(store, model=RetrievalModel(top_k=0)) == []
    assert store.calls == []


async def test_hybrid_widens_the_pool_weighs_ranks_and_counts() -> None:
    store = Store({1: 0.9, 2: 0.5, 4: 0.99}, {2: 1.0, 3: 0.2, 5: 0.3}, missing={5})
    model = RetrievalModel(search_method="hybrid_search", top_k=4, vector_weight=3, keyword_weight=1)
    hits = await run(store, model=model)
    # 4's document is gone and 5's segment is: both dropped after the top-k cut.
    assert hits == [(2, "b.txt", 0.875, 0.5, 1.0), (1, "a.txt", 0.225, 0.9, None)]
    assert store.calls == [
        ("hidden", "ds"),
        ("keyword", "q", 20, None),
        ("vector", [1.0], 20, None),
        ("segments", [2, 4, 1, 5]),
        ("documents", {"a", "b", "gone"}),
        ("count", [2, 1]),
    ]


async def test_hybrid_weights_of_zero_count_equally_and_a_wide_top_k_widens_the_pool() -> None:
    store = Store({1: 0.4}, {1: 0.8})
    model = RetrievalModel(search_method="hybrid_search", top_k=10, vector_weight=0, keyword_weight=0)
    assert await run(store, model=model) == [(1, "a.txt", 0.6, 0.4, 0.8)]
    assert store.calls[1] == ("keyword", "q", 30, None)


@pytest.mark.parametrize(
    ("dataset", "model", "embedder", "searches"),
    [
        (VECTORS, RetrievalModel(top_k=2), True, ["vector"]),
        (VECTORS, RetrievalModel(search_method="full_text_search", top_k=2), True, ["keyword"]),
        (ECONOMY, RetrievalModel(top_k=2), True, ["keyword"]),  # no embeddings: always keywords
        (VECTORS, RetrievalModel(top_k=2), False, ["keyword"]),  # no embedder either
    ],
)
async def test_the_method_decides_the_searches(
    dataset: Dataset, model: RetrievalModel, embedder: bool, searches: list[str]
) -> None:
    store = Store({1: 0.3, 3: 0.3, 2: 0.1}, {3: 0.7, 1: 0.7, 2: 0.1})
    hits = await run(store, dataset, model=model, embedder=Embed() if embedder else None)
    assert [c[0] for c in store.calls if c[0] in ("keyword", "vector")] == searches
    assert all(c[2] == 2 for c in store.calls if c[0] in ("keyword", "vector"))
    # Equal scores rank by row number; top_k cuts.
    assert [h[0] for h in hits] == [1, 3]


async def test_threshold_and_count_hits() -> None:
    store = Store({1: 0.5, 2: 0.49}, {})
    model = RetrievalModel(
        search_method="keyword_search", top_k=5, score_threshold_enabled=True, score_threshold=0.5
    )
    assert await run(store, model=model, count_hits=False) == [(1, "a.txt", 0.5, 0.5, None)]
    assert not any(c[0] == "count" for c in store.calls)
    store = Store({1: 0.1}, {})
    model = RetrievalModel(
        search_method="keyword_search", top_k=5, score_threshold_enabled=True, score_threshold=0.5
    )
    assert await run(store, model=model) == []
    assert [c[0] for c in store.calls] == ["hidden", "keyword"]  # nothing ranked: nothing looked up


async def test_missing_segments_only_leave_nothing_to_count() -> None:
    store = Store({4: 0.5}, {})
    assert await run(store, model=RetrievalModel(search_method="keyword_search")) == []
    assert [c[0] for c in store.calls] == ["hidden", "keyword", "segments", "documents"]


async def test_hidden_documents_and_metadata_filters_narrow_the_search() -> None:
    store = Store({1: 0.5}, {}, hidden={"h"})
    keyword = RetrievalModel(search_method="keyword_search")
    await run(store, model=keyword)
    assert ("keyword", "q", 2, {"a", "b"}) in store.calls
    store = Store({1: 0.5}, {})
    only_x = MetadataFilter.from_dict(
        {"conditions": [{"name": "kind", "comparison_operator": "is", "value": "x"}]}
    )
    await run(store, model=keyword, metadata_filter=only_x)
    assert ("keyword", "q", 2, {"a", "h"}) in store.calls
    store = Store({1: 0.5}, {}, hidden={"a", "h"})
    assert await run(store, model=keyword, metadata_filter=only_x) == []
    assert [c[0] for c in store.calls] == ["hidden", "completed"]  # no document left: no search
    store = Store({1: 0.5}, {}, hidden={"a", "b", "h"})
    assert await run(store, model=keyword) == []
    assert [c[0] for c in store.calls] == ["hidden", "completed"]
