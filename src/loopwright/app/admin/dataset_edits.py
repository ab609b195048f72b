"""Changing what a dataset holds, as Dify's Knowledge API does: a document updated by text or file
(indexed again under the same id, after the answer), and segments created, read, updated and deleted.

Dify's checks and messages (``controllers/service_api/dataset/segment.py``, ``SegmentService``,
``DocumentService.update_document_with_dataset_id``): segments are added only to a completed document,
a Q&A document's segments need an answer, a segment needs content; the segment routes say "Document not
found." / "Segment not found." where the document routes say "Document Not Exists.".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loopwright.app.admin.datasets import Queued, get_document, splitting_rules
from loopwright.errors import NotFoundError, UserInputError
from loopwright.knowledge import Dataset, Document, KnowledgeBase
from loopwright.knowledge.entities import ChunkDraft, Segment
from loopwright.knowledge.ingest import Source

__all__ = [
    "STATUS_ACTIONS",
    "InvalidActionError",
    "add_segments",
    "delete_segment",
    "find_segment",
    "segment_document",
    "set_document_status",
    "update_document",
    "update_segment",
]

DOCUMENT_NOT_FOUND = "Document not found."  # the segment routes' text
STATUS_ACTIONS = ("enable", "disable", "archive", "un_archive")


class InvalidActionError(UserInputError):
    """A document status action that cannot be done (Dify's 400 ``invalid_action``)."""

    code = "invalid_action"


SEGMENT_NOT_FOUND = "Segment not found."


async def update_document(
    kb: KnowledgeBase,
    dataset: Dataset,
    document_id: str,
    *,
    name: str | None,
    text: str | None = None,
    data: bytes | None = None,
    kind: str = "text",
    process_rule: dict[str, Any] | None = None,
) -> Queued:
    """A document renamed and, with new ``text`` or file ``data``, queued to be indexed again (its
    segments are replaced when that completes). Dify's refusals: a text without a name, a document
    that is not the dataset's (404) or not available (still indexing, or failed)."""
    if text is not None and not (name or "").strip():
        raise UserInputError("name is required when text is provided")
    document = await _document(kb, dataset, document_id, "Document not found")
    if document.status != "completed" or not document.enabled or document.archived:
        raise UserInputError("Document is not available")  # Dify: display_status != "available"
    new_name = name.strip() if name and name.strip() else document.name
    if text is None and data is None:
        renamed = await kb.rename_document(document, new_name) if new_name != document.name else document

        async def unchanged() -> Document:
            return renamed

        return Queued(renamed, unchanged)
    rules = splitting_rules(process_rule)
    source = Source(kind="text", text=text) if text is not None else Source(kind=kind, data=data)
    queued = await kb.requeue_document(document, new_name, source.kind)

    async def index() -> Document:
        return await kb.index(dataset, queued, source, None, rules=rules)

    return Queued(queued, index)


async def set_document_status(kb: KnowledgeBase, dataset: Dataset, action: str, document_ids: Any) -> None:
    """Dify's ``documents/status/{action}``: enable, disable, archive or un_archive documents (a
    disabled or archived one is not retrieved). Unknown ids are skipped, as Dify; a document being
    indexed, or one not completed that would be disabled, refuses the whole batch before any change."""
    if action not in STATUS_ACTIONS:
        raise InvalidActionError(f"Invalid action: {action}")
    if not isinstance(document_ids, list) or not all(isinstance(i, str) for i in document_ids):
        raise UserInputError("document_ids must be a list of document ids")
    found = [
        d for d in [await kb.store.get_document(i) for i in document_ids] if d and d.dataset_id == dataset.id
    ]
    for document in found:
        if document.status in ("queued", "indexing"):
            raise InvalidActionError(f"{document.name} is being indexed, please try again later")
        if action == "disable" and document.status != "completed":
            raise InvalidActionError(f"Document: {document.name} is not completed.")
    ids = [d.id for d in found]
    if action in ("enable", "disable"):
        await kb.store.set_document_flags(ids, enabled=action == "enable")
    else:
        await kb.store.set_document_flags(ids, archived=action == "archive")


async def segment_document(
    kb: KnowledgeBase, dataset: Dataset, document_id: str, *, completed: bool = False
) -> Document:
    """The dataset's document for a segment route ("Document not found."); with ``completed``, one
    whose indexing is done and that is enabled ("Document is not completed." / "Document is
    disabled.", 404s too, as Dify)."""
    document = await _document(kb, dataset, document_id, DOCUMENT_NOT_FOUND)
    if completed and document.status != "completed":
        raise NotFoundError("Document is not completed.")
    if completed and not document.enabled:
        raise NotFoundError("Document is disabled.")
    return document


async def find_segment(kb: KnowledgeBase, document: Document, segment_id: str) -> Segment:
    """A segment of the document, or "Segment not found."."""
    segment = await kb.get_segment(segment_id)
    if segment is None or segment.document_id != document.id:
        raise NotFoundError(SEGMENT_NOT_FOUND)
    return segment


async def add_segments(
    kb: KnowledgeBase, dataset: Dataset, document: Document, items: Sequence[Mapping[str, Any]]
) -> list[Segment]:
    """New segments (``{content, answer?, keywords?}`` each, all checked first) at the document's end."""
    drafts = [_draft(dataset, item) for item in items]
    return await kb.add_segments(dataset, document, drafts)


async def update_segment(
    kb: KnowledgeBase, dataset: Dataset, segment: Segment, changes: Mapping[str, Any]
) -> Segment:
    """A segment with the new ``content`` / ``answer`` of ``changes`` (missing ones are kept)."""
    merged = {
        "content": changes.get("content") if changes.get("content") is not None else segment.content,
        "answer": changes.get("answer") if changes.get("answer") is not None else segment.answer,
    }
    draft = _draft(dataset, merged)
    return await kb.update_segment(dataset, segment, draft.content, draft.answer)


async def delete_segment(kb: KnowledgeBase, dataset: Dataset, segment: Segment) -> None:
    await kb.delete_segment(dataset, segment)


def _draft(dataset: Dataset, item: Mapping[str, Any]) -> ChunkDraft:
    """Dify's ``segment_create_args_validate``: a Q&A dataset's segment needs a non-blank answer,
    every segment non-blank content."""
    if not isinstance(item, Mapping):
        raise UserInputError("each segment must be an object")
    content, answer = item.get("content"), item.get("answer")
    if dataset.doc_form == "qa_model":
        if not answer or not isinstance(answer, str):
            raise UserInputError("Answer is required")
        if not answer.strip():
            raise UserInputError("Answer is empty")
    if not content or not isinstance(content, str) or not content.strip():
        raise UserInputError("Content is empty")
    kept_answer = answer.strip() if dataset.doc_form == "qa_model" and isinstance(answer, str) else None
    return ChunkDraft(content.strip(), kept_answer)


async def _document(kb: KnowledgeBase, dataset: Dataset, document_id: str, message: str) -> Document:
    try:
        return await get_document(kb, dataset, document_id)
    except NotFoundError:
        raise NotFoundError(message) from None
