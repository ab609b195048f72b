"""Citations: the ``retriever_resources`` of ``message_end.metadata``, built and merged as Dify does.

A retrieval yields one resource per segment, sorted by score and numbered from 1. Across the tool
calls of a message, Dify keeps the first resource of each (dataset_id, document_id) pair — later
segments of a document already cited are dropped — and renumbers the positions 1, 2, 3…
(``MessageCycleManager.handle_retriever_resources``). ``merge_retriever_resources(..., by="segment")``
keeps one resource per segment instead.
"""

from __future__ import annotations

import uuid
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
            "page": None,
            "doc_metadata": h.document_metadata or None,
            "title": None,
            "files": None,
            "summary": None,
        }
        for i, h in enumerate(ordered, 1)
    ]


# Dify's history model of a citation (``RetrieverResource``, ``fields/message_fields.py``): the
# stream's fields it keeps, with the row's own id, message and time
HISTORY_KEYS = (
    "position",
    "dataset_id",
    "dataset_name",
    "document_id",
    "document_name",
    "data_source_type",
    "segment_id",
    "score",
    "hit_count",
    "word_count",
    "segment_position",
    "index_node_hash",
    "content",
    "summary",
)
_RESOURCE_IDS = uuid.UUID("2f7c9e4a-6d1b-4c83-9a0e-5b1f3c7d8e21")  # ids of saved citations, per message


def history_resources(
    resources: Sequence[Mapping[str, Any]], message_id: str, created_at: int
) -> list[dict[str, Any]]:
    """A message's saved citations in Dify's history shape: ``id`` (stable: the message and the
    position), ``message_id``, the kept fields (null when the stream had none) and ``created_at``."""
    return [
        {
            "id": str(uuid.uuid5(_RESOURCE_IDS, f"{message_id}:{r.get('position', i)}")),
            "message_id": message_id,
            **{k: r.get(k) for k in HISTORY_KEYS},
            "created_at": created_at,
        }
        for i, r in enumerate(resources, 1)
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
