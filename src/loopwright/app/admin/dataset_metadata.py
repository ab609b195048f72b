"""Document metadata as Dify's Knowledge API manages it (``MetadataService``): a dataset's metadata
fields (created, listed with how many documents use each, renamed, deleted — renames and deletes
carried into the documents), Dify's built-in fields switched on and off, and documents' values set in
a batch. Metadata filters in retrieval (``metadata_filtering_conditions``) read these values.

Every change runs as one edit of the dataset and its documents on the knowledge store's thread
(:meth:`KnowledgeStore.edit_metadata`), so two at once cannot lose one another.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar, get_args

from loopwright.errors import NotFoundError, UserInputError
from loopwright.knowledge import Dataset, Document, KnowledgeBase
from loopwright.knowledge.entities import MetadataField, MetadataType
from loopwright.knowledge.store import MetadataEdit

__all__ = [
    "BUILT_IN_FIELDS",
    "FieldUse",
    "create_field",
    "delete_field",
    "list_fields",
    "rename_field",
    "set_built_in",
    "update_documents",
]

# Dify's BuiltInField, in its order, with their types.
BUILT_IN_FIELDS: tuple[tuple[str, MetadataType], ...] = (
    ("document_name", "string"),
    ("uploader", "string"),
    ("upload_date", "time"),
    ("last_update_date", "time"),
    ("source", "string"),
)
MAX_NAME_CHARS = 255
METADATA_NOT_FOUND = "Metadata not found."

Changes = dict[str, dict[str, Any]]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FieldUse:
    field: MetadataField
    count: int  # documents that have a value for it


async def create_field(kb: KnowledgeBase, dataset: Dataset, name: Any, type_: Any) -> MetadataField:
    """A new metadata field; Dify's refusals for a taken or built-in name."""
    checked_name, checked_type = _name(name), _type(type_)
    made = MetadataField(str(uuid.uuid4()), checked_name, checked_type)

    def edit(current: Dataset, _: list[Document]) -> tuple[Dataset, Changes, MetadataField]:
        _check_free(current, checked_name)
        return replace(current, metadata_fields=(*current.metadata_fields, made)), {}, made

    return await _edit(kb, dataset, edit)


async def list_fields(kb: KnowledgeBase, dataset: Dataset) -> tuple[list[FieldUse], bool]:
    """The dataset's fields with their use counts, and whether the built-in fields are on."""

    def edit(
        current: Dataset, documents: list[Document]
    ) -> tuple[None, Changes, tuple[list[FieldUse], bool]]:
        uses = [FieldUse(f, sum(f.name in d.metadata for d in documents)) for f in current.metadata_fields]
        return None, {}, (uses, current.built_in_field_enabled)

    return await _edit(kb, dataset, edit)


async def rename_field(kb: KnowledgeBase, dataset: Dataset, field_id: str, name: Any) -> MetadataField:
    """A field renamed, and its values moved to the new name in every document."""
    checked = _name(name)

    def edit(current: Dataset, documents: list[Document]) -> tuple[Dataset, Changes, MetadataField]:
        old = _field(current, field_id)
        _check_free(current, checked)
        renamed = replace(old, name=checked)
        fields = tuple(renamed if f.id == field_id else f for f in current.metadata_fields)
        changes = {
            d.id: {(checked if k == old.name else k): v for k, v in d.metadata.items()}
            for d in documents
            if old.name in d.metadata
        }
        return replace(current, metadata_fields=fields), changes, renamed

    return await _edit(kb, dataset, edit)


async def delete_field(kb: KnowledgeBase, dataset: Dataset, field_id: str) -> None:
    """A field deleted, and its values removed from every document."""

    def edit(current: Dataset, documents: list[Document]) -> tuple[Dataset, Changes, None]:
        old = _field(current, field_id)
        fields = tuple(f for f in current.metadata_fields if f.id != field_id)
        changes = {
            d.id: {k: v for k, v in d.metadata.items() if k != old.name}
            for d in documents
            if old.name in d.metadata
        }
        return replace(current, metadata_fields=fields), changes, None

    await _edit(kb, dataset, edit)


