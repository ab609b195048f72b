"""Retrieval quality on a small corpus written for the tests: recall@3 of keyword, vector and hybrid.

47 questions, each with the phrase its answer segment contains. The figures are printed (``-s``) and
recorded in docs/knowledge.md; the floors below are deliberately modest so that a regression fails
while small changes in tokenisation or model versions do not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopwright.knowledge import Dataset, KnowledgeBase, MiniLMEmbedder
from tests.knowledge.conftest import FIXTURES

FLOORS = {"keyword": 0.70, "vector": 0.80, "hybrid": 0.85}


async def recall_at_3(kb: KnowledgeBase, dataset: Dataset, method: str) -> float:
    questions = json.loads((FIXTURES / "questions.json").read_text(encoding="utf-8"))
    found = 0
    for item in questions:
        hits = await kb.search(dataset, item["q"], method=method, top_k=3, count_hits=False)  # type: ignore[arg-type]
        found += any(item["answer"] in h.segment.content for h in hits)
    return found / len(questions)


@pytest.mark.parametrize("backend", ["sqlite-vec", "lancedb"])
async def test_recall_at_3(minilm: MiniLMEmbedder, tmp_path: Path, backend: str) -> None:
    kb = KnowledgeBase(tmp_path / "kb.db")
    try:
        ds = await kb.create_dataset(
            "corpus", embedding="minilm", vector_store=backend, chunk_tokens=60, overlap_tokens=0
        )  # type: ignore[arg-type]
        for file in sorted((FIXTURES / "corpus").glob("*.md")):
            doc = await kb.add_file(ds, file)
            assert doc.status == "completed", doc.error
        ds = await kb.get_dataset(ds.id)
        scores = {m: await recall_at_3(kb, ds, m) for m in ("keyword", "vector", "hybrid")}
        print(f"\nrecall@3 ({backend}, {await kb.store.count_segments(ds.id)} segments): {scores}")
        for method, floor in FLOORS.items():
            assert scores[method] >= floor, (method, scores)
    finally:
        await kb.close()
