"""Retrieval settings: methods, top-k, score threshold, hybrid weights, metadata filters."""

from __future__ import annotations

import pytest

from loopwright.knowledge import Dataset, KnowledgeBase, MetadataFilter, MiniLMEmbedder, RetrievalModel

DOCS = {
    "cats.txt": (
        "Cats sleep for most of the day and purr when they are content.",
        {"animal": "cat", "year": 2021},
    ),
    "dogs.txt": ("Dogs need a walk twice a day and love to fetch sticks.", {"animal": "dog", "year": 2023}),
    "fish.txt": (
        "Goldfish live in a tank and need clean water every week.",
        {"animal": "fish", "year": 2024},
    ),
}


async def _dataset(kb: KnowledgeBase, embedding: str = "minilm") -> Dataset:
    ds = await kb.create_dataset("pets", embedding=embedding)
    for name, (text, meta) in DOCS.items():
        doc = await kb.add_text(ds, name, text, metadata=meta)
        assert doc.status == "completed", doc.error
    return await kb.get_dataset(ds.id)


async def test_vector_search_understands_paraphrase(kb: KnowledgeBase, minilm: MiniLMEmbedder) -> None:
    ds = await _dataset(kb)
    hits = await kb.search(ds, "which pet has to be taken outside for exercise", method="vector", top_k=1)
    assert hits[0].document_name == "dogs.txt" and hits[0].score == pytest.approx(
        hits[0].vector_score, abs=1e-5
    )
    assert await kb.search(ds, "which pet has to be taken outside", method="keyword") == []


async def test_hybrid_weights_decide_between_the_two_scores(
    kb: KnowledgeBase, minilm: MiniLMEmbedder
) -> None:
    ds = await _dataset(kb)
    query = "water for the cat"
    keyword_only = RetrievalModel(
        search_method="hybrid_search", top_k=3, vector_weight=0.0, keyword_weight=1.0
    )
    hits = await kb.search(ds, query, retrieval=keyword_only)
    assert all(h.score == pytest.approx(h.keyword_score or 0.0, abs=1e-5) for h in hits)
    balanced = await kb.search(ds, query, method="hybrid", top_k=3)
    for h in balanced:
        expected = 0.7 * (h.vector_score or 0.0) + 0.3 * (h.keyword_score or 0.0)
        assert h.score == pytest.approx(expected, abs=1e-5)


async def test_top_k_and_threshold(kb: KnowledgeBase, minilm: MiniLMEmbedder) -> None:
    ds = await _dataset(kb)
    assert len(await kb.search(ds, "pets", method="vector", top_k=3)) == 3
    assert len(await kb.search(ds, "pets", method="vector", top_k=1)) == 1
    all_hits = await kb.search(ds, "goldfish tank", method="vector", top_k=3)
    cut = (all_hits[0].score + all_hits[1].score) / 2
    kept = await kb.search(ds, "goldfish tank", method="vector", top_k=3, score_threshold=cut)
    assert [h.document_name for h in kept] == ["fish.txt"]
    ds = await kb.update_retrieval(ds, {"score_threshold_enabled": True, "score_threshold": 0.99, "top_k": 3})
    assert await kb.search(ds, "goldfish tank", method="vector") == []


async def test_metadata_filters(kb: KnowledgeBase, minilm: MiniLMEmbedder) -> None:
    ds = await _dataset(kb)
    only_cats = MetadataFilter.from_dict(
        {"conditions": [{"name": "animal", "comparison_operator": "is", "value": "cat"}]}
    )
    for method in ("keyword", "vector", "hybrid"):
        hits = await kb.search(ds, "day", method=method, top_k=3, metadata_filter=only_cats)  # type: ignore[arg-type]
        assert [h.document_name for h in hits] == ["cats.txt"], method
    recent = MetadataFilter.from_dict(
        {
            "logical_operator": "or",
            "conditions": [
                {"name": "year", "comparison_operator": "≥", "value": 2024},
                {"name": "document_name", "comparison_operator": "start with", "value": "cat"},
            ],
        }
    )
    hits = await kb.search(ds, "pets", method="vector", top_k=3, metadata_filter=recent)
    assert {h.document_name for h in hits} == {"cats.txt", "fish.txt"}
    nobody = MetadataFilter.from_dict(
        {"conditions": [{"name": "animal", "comparison_operator": "is", "value": "cow"}]}
    )
    assert await kb.search(ds, "day", method="hybrid", metadata_filter=nobody) == []
    with pytest.raises(ValueError):
        MetadataFilter.from_dict({"conditions": [{"name": "x", "comparison_operator": "like", "value": 1}]})


async def test_a_dataset_without_embeddings_always_searches_keywords(kb: KnowledgeBase) -> None:
    ds = await _dataset(kb, embedding="none")
    hits = await kb.search(ds, "goldfish", method="vector")
    assert hits and hits[0].document_name == "fish.txt" and hits[0].vector_score is None


def test_retrieval_model_reads_and_writes_difys_shape() -> None:
    model = RetrievalModel.from_dict(
        {
            "search_method": "hybrid_search",
            "top_k": 4,
            "score_threshold_enabled": True,
            "score_threshold": 0.5,
            "weights": {"vector_setting": {"vector_weight": 0.6}, "keyword_setting": {"keyword_weight": 0.4}},
        }
    )
    assert (model.method, model.top_k, model.threshold, model.vector_weight) == ("hybrid", 4, 0.5, 0.6)
    again = RetrievalModel.from_dict(model.to_dict())
    assert again == model
    with pytest.raises(ValueError):
        RetrievalModel.from_dict({"search_method": "magic"})
    assert RetrievalModel().to_dict()["top_k"] == 2
