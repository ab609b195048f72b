"""``POST /v1/chat-messages`` (streaming or blocking) and ``POST /v1/chat-messages/{task_id}/stop``."""

from __future__ import annotations

import uuid
from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from loopwright.app.generate import (
    AppUnavailableError,
    ChatRequest,
    ConversationNotFoundError,
    resolve,
    run_message,
    start_message,
)
from loopwright.app.inputs import InputError, validate_inputs
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.chat_files import NO_FILES, resolve_chat_files
from loopwright.server.errors import ApiError, invalid_param, not_found
from loopwright.server.event_stream import EventStream
from loopwright.server.routes_files import upload_settings
from loopwright.server.runs import Run, events_of, stream_to
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


@router.post("/v1/chat-messages", response_model=None)
async def chat_messages(
    payload: ChatPayload,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[ServerState, Depends(get_state)],
) -> EventStream | JSONResponse:
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
    try:
        inputs = {} if conversation_id else validate_inputs(config.user_input_form, payload.inputs)
    except InputError as exc:
        raise invalid_param(str(exc)) from None
    files = NO_FILES
    if payload.files:  # whose uploads they may use: this waits for the end user's id
        files = await resolve_chat_files(
            state.db,
            app.id,
            await target.user_id(),
            config.file_upload,
            payload.files,
            upload_settings(state)[0],
        )
    agent = await state.agent(target.version)
    request = ChatRequest(
        query=query, user=user, inputs=inputs, conversation_id=conversation_id, files=files.parts
    )
    prepared = start_message(state.db, app.id, target, query, inputs, files.rows)
    run = Run(task_id=prepared.context.task_id, app_id=app.id, user=user)
    events = run_message(state.db, prepared, agent, request, stop=run.stop)
    state.runs.start(run, events)
    if payload.response_mode == "streaming":
        return EventStream(partial(stream_to, run), headers=SSE_HEADERS)
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
