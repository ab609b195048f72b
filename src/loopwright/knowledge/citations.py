"""Citations: the ``retriever_resources`` of ``message_end.metadata``, built and merged as Dify does.

A retrieval yields one resource per segment, sorted by score and numbered from 1. Across the tool
calls of a message, Dify keeps the first resource of each (dataset_id, document_id) pair — later
segments of a document already cited are dropped — and renumbers the positions 1, 2, 3…
(``MessageCycleManager.handle_retriever_resources``). ``merge_retriever_resources(..., by="segment")``
keeps one resource per segment instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from loopwright.knowledge.entities import Dataset, Hit


def retriever_resources(
    dataset: Dataset, hits: Sequence[Hit], *, retriever_from: str = "dev"
) -> list[dict[str, Any]]:
    """Dify's ``RetrievalSourceMetadata`` dicts for the hits of one retrieval, best score first."""
    ordered = sorted(hits, key=lambda h: h.score, reverse=True)
    return [
        {
            "position": i,
            "dataset_id": dataset.id,
            "dataset_name": dataset.name,
            "document_id": h.segment.document_id,
            "document_name": h.document_name,
            "data_source_type": "upload_file",
            "segment_id": h.segment.id,
            "retriever_from": retriever_from,
            "score": h.score,
            "hit_count": h.segment.hit_count + 1,  # this retrieval counts
            "word_count": h.segment.word_count,
            "segment_position": h.segment.position,
            "index_node_hash": h.segment.hash,
            "content": h.segment.resource_content(),
            "doc_metadata": h.document_metadata or None,
        }
        for i, h in enumerate(ordered, 1)
    ]


def merge_retriever_resources(
    lists: Iterable[Sequence[Mapping[str, Any]] | None],
    *,
    by: Literal["document", "segment"] = "document",
) -> list[dict[str, Any]]:
    """One list from the resource lists of several tool calls, in call order: duplicates dropped (the
    first one kept) and positions renumbered from 1. ``by="document"`` is Dify's rule (one resource per
    dataset and document); resources without the ids are always kept, as in Dify."""
    merged: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for resources in lists:
        for resource in resources or ():
            if not resource:
                continue
            key = _key(resource, by)
            if key is not None:
                if key in seen:
                    continue
                seen.add(key)
            merged.append(dict(resource))
    for i, resource in enumerate(merged, 1):
        resource["position"] = i
    return merged


def _key(resource: Mapping[str, Any], by: str) -> tuple[Any, ...] | None:
    if by == "segment":
        segment = resource.get("segment_id")
        return (resource.get("dataset_id"), segment) if segment else None
    dataset, document = resource.get("dataset_id"), resource.get("document_id")
    return (dataset, document) if dataset and document else None
