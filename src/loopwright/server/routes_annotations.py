"""Dify's annotation Service API: the app's annotations and its annotation reply switch.

``GET/POST /v1/apps/annotations``, ``PUT/DELETE /v1/apps/annotations/{annotation_id}``,
``POST /v1/apps/annotation-reply/{action}`` (``enable`` | ``disable``) and
``GET /v1/apps/annotation-reply/{action}/status/{job_id}``, with Dify's bodies, paging (``has_more`` is
Dify's ``len(page) == limit``) and errors. The work is
:class:`~loopwright.app.guards.annotations.Annotations`'.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, StrictStr

from loopwright.app.dify.annotation_setting import embedding_spec
from loopwright.app.guards.annotations import AnnotationNotFoundError
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.bodies import json_body
from loopwright.server.errors import invalid_param, not_found
from loopwright.server.state import get_state

router = APIRouter()


class AnnotationPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    question: StrictStr
    answer: StrictStr


class ReplyActionPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    score_threshold: float
    embedding_provider_name: StrictStr
    embedding_model_name: StrictStr


def _uuid(value: str, what: Exception) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise what from None


@router.get("/v1/apps/annotations")
async def list_annotations(
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
    page: Annotated[int, Query()] = 1,
    limit: Annotated[int, Query()] = 20,
    keyword: Annotated[str, Query()] = "",
) -> dict[str, Any]:
    rows, total = await state.annotations.page(app.id, page, limit, keyword)
    return {
        "data": [r.body() for r in rows],
        "has_more": len(rows) == limit,
        "limit": limit,
        "total": total,
        "page": page,
    }


@router.post("/v1/apps/annotations", status_code=201)
async def create_annotation(
    app: Annotated[AuthedApp, Depends(current_app)],
    payload: Annotated[AnnotationPayload, Depends(json_body(AnnotationPayload))],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> dict[str, Any]:
    view = await state.annotations.create(app.id, payload.question, payload.answer, account_id="api")
    return view.body()


@router.put("/v1/apps/annotations/{annotation_id}")
async def update_annotation(
    annotation_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    payload: Annotated[AnnotationPayload, Depends(json_body(AnnotationPayload))],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> dict[str, Any]:
    found = _uuid(annotation_id, AnnotationNotFoundError())
    view = await state.annotations.update(app.id, found, payload.question, payload.answer)
    return view.body()


@router.delete("/v1/apps/annotations/{annotation_id}", status_code=204)
async def delete_annotation(
    annotation_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> Response:
    await state.annotations.delete(app.id, _uuid(annotation_id, AnnotationNotFoundError()))
    return Response(status_code=204)


@router.post("/v1/apps/annotation-reply/{action}")
async def annotation_reply_action(
    action: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    payload: Annotated[ReplyActionPayload, Depends(json_body(ReplyActionPayload))],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> JSONResponse:
    if action not in ("enable", "disable"):
        raise invalid_param("Unsupported annotation reply action")
    if not 0 <= payload.score_threshold <= 1:
        raise invalid_param("score_threshold must be between 0 and 1")
    try:
        spec = embedding_spec(payload.embedding_provider_name, payload.embedding_model_name)
    except ValueError as exc:
        if action == "enable":
            raise invalid_param(str(exc)) from None
        spec = "minilm"  # disabling embeds nothing
    body = await state.annotations.start_job(
        app.id, action, score_threshold=payload.score_threshold, embedding=spec
    )
    return JSONResponse(body)


@router.get("/v1/apps/annotation-reply/{action}/status/{job_id}")
async def annotation_reply_status(
    action: str,
    job_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> dict[str, str]:
    found = _uuid(job_id, not_found("The requested URL was not found on the server."))
    return await state.annotations.job_status(app.id, action, found)
