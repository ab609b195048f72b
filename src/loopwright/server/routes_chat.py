"""``POST /v1/chat-messages`` (streaming or blocking) and ``POST /v1/chat-messages/{task_id}/stop``.

Parse, authorize, hand the message to the app runtime (``AppRuntime.start``), serialize: a stream of SSE
frames, or Dify's blocking body once the run has ended and been saved.
"""

from __future__ import annotations

import uuid
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from loopwright.app.dify.errors import error_fields
from loopwright.app.errors import RunExistsError
from loopwright.app.run.plan import UUID_NIL, MessageRequest
from loopwright.app.run.runs import RunOutcome
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import AuthedApp, app_with_mode
from loopwright.server.bodies import DifyUser, json_body
from loopwright.server.errors import ApiError, invalid_param
from loopwright.server.event_stream import EventStream
from loopwright.server.sse import replay_to, stream_to, wants_event_ids
from loopwright.server.state import get_state, require_user

router = APIRouter()

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
# Task ids of requests sent with an Idempotency-Key: the same key of the same app and user, one run
IDEMPOTENCY_NAMESPACE = uuid.UUID("6f0d7a52-3b8e-4c5e-9a51-6c6f6f707772")
MAX_KEY_LENGTH = 255


class ChatPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    query: str
    inputs: dict[str, Any]  # required, as Dify (``{}`` for an app without a form)
    user: DifyUser
    conversation_id: str | None = None
    response_mode: Literal["blocking", "streaming"] | None = None
    files: list[dict[str, Any]] | None = None
    auto_generate_name: bool = True
    # Dify's (its web app's): the message this one follows; see _parent_message_id
    parent_message_id: str | None = None


class StopPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    user: DifyUser


def _conversation_id(value: str | None) -> str | None:
    """Blank counts as none; anything else must be a UUID (as Dify)."""
    if value is None or not value.strip():
        return None
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise invalid_param("conversation_id is not a valid UUID") from None


def _parent_message_id(payload: ChatPayload, conversation_id: str | None) -> str | None:
    """Where the message goes in its conversation (``MessageRequest.parent_message_id``). Absent or
    blank: after the newest message (``UUID_NIL``, a linear conversation, as Dify's Service API); a
    message's id: after that one (a new version of the message that followed it); ``null``: a new
    version of the conversation's first message (as Dify's web app sends it)."""
    if "parent_message_id" not in payload.model_fields_set:
        return UUID_NIL
    value = payload.parent_message_id
    if value is not None and not value.strip():
        return UUID_NIL
    if conversation_id is None:
        if value is None:
            return UUID_NIL  # a new conversation's first message follows nothing anyway
        raise invalid_param("parent_message_id needs a conversation_id")
    if value is None:
        return None
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise invalid_param("parent_message_id is not a valid UUID") from None


NOT_CHAT_APP = "Please check if your app mode matches the right API route."


def not_chat_app() -> ApiError:
    """Dify's answer to a chat route called with a text generator's key."""
    return ApiError(400, "not_chat_app", NOT_CHAT_APP)


async def chat_app(app: Annotated[AuthedApp, Depends(app_with_mode)]) -> AuthedApp:
    """The key's app, for the routes of conversations (Dify's chat-only routes): a completion app's
    key gets ``not_chat_app`` before the body is read, as Dify answers."""
    if app.mode == "completion":
        raise not_chat_app()
    return app


