"""FTS5/BM25 keyword search on a real SQLite file: normalised scores, safety, isolation, filters."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.knowledge import KnowledgeBase
from loopwright.knowledge.keyword import idf, match_expression, query_words

TEXTS = {
    "vacation.txt": "Employees receive twenty-five vacation days per year.",
    "office.txt": "The office opens at eight in the morning and closes at six.",
    "parking.txt": "Parking in the garage is free for employees who cycle less.",
    "lunch.txt": "Lunch is served in the canteen every weekday.",
}


async def _dataset(kb: KnowledgeBase, name: str = "hb") -> object:
    ds = await kb.create_dataset(name)
    for file_name, text in TEXTS.items():
        doc = await kb.add_text(ds, file_name, text, metadata={"topic": file_name.split(".")[0]})
        assert doc.status == "completed"
    return await kb.get_dataset(ds.id)


def test_query_words_drop_stop_words_and_quote_safely() -> None:
    assert query_words("What are the office hours? The OFFICE!") == ["office", "hours"]
    assert query_words("the who") == ["the", "who"]  # only stop words: keep them
    assert match_expression(['a"b', "c"]) == '"a""b" OR "c"'
    assert idf(10, 10) == pytest.approx(1e-6) and idf(100, 1) > idf(100, 10)


async def test_best_match_first_with_scores_between_0_and_1(kb: KnowledgeBase) -> None:
    ds = await _dataset(kb)
    hits = await kb.search(ds, "When does the office open in the morning?", method="keyword", top_k=4)  # type: ignore[arg-type]
    assert hits[0].document_name == "office.txt"
    assert hits[0].score == pytest.approx(1.0, abs=0.35)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_a_partial_match_scores_lower_than_a_full_one(kb: KnowledgeBase) -> None:
    ds = await _dataset(kb)
    full = await kb.search(ds, "garage parking", method="keyword")  # type: ignore[arg-type]
    partial = await kb.search(ds, "garage canteen", method="keyword", top_k=1)  # type: ignore[arg-type]
    assert full[0].document_name == "parking.txt"
    assert 0.2 < partial[0].score < full[0].score


async def test_fts_syntax_in_queries_is_plain_text(kb: KnowledgeBase) -> None:
    ds = await _dataset(kb)
    for query in ['"unbalanced', "office AND NOT", "NEAR(office lunch)", "col:office", "*", "-", "(("]:
        await kb.search(ds, query, method="keyword")  # type: ignore[arg-type]
    assert await kb.search(ds, "   ", method="keyword") == []  # type: ignore[arg-type]
    assert await kb.search(ds, "zzzunknownword", method="keyword") == []  # type: ignore[arg-type]


async def test_datasets_do_not_see_each_other(kb: KnowledgeBase) -> None:
    first = await _dataset(kb, "first")
    second = await kb.create_dataset("second")
    await kb.add_text(second, "other.txt", "Nothing about the office here, only about rockets.")
    hits = await kb.search(first, "rockets", method="keyword")  # type: ignore[arg-type]
    assert hits == []
    hits = await kb.search(second, "office", method="keyword")  # type: ignore[arg-type]
    assert [h.document_name for h in hits] == ["other.txt"]


async def test_stats_follow_writes_from_another_connection(tmp_path: Path) -> None:
    one = KnowledgeBase(tmp_path / "shared.db")
    two = KnowledgeBase(tmp_path / "shared.db")
    try:
        ds = await one.create_dataset("hb")
        await one.add_text(ds, "a.txt", "alpha beta gamma")
        before = await one.search(ds, "alpha beta", method="keyword")  # type: ignore[arg-type]
        other = await two.get_dataset("hb")
        for i in range(20):
            await two.add_text(other, f"b{i}.txt", f"beta filler text number {i}")
        after = await one.search(ds, "alpha beta", method="keyword")  # type: ignore[arg-type]
        # "beta" became common, so it weighs less: the same segment now matches the rarer term's share.
        assert after[0].document_name == "a.txt" and before[0].score == pytest.approx(1.0, abs=0.05)
        assert after[0].score == pytest.approx(1.0, abs=0.35)
    finally:
        await one.close()
        await two.close()