async def set_built_in(kb: KnowledgeBase, dataset: Dataset, enabled: bool) -> None:
    """Switch Dify's built-in fields on (their values written into every document) or off (removed)."""

    def edit(current: Dataset, documents: list[Document]) -> tuple[Dataset | None, Changes, None]:
        if current.built_in_field_enabled == enabled:
            return None, {}, None
        changes = {d.id: _with_built_in(d, d.metadata, enabled) for d in documents}
        return replace(current, built_in_field_enabled=enabled), changes, None

    await _edit(kb, dataset, edit)


async def update_documents(kb: KnowledgeBase, dataset: Dataset, operations: Any) -> None:
    """Dify's ``operation_data``: each document's metadata becomes its ``metadata_list`` (``{id, name,
    value}`` each; the field must be the dataset's), plus the built-in fields when they are on."""
    if not isinstance(operations, list):
        raise UserInputError("operation_data must be a list")
    wanted = [_operation(op) for op in operations]

    def edit(current: Dataset, documents: list[Document]) -> tuple[None, Changes, None]:
        by_id = {d.id: d for d in documents}
        names = {f.id: f.name for f in current.metadata_fields}
        changes: Changes = {}
        for document_id, items in wanted:
            document = by_id.get(document_id)
            if document is None:
                raise NotFoundError("Document not found.")
            values: dict[str, Any] = {}
            for field_id, name, value in items:
                if names.get(field_id) != name:
                    raise NotFoundError(METADATA_NOT_FOUND)
                values[name] = value
            changes[document_id] = _with_built_in(document, values, current.built_in_field_enabled)
        return None, changes, None

    await _edit(kb, dataset, edit)


# --- helpers ------------------------------------------------------------------------------------------


async def _edit(kb: KnowledgeBase, dataset: Dataset, edit: MetadataEdit[T]) -> T:
    try:
        return await kb.store.edit_metadata(dataset.id, edit)
    except LookupError as exc:
        if isinstance(exc, NotFoundError):
            raise
        raise NotFoundError("Dataset not found.") from None


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise UserInputError("name is required")
    if len(name) > MAX_NAME_CHARS:
        raise UserInputError(f"Metadata name cannot exceed {MAX_NAME_CHARS} characters.")
    return name.strip()


def _type(value: Any) -> MetadataType:
    if value not in get_args(MetadataType):
        raise UserInputError(f"type must be one of {', '.join(get_args(MetadataType))}")
    checked: MetadataType = value
    return checked


def _check_free(dataset: Dataset, name: str) -> None:
    if any(f.name == name for f in dataset.metadata_fields):
        raise UserInputError("Metadata name already exists.")
    if any(name == built_in for built_in, _ in BUILT_IN_FIELDS):
        raise UserInputError("Metadata name already exists in Built-in fields.")


def _field(dataset: Dataset, field_id: str) -> MetadataField:
    for f in dataset.metadata_fields:
        if f.id == field_id:
            return f
    raise NotFoundError(METADATA_NOT_FOUND)


def _operation(op: Any) -> tuple[str, list[tuple[str, str, Any]]]:
    if not isinstance(op, Mapping) or not isinstance(op.get("document_id"), str):
        raise UserInputError("each operation needs a document_id and a metadata_list")
    items = op.get("metadata_list")
    if not isinstance(items, Sequence) or isinstance(items, str):
        raise UserInputError("metadata_list must be a list")
    out = []
    for item in items:
        if (
            not isinstance(item, Mapping)
            or not isinstance(item.get("id"), str)
            or not isinstance(item.get("name"), str)
        ):
            raise UserInputError("each metadata item needs an id, a name and a value")
        out.append((str(item["id"]), str(item["name"]), item.get("value")))
    return str(op["document_id"]), out


def _with_built_in(document: Document, values: Mapping[str, Any], enabled: bool) -> dict[str, Any]:
    """``values`` with the built-in fields set from the document (on) or removed (off)."""
    kept = {k: v for k, v in values.items() if k not in dict(BUILT_IN_FIELDS)}
    if not enabled:
        return kept
    return {
        **kept,
        "document_name": document.name,
        "uploader": "",  # loopwright has no accounts
        "upload_date": float(document.created_at),
        "last_update_date": float(document.updated_at),
        "source": "upload_file",
    }
