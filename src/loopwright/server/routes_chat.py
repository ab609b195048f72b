"""``POST /v1/chat-messages`` (streaming or blocking) and ``POST /v1/chat-messages/{task_id}/stop``."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict

from loopwright.app.config import InputField
from loopwright.app.generate import (
    AppUnavailableError,
    ChatRequest,
    ConversationNotFoundError,
    resolve,
    run_message,
    start_message,
)
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.errors import ApiError, invalid_param, not_found
from loopwright.server.runs import Run, events_of, sse_frames
from loopwright.server.state import ServerState, get_state, require_user
from loopwright.store.models import Message

router = APIRouter()

CONVERSATION_NOT_EXISTS = "Conversation Not Exists."
APP_UNAVAILABLE = "App unavailable, please check your app configurations."
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class ChatPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    query: str
    inputs: dict[str, Any] | None = None
    user: str
    conversation_id: str | None = None
    response_mode: Literal["blocking", "streaming"] | None = None
    files: list[dict[str, Any]] | None = None
    auto_generate_name: bool = True


class StopPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    user: str


def _conversation_id(value: str | None) -> str | None:
    """Blank counts as none; anything else must be a UUID (as Dify)."""
    if value is None or not value.strip():
        return None
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise invalid_param("conversation_id is not a valid UUID") from None


def validate_inputs(form: Sequence[InputField], inputs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The inputs of a new conversation, checked against the app's form as Dify does: only the form's
    variables are kept; strings lose ``\\x00``; a missing optional field takes its default."""
    given = dict(inputs or {})
    out: dict[str, Any] = {}
    for f in form:
        label = f.label or f.variable
        value = given.get(f.variable)
        if value is None or value == "":
            if f.required:
                raise invalid_param(f"{label} is required in input form")
            if f.default not in (None, ""):
                out[f.variable] = f.default
            elif value == "":
                out[f.variable] = ""
            continue
        out[f.variable] = _check_value(f, label, value)
    return out


def _check_value(f: InputField, label: str, value: Any) -> Any:
    if f.type == "number":
        return _number(label, value)
    if f.type == "checkbox":
        if not isinstance(value, bool):
            raise invalid_param(f"{label} in input form must be a boolean")
        return value
    if not isinstance(value, str):
        raise invalid_param(f"{label} in input form must be a string")
    value = value.replace("\x00", "")
    if f.type == "select" and value not in f.options:
        raise invalid_param(f"{label} in input form must be one of the following: {f.options}")
    if f.max_length is not None and len(value) > f.max_length:
        raise invalid_param(f"{label} in input form must be less than {f.max_length} characters")
    return value


def _number(label: str, value: Any) -> int | float:
    if isinstance(value, bool):
        raise invalid_param(f"{label} in input form must be a valid number")
    if isinstance(value, int | float):
        number: int | float = value
    elif isinstance(value, str):
        try:
            number = int(value) if value.strip().lstrip("+-").isdigit() else float(value)
        except ValueError:
            raise invalid_param(f"{label} in input form must be a valid number") from None
    else:
        raise invalid_param(f"{label} in input form must be a valid number")
    if isinstance(number, float) and not math.isfinite(number):
        raise invalid_param(f"{label} in input form must be a valid number")
    return number


@router.post("/v1/chat-messages", response_model=None)
async def chat_messages(
    payload: ChatPayload,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[ServerState, Depends(get_state)],
) -> StreamingResponse | JSONResponse:
    user = require_user(payload.user)
    query = payload.query.replace("\x00", "")
    conversation_id = _conversation_id(payload.conversation_id)
    try:
        target = await resolve(state.db, state.lookup, app.id, user, conversation_id)
    except ConversationNotFoundError:
        raise not_found(CONVERSATION_NOT_EXISTS) from None
    except AppUnavailableError:
        raise ApiError(
            400, "app_unavailable", "App unavailable, please check your app configurations."
        ) from None
    config = target.version.config
    inputs = {} if conversation_id else validate_inputs(config.user_input_form, payload.inputs)
    agent = state.agent(target.version)
    request = ChatRequest(query=query, user=user, inputs=inputs, conversation_id=conversation_id)
    prepared = start_message(state.db, app.id, target, query, inputs)
    run = Run(task_id=prepared.context.task_id, app_id=app.id, user=user)
    events = run_message(state.db, prepared, agent, request, stop=run.stop)
    state.runs.start(run, events)
    if payload.response_mode == "streaming":
        return StreamingResponse(sse_frames(run), media_type="text/event-stream", headers=SSE_HEADERS)
    return JSONResponse(await _blocking_body(state, run))


async def _blocking_body(state: ServerState, run: Run) -> dict[str, Any]:
    """Run to the end and answer with Dify's blocking body (an ``error`` event becomes the error)."""
    end: dict[str, Any] | None = None
    async for event in events_of(run):
        if event["event"] == "error":
            raise ApiError(int(event["status"]), str(event["code"]), str(event["message"]))
        if event["event"] == "message_end":
            end = event
    if end is None:
        raise ApiError(500, "internal_server_error", "the run ended without an answer")
    async with state.db.transaction() as session:
        message = await session.get(Message, end["message_id"])
        answer = message.answer if message is not None else ""
    return {
        "event": "message",
        "task_id": run.task_id,
        "id": end["message_id"],
        "message_id": end["message_id"],
        "conversation_id": end["conversation_id"],
        "mode": "agent-chat",
        "answer": answer,
        "metadata": end["metadata"],
        "created_at": end["created_at"],
    }


@router.post("/v1/chat-messages/{task_id}/stop")
async def stop_chat_message(
    task_id: str,
    payload: StopPayload,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[ServerState, Depends(get_state)],
) -> dict[str, str]:
    """Stop a running message of this app and user; success even for an unknown task (as Dify)."""
    state.runs.stop(task_id, app.id, require_user(payload.user))
    return {"result": "success"}
