"""OpenAI's Chat Completions and model list over an app (``/v1/chat/completions``, ``/v1/models``).

An OpenAI client's ``base_url`` is the server's ``/v1`` and its API key the app's key: the app's agent
answers, through the same run pipeline as Dify's Service API; only the request's mapping and the
stream's encoder differ (``app.wires.openai_chat``). See docs/openai-api.md.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.types import Send

from loopwright.app.dify.errors import error_fields
from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runs import Run
from loopwright.app.run.runtime import AppRuntime
from loopwright.app.wires.openai_chat import (
    DEFAULT_USER,
    DONE_FRAME,
    OpenAIChatEncoder,
    chat_completion,
    chat_query,
    error_body,
)
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.bodies import json_body
from loopwright.server.event_stream import EventStream
from loopwright.server.routes_chat import SSE_HEADERS
from loopwright.server.sse import stream_to
from loopwright.server.state import get_state, require_user

router = APIRouter()


class StreamOptions(BaseModel):
    include_usage: bool = False


class ChatCompletionPayload(BaseModel):
    """The fields of OpenAI's request that an app's run uses; the others (temperature, tools, …) are
    the app's own settings and are accepted and left alone."""

    model_config = ConfigDict(extra="ignore")

    model: str = ""
    messages: list[dict[str, Any]]
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = None


@router.post("/v1/chat/completions", response_model=None)
async def chat_completions(
    app: Annotated[AuthedApp, Depends(current_app)],
    payload: Annotated[ChatCompletionPayload, Depends(json_body(ChatCompletionPayload))],
    runtime: Annotated[AppRuntime, Depends(get_state)],
) -> EventStream | JSONResponse:
    asked = chat_query(payload.messages)
    model = payload.model or app.id
    include_usage = payload.stream_options is not None and payload.stream_options.include_usage
    request = MessageRequest(
        app_id=app.id,
        user=require_user(payload.user or DEFAULT_USER),
        query=asked.query.replace("\x00", ""),
        history=asked.history,
        response_mode="streaming" if payload.stream else "blocking",
        encoder=partial(OpenAIChatEncoder, model, include_usage),
    )
    run = await runtime.start(request)
    if payload.stream:
        return EventStream(partial(_stream, run), headers=SSE_HEADERS)
    outcome = await run.outcome()
    if outcome.error is not None:
        _, status, _ = error_fields(outcome.error)
        return JSONResponse(error_body(outcome.error), status_code=status)
    head = run.head
    metadata = outcome.end.metadata if outcome.end is not None else {}
    body = chat_completion(
        model, head.message_id, head.created_at, outcome.answer, metadata.get("usage") or {}
    )
    return JSONResponse(body)


async def _stream(run: Run, send: Send, writable: Any) -> None:
    """The run's chunks, then OpenAI's ``[DONE]``."""
    await stream_to(run, send, writable)
    await send({"type": "http.response.body", "body": DONE_FRAME.encode(), "more_body": True})


@router.get("/v1/models")
async def models(app: Annotated[AuthedApp, Depends(current_app)]) -> dict[str, Any]:
    """The key's app, as the one model an OpenAI client may name."""
    return {
        "object": "list",
        "data": [{"id": app.id, "object": "model", "created": 0, "owned_by": "loopwright"}],
    }
