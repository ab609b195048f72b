"""Dify's knowledge tags (dataset keys): ``GET``/``POST``/``PATCH``/``DELETE /v1/datasets/tags``,
``POST /v1/datasets/tags/binding`` and ``…/unbinding``, ``GET /v1/datasets/{id}/tags``. Registered
before the dataset routes, so ``/v1/datasets/tags`` is not read as a dataset id. The work is
:mod:`loopwright.app.admin.dataset_tags`'s.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel

from loopwright.app.admin import dataset_tags
from loopwright.app.admin.datasets import Tag
from loopwright.server.bodies import json_body
from loopwright.server.errors import invalid_param
from loopwright.server.routes_datasets import Authed, Knowledge, find_dataset

router = APIRouter(prefix="/v1")


def tag_body(t: Tag) -> dict[str, Any]:
    # Dify sends the count as a string
    return {"id": t.id, "name": t.name, "type": "knowledge", "binding_count": str(t.binding_count)}


class TagName(BaseModel):
    name: str


class TagRename(BaseModel):
    name: str
    tag_id: str


class TagId(BaseModel):
    tag_id: str


class TagBinding(BaseModel):
    tag_ids: list[str] | None = None
    tag_id: str | None = None  # older Dify unbinds one tag by ``tag_id``
    target_id: str


@router.get("/datasets/tags")
async def list_tags(kb: Knowledge, _: Authed) -> list[dict[str, Any]]:
    return [tag_body(t) for t in await dataset_tags.list_tags(kb)]


@router.post("/datasets/tags")
async def create_tag(
    kb: Knowledge, _: Authed, body: Annotated[TagName, Depends(json_body(TagName))]
) -> dict[str, Any]:
    return tag_body(await dataset_tags.create_tag(kb, body.name))


@router.patch("/datasets/tags")
async def rename_tag(
    kb: Knowledge, _: Authed, body: Annotated[TagRename, Depends(json_body(TagRename))]
) -> dict[str, Any]:
    return tag_body(await dataset_tags.rename_tag(kb, body.tag_id, body.name))


@router.delete("/datasets/tags", status_code=204)
async def delete_tag(kb: Knowledge, _: Authed, body: Annotated[TagId, Depends(json_body(TagId))]) -> Response:
    await dataset_tags.delete_tag(kb, body.tag_id)
    return Response(status_code=204)


def _tag_ids(body: TagBinding) -> list[str]:
    ids = body.tag_ids if body.tag_ids is not None else [body.tag_id] if body.tag_id else None
    if ids is None:
        raise invalid_param("tag_ids is required")
    return ids


@router.post("/datasets/tags/binding", status_code=204)
async def bind_tags(
    kb: Knowledge, _: Authed, body: Annotated[TagBinding, Depends(json_body(TagBinding))]
) -> Response:
    await dataset_tags.bind(kb, _tag_ids(body), body.target_id, bound=True)
    return Response(status_code=204)


@router.post("/datasets/tags/unbinding", status_code=204)
async def unbind_tags(
    kb: Knowledge, _: Authed, body: Annotated[TagBinding, Depends(json_body(TagBinding))]
) -> Response:
    await dataset_tags.bind(kb, _tag_ids(body), body.target_id, bound=False)
    return Response(status_code=204)


@router.get("/datasets/{dataset_id}/tags")
async def tags_of_dataset(dataset_id: str, kb: Knowledge, _: Authed) -> dict[str, Any]:
    tags = await dataset_tags.dataset_tags(kb, await find_dataset(kb, dataset_id))
    return {"data": [{"id": t.id, "name": t.name} for t in tags], "total": len(tags)}