@router.post("/v1/chat-messages", response_model=None)
async def chat_messages(
    request: Request,
    # a text generator answers on /v1/completion-messages: its key gets not_chat_app here (as Dify)
    app: Annotated[AuthedApp, Depends(chat_app)],
    payload: Annotated[ChatPayload, Depends(json_body(ChatPayload))],
    runtime: Annotated[AppRuntime, Depends(get_state)],
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> EventStream | JSONResponse:
    if not payload.query:
        raise invalid_param("query is required")  # Dify's check: empty, not blank
    streaming = payload.response_mode == "streaming"
    if not streaming and runtime.settings.dify_strict and app.mode in BLOCKING_REFUSALS:
        raise invalid_param(BLOCKING_REFUSALS[app.mode])  # Dify's answer
    user = require_user(payload.user)
    conversation_id = _conversation_id(payload.conversation_id)
    message = MessageRequest(
        app_id=app.id,
        user=user,
        query=payload.query.replace("\x00", ""),
        inputs=payload.inputs,
        conversation_id=conversation_id,
        parent_message_id=_parent_message_id(payload, conversation_id),
        files=payload.files or (),
        response_mode="streaming" if streaming else "blocking",
        auto_generate_name=payload.auto_generate_name,
        task_id=task_id_for(app.id, user, idempotency_key),
    )
    return await respond(request, runtime, message, app.mode)


async def respond(
    request: Request, runtime: AppRuntime, message: MessageRequest, mode: str
) -> EventStream | JSONResponse:
    """Start ``message`` and answer as Dify does: its stream of events, or the blocking body of an app
    of ``mode`` once the run has ended (a retried request gets the first one's stream back)."""
    streaming = message.response_mode == "streaming"
    ids = streaming and wants_event_ids(request, runtime.settings)
    try:
        run = await runtime.start(message)
    except RunExistsError as exists:
        if not streaming or not runtime.journal.enabled:  # no stream to give back: say so
            raise ApiError(409, "conflict", str(exists)) from None
        # a retried request: the stream of the run the first one started, from its first event
        head, events = await runtime.follow(exists.task_id, message.app_id, message.user)
        return EventStream(partial(replay_to, head, events, ids=ids), headers=SSE_HEADERS)
    if streaming:
        return EventStream(partial(stream_to, run, ids=ids), headers=SSE_HEADERS)
    return JSONResponse(blocking_body(run.task_id, await run.outcome(), mode))


def task_id_for(app_id: str, user: str, key: str | None) -> str | None:
    """The task id of a request sent with an ``Idempotency-Key`` (ours: a retry starts no second
    run), else none (a new one)."""
    if key is None:
        return None
    key = key.strip()
    if not key or len(key) > MAX_KEY_LENGTH:
        raise invalid_param(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters")
    return str(uuid.uuid5(IDEMPOTENCY_NAMESPACE, f"{app_id}\n{user}\n{key}"))


# What Dify answers a blocking request with, by app mode (loopwright answers one unless in strict mode;
# Dify's chat and completion apps answer blocking requests)
BLOCKING_REFUSALS = {
    "agent-chat": "Agent Chat App does not support blocking mode",
    "agent": "Agent App only supports streaming mode",
}


def blocking_body(task_id: str, outcome: RunOutcome, mode: str = "agent-chat") -> dict[str, Any]:
    """Dify's blocking body for a run of an app of ``mode`` that has ended (an error ends it as Dify's
    error response). A completion app's has no ``conversation_id``, as Dify's."""
    if outcome.error is not None:
        code, status, message = error_fields(outcome.error)
        raise ApiError(status, code, message)
    if outcome.approval is not None:  # paused: what it waits for (POST …/approvals resumes it)
        return {**outcome.approval.payload(), "mode": mode, "answer": ""}
    end = outcome.end
    if end is None:
        raise ApiError(500, "internal_server_error", "the run ended without an answer")
    body = {
        "event": "message",
        "task_id": task_id,
        "id": end.head.message_id,
        "message_id": end.head.message_id,
        "conversation_id": end.head.conversation_id,
        "mode": mode,
        "answer": outcome.answer,
        "metadata": blocking_metadata(end.metadata),
        "created_at": end.head.created_at,
    }
    if mode == "completion":
        del body["conversation_id"]
    return body


PRICE_KEYS = (
    "prompt_unit_price",
    "prompt_price_unit",
    "prompt_price",
    "completion_unit_price",
    "completion_price_unit",
    "completion_price",
    "total_price",
)


def blocking_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """``message_end``'s metadata as Dify's blocking body has it: Dify's stream writes the usage's
    prices as decimal strings, its blocking JSON (``jsonable_encoder``) as numbers — an integer for
    a whole decimal, else a float."""
    usage = metadata.get("usage")
    if not isinstance(usage, dict):
        return metadata
    prices = {k: _number(usage[k]) for k in PRICE_KEYS if isinstance(usage.get(k), str)}
    return {**metadata, "usage": {**usage, **prices}}


def _number(text: str) -> int | float | str:
    try:
        value = Decimal(text)
    except InvalidOperation:
        return text
    exponent = value.as_tuple().exponent
    return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)


@router.post("/v1/chat-messages/{task_id}/stop")
async def stop_chat_message(
    task_id: str,
    app: Annotated[AuthedApp, Depends(chat_app)],
    payload: Annotated[StopPayload, Depends(json_body(StopPayload))],
    runtime: Annotated[AppRuntime, Depends(get_state)],
) -> dict[str, str]:
    """Stop a running message of this app and user; success even for an unknown task (as Dify)."""
    runtime.stop(task_id, app.id, require_user(payload.user))
    return {"result": "success"}
