"""Knowledge tags as Dify's Knowledge API manages them (``TagService`` for ``knowledge`` tags):
tags created, listed with how many datasets carry each, renamed and deleted, bound to and unbound
from datasets; the dataset list filters by them. Refusals are Dify's texts: a taken name ("Tag name
already exists"), an unknown tag ("Tag not found", 404) or dataset ("Dataset not found.", 404).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopwright.app.admin.datasets import get_dataset
from loopwright.errors import NotFoundError, UserInputError
from loopwright.knowledge import Dataset, KnowledgeBase
from loopwright.knowledge.entities import Tag

__all__ = ["bind", "create_tag", "dataset_tags", "delete_tag", "list_tags", "rename_tag", "tags_by_dataset"]

MAX_NAME_CHARS = 50  # Dify's TagCreatePayload
TAG_NOT_FOUND = "Tag not found"


async def list_tags(kb: KnowledgeBase) -> list[Tag]:
    return await kb.store.list_tags()


async def create_tag(kb: KnowledgeBase, name: Any) -> Tag:
    checked = _name(name)
    if await kb.store.tag_named(checked) is not None:
        raise UserInputError("Tag name already exists")
    return await kb.store.create_tag(checked)


async def rename_tag(kb: KnowledgeBase, tag_id: str, name: Any) -> Tag:
    checked = _name(name)
    await _tag(kb, tag_id)
    taken = await kb.store.tag_named(checked)
    if taken is not None and taken.id != tag_id:
        raise UserInputError("Tag name already exists")
    await kb.store.rename_tag(tag_id, checked)
    return await _tag(kb, tag_id)


async def delete_tag(kb: KnowledgeBase, tag_id: str) -> None:
    await _tag(kb, tag_id)
    await kb.store.delete_tag(tag_id)


async def bind(kb: KnowledgeBase, tag_ids: Sequence[str], dataset_id: str, *, bound: bool) -> None:
    """Bind the tags to the dataset (or unbind them); every tag and the dataset must exist."""
    await get_dataset(kb, dataset_id)  # by id, else Dify's "Dataset not found."
    for tag_id in tag_ids:
        await _tag(kb, tag_id)
    await kb.store.bind_tags(list(tag_ids), dataset_id, bound=bound)


async def dataset_tags(kb: KnowledgeBase, dataset: Dataset) -> list[Tag]:
    return (await kb.store.tags_of_datasets([dataset.id])).get(dataset.id, [])


async def tags_by_dataset(kb: KnowledgeBase, datasets: Sequence[Dataset]) -> dict[str, list[Tag]]:
    return await kb.store.tags_of_datasets([d.id for d in datasets]) if datasets else {}


async def _tag(kb: KnowledgeBase, tag_id: str) -> Tag:
    tag = await kb.store.get_tag(tag_id)
    if tag is None:
        raise NotFoundError(TAG_NOT_FOUND)
    return tag


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > MAX_NAME_CHARS:
        raise UserInputError(f"Tag name must be between 1 and {MAX_NAME_CHARS} characters.")
    return name.strip()
