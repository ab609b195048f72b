"""``retriever_resources``: built per retrieval, merged across calls as Dify's message cycle does."""

from __future__ import annotations

from typing import Any

from loopwright.knowledge import Dataset, Hit, Segment, merge_retriever_resources, retriever_resources


def res(dataset: str, document: str, segment: str, position: int = 1, score: float = 0.5) -> dict[str, Any]:
    return {
        "position": position,
        "dataset_id": dataset,
        "document_id": document,
        "segment_id": segment,
        "score": score,
        "content": f"{document}/{segment}",
    }


def test_merge_keeps_the_first_resource_of_each_document_and_renumbers() -> None:
    first = [
        res("d1", "docA", "s1", 1, 0.9),
        res("d1", "docA", "s2", 2, 0.8),
        res("d1", "docB", "s3", 3, 0.7),
    ]
    second = [res("d1", "docB", "s4", 1, 0.95), res("d2", "docA", "s5", 2, 0.6)]
    merged = merge_retriever_resources([first, None, second])
    assert [(r["document_id"], r["segment_id"], r["position"]) for r in merged] == [
        ("docA", "s1", 1),
        ("docB", "s3", 2),
        ("docA", "s5", 3),  # same document id, other dataset: kept
    ]
    assert first[0]["position"] == 1 and "position" in second[0]  # inputs are not modified
    assert merged[0] is not first[0]


def test_merge_by_segment_and_resources_without_ids() -> None:
    first = [res("d1", "docA", "s1"), res("d1", "docA", "s2")]
    second = [res("d1", "docA", "s1"), {"content": "external", "score": 0.1}, {}, {"content": "external"}]
    by_segment = merge_retriever_resources([first, second], by="segment")
    assert [r.get("segment_id") for r in by_segment] == ["s1", "s2", None, None]
    assert [r["position"] for r in by_segment] == [1, 2, 3, 4]
    assert merge_retriever_resources([]) == []


def test_resources_of_one_retrieval_are_sorted_and_carry_difys_fields() -> None:
    dataset = Dataset(id="ds-1", name="Handbook")
    low = Segment(
        "seg-1", "ds-1", "doc-1", 3, "Question text", answer="The answer", hit_count=4, word_count=23
    )
    high = Segment("seg-2", "ds-1", "doc-2", 1, "Plain text")
    resources = retriever_resources(
        dataset, [Hit(low, "faq.csv", 0.4), Hit(high, "plain.md", 0.9, document_metadata={"a": 1})]
    )
    assert [r["segment_id"] for r in resources] == ["seg-2", "seg-1"]
    assert [r["position"] for r in resources] == [1, 2]
    qa = resources[1]
    assert qa["content"] == "question:Question text \nanswer:The answer"
    assert (qa["dataset_id"], qa["dataset_name"], qa["document_id"], qa["document_name"]) == (
        "ds-1",
        "Handbook",
        "doc-1",
        "faq.csv",
    )
    assert qa["hit_count"] == 5 and qa["segment_position"] == 3 and qa["score"] == 0.4
    assert resources[0]["doc_metadata"] == {"a": 1} and qa["doc_metadata"] is None
