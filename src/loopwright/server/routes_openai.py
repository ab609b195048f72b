"""OpenAI's shapes over an app: Chat Completions (``/v1/chat/completions``), Responses
(``/v1/responses``) and the model list (``/v1/models``).

An OpenAI client's ``base_url`` is the server's ``/v1`` and its API key the app's key: the app's agent
answers, through the same run pipeline as Dify's Service API; only the request's mapping and the
stream's encoder differ (``app.wires.openai_chat``, ``app.wires.openai_responses``). Errors on these
routes, before a run as during one, are OpenAI's ``{"error": {...}}``. See docs/openai-api.md.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict
from starlette.types import Send

from loopwright.app.admin.agent_log import find_message
from loopwright.app.dify.errors import error_fields
from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runs import Run
from loopwright.app.run.runtime import AppRuntime
from loopwright.app.wires.openai_chat import (
    CONVERSATION_HEADER,
    DEFAULT_USER,
    DONE_FRAME,
    OpenAIChatEncoder,
    chat_completion,
    chat_query,
    error_body,
    openai_error,
)
from loopwright.app.wires.openai_responses import (
    RESPONSE_PREFIX,
    OpenAIResponsesEncoder,
    conversation_of,
    read_response,
    responses_query,
)
from loopwright.app.wires.tool_runs import stored_tool_runs
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.bodies import json_body
from loopwright.server.errors import classify, error_headers
from loopwright.server.event_stream import EventStream
from loopwright.server.routes_chat import SSE_HEADERS
from loopwright.server.sse import stream_to
from loopwright.server.state import get_state, require_user


class OpenAIErrors(APIRoute):
    """A route whose errors (a bad key, a bad body, a failed run) are answered in OpenAI's shape."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception as exc:
                known = classify(exc)
                if known is None:
                    raise  # a bug: the catch-all answers it
                status, code, message = known
                headers = error_headers(status, exc)
                return JSONResponse(openai_error(code, status, message), status_code=status, headers=headers)

        return answer


router = APIRouter(route_class=OpenAIErrors)


class StreamOptions(BaseModel):
    include_usage: bool = False


class ChatCompletionPayload(BaseModel):
    """The fields of OpenAI's request that an app's run uses; the others (temperature, tools, …) are
    the app's own settings and are accepted and left alone. ``conversation_id`` and
    ``include_reasoning`` are extensions (docs/openai-api.md)."""

    model_config = ConfigDict(extra="ignore")

    model: str = ""
    messages: list[dict[str, Any]]
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = None
    conversation_id: str | None = None
    include_reasoning: bool = False


@router.post("/v1/chat/completions", response_model=None)
async def chat_completions(
    request: Request,
    app: Annotated[AuthedApp, Depends(current_app)],
    payload: Annotated[ChatCompletionPayload, Depends(json_body(ChatCompletionPayload))],
    runtime: Annotated[AppRuntime, Depends(get_state)],
) -> EventStream | JSONResponse:
    asked = chat_query(payload.messages)
    conversation = payload.conversation_id or request.headers.get(CONVERSATION_HEADER) or None
    model = payload.model or app.id
    include_usage = payload.stream_options is not None and payload.stream_options.include_usage
    run = await runtime.start(
        MessageRequest(
            app_id=app.id,
            user=require_user(payload.user or DEFAULT_USER),
            query=asked.query.replace("\x00", ""),
            conversation_id=conversation,
            history=[] if conversation else asked.history,  # a stored conversation has its own
            response_mode="streaming" if payload.stream else "blocking",
            encoder=partial(OpenAIChatEncoder, model, include_usage, payload.include_reasoning),
        )
    )
    headers = {CONVERSATION_HEADER: run.head.conversation_id}
    if payload.stream:
        return EventStream(partial(_stream, run, DONE_FRAME), headers={**SSE_HEADERS, **headers})
    outcome = await run.outcome()
    if outcome.error is not None:
        return _failed(outcome.error, headers)
    metadata = outcome.end.metadata if outcome.end is not None else {}
    _, thoughts, _ = await find_message(runtime.db, runtime.lookup, app.id, run.user, run.head.message_id)
    usage = metadata.get("usage") or {}
    runs = stored_tool_runs(thoughts)
    body = chat_completion(model, run.head, outcome.answer, usage, runs, payload.include_reasoning)
    return JSONResponse(body, headers=headers)


class ResponsesPayload(BaseModel):
    """The fields of a Responses request that an app's run uses; the others (instructions, tools,
    temperature, store, …) are the app's own settings and are accepted and left alone."""

    model_config = ConfigDict(extra="ignore")

    model: str = ""
    input: str | list[dict[str, Any]]
    previous_response_id: str | None = None
    stream: bool = False
    user: str | None = None


@router.post("/v1/responses", response_model=None)
async def create_response(
    app: Annotated[AuthedApp, Depends(current_app)],
    payload: Annotated[ResponsesPayload, Depends(json_body(ResponsesPayload))],
    runtime: Annotated[AppRuntime, Depends(get_state)],
) -> EventStream | JSONResponse:
    asked = responses_query(payload.input)
    user = require_user(payload.user or DEFAULT_USER)
    previous = payload.previous_response_id
    conversation = (
        await conversation_of(runtime.db, runtime.lookup, app.id, user, previous) if previous else None
    )
    model = payload.model or app.id
    run = await runtime.start(
        MessageRequest(
            app_id=app.id,
            user=user,
            query=asked.query.replace("\x00", ""),
            conversation_id=conversation,
            history=[] if conversation else asked.history,
            response_mode="streaming" if payload.stream else "blocking",
            encoder=partial(OpenAIResponsesEncoder, model, previous),
        )
    )
    headers = {CONVERSATION_HEADER: run.head.conversation_id}
    if payload.stream:
        return EventStream(partial(_stream, run, ""), headers={**SSE_HEADERS, **headers})
    outcome = await run.outcome()  # saved: the stored response is the answer
    if outcome.error is not None:
        return _failed(outcome.error, headers)
    response_id = RESPONSE_PREFIX + run.head.message_id
    stored = await read_response(
        runtime.db, runtime.lookup, app.id, user, response_id, model=model, previous=previous
    )
    return JSONResponse(stored, headers=headers)


@router.get("/v1/responses/{response_id}")
async def get_response(
    response_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    runtime: Annotated[AppRuntime, Depends(get_state)],
    user: str = DEFAULT_USER,
) -> dict[str, Any]:
    """A stored response of the end user ``user`` (the query parameter; default as when created)."""
    return await read_response(runtime.db, runtime.lookup, app.id, require_user(user), response_id)


def _failed(error: BaseException, headers: dict[str, str]) -> JSONResponse:
    _, status, _ = error_fields(error)
    return JSONResponse(error_body(error), status_code=status, headers=headers)


async def _stream(run: Run, last: str, send: Send, writable: Any) -> None:
    """The run's frames, then the wire's last frame (Chat Completions' ``[DONE]``)."""
    await stream_to(run, send, writable)
    if last:
        await send({"type": "http.response.body", "body": last.encode(), "more_body": True})


@router.get("/v1/models")
async def models(app: Annotated[AuthedApp, Depends(current_app)]) -> dict[str, Any]:
    """The key's app, as the one model an OpenAI client may name."""
    return {
        "object": "list",
        "data": [{"id": app.id, "object": "model", "created": 0, "owned_by": "loopwright"}],
    }
