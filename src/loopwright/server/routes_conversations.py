"""Conversations, message history and feedback, each scoped to the key's app and the ``user``: parsed
here, done by :mod:`loopwright.app.admin.conversations`, answered in Dify's shapes."""

from __future__ import annotations

import uuid
from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, ConfigDict

from loopwright.app.admin import conversations, suggestions
from loopwright.app.admin.conversations import ConversationView, MessageFileView, MessageView, ThoughtView
from loopwright.app.availability import current_config
from loopwright.app.config import PLAIN_MODES
from loopwright.app.run import naming
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.bodies import DifyUser, json_body, optional_json_body
from loopwright.server.errors import ApiError, invalid_param, not_found
from loopwright.server.routes_chat import chat_app
from loopwright.server.state import get_state, require_user, user_or_default

router = APIRouter()

Limit = Annotated[int, Query(ge=1, le=100)]
# A stopped message is stored as ``stopped``; Dify's message status has only normal and error, and
# Dify leaves a stopped message ``normal``.
DIFY_STATUS = {"stopped": "normal", "running": "normal"}  # Dify shows an answer in progress as normal


class UserPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    user: DifyUser | None = None


class RenamePayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str | None = None
    auto_generate: bool = False
    user: DifyUser | None = None


class FeedbackPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    rating: Literal["like", "dislike"] | None = None
    user: DifyUser
    content: str | None = None


def conversation_body(conv: ConversationView) -> dict[str, Any]:
    return {
        "id": conv.id,
        "name": conv.name,
        "inputs": conv.inputs,
        "status": conv.status,
        "introduction": conv.introduction,
        "created_at": conv.created_at,
        "updated_at": conv.updated_at,
    }


def thought_body(t: ThoughtView) -> dict[str, Any]:
    return {
        "id": t.id,
        "chain_id": None,
        "message_id": t.message_id,
        "position": t.position,
        "thought": t.thought,
        "tool": t.tool,
        "tool_labels": t.tool_labels,
        "tool_input": t.tool_input,
        "created_at": t.created_at,
        "observation": t.observation,
        "files": t.files,
    }


def message_file_body(f: MessageFileView) -> dict[str, Any]:
    return {
        "id": f.id,
        "filename": f.filename,
        "type": f.type,
        "url": f.url,
        "mime_type": f.mime_type,
        "size": f.size,
        "transfer_method": f.transfer_method,
        "belongs_to": f.belongs_to,
        "upload_file_id": f.upload_file_id,
    }


def message_body(m: MessageView, *, thoughts: bool = True) -> dict[str, Any]:
    """A message as Dify lists it; ``thoughts`` off for a chat app's (Dify's have none: its one round
    is kept for the agent log, not shown as a thought)."""
    # ours, beside Dify's fields: only for a message of an app with handoffs
    answered_by = {"answered_by": m.answered_by} if m.answered_by is not None else {}
    # ours, beside Dify's fields: the message's versions (Regenerate, edited questions), in the history
    versions = {"versions": {"parent_id": m.versions.parent_id, "ids": m.versions.ids}} if m.versions else {}
    return {
        "id": m.id,
        "conversation_id": m.conversation_id,
        "parent_message_id": m.parent_message_id,
        "inputs": m.inputs,
        "query": m.query,
        "answer": m.answer,
        "message_files": [message_file_body(f) for f in m.files],
        "feedback": {"rating": m.rating} if m.rating is not None else None,
        "retriever_resources": m.retriever_resources,
        "created_at": m.created_at,
        "agent_thoughts": [thought_body(t) for t in m.thoughts] if thoughts else [],
        "status": DIFY_STATUS.get(m.status, m.status),
        "error": m.error,
        **answered_by,
        **versions,
    }


def uuid_param(name: str, value: str) -> str:
    """A query parameter Dify reads as a UUID: anything else is its 400."""
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise invalid_param(f"{name} is not a valid UUID") from None


@router.get("/v1/conversations")
async def list_conversations(
    app: Annotated[AuthedApp, Depends(chat_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
    user: str | None = None,
    last_id: str | None = None,
    limit: Limit = 20,
    sort_by: Literal["created_at", "-created_at", "updated_at", "-updated_at"] = "-updated_at",
) -> dict[str, Any]:
    who = user_or_default(user)
    last_id = uuid_param("last_id", last_id) if last_id else None
    page = await conversations.conversation_page(
        state.db,
        state.lookup,
        app.id,
        who,
        limit=limit,
        last_id=last_id or None,
        sort_by=sort_by,
        tool_files=state.files,
    )
    return {
        "limit": page.limit,
        "has_more": page.has_more,
        "data": [conversation_body(c) for c in page.items],
    }


@router.delete("/v1/conversations/{conversation_id}", status_code=204, response_class=Response)
async def delete_conversation(
    conversation_id: str,
    app: Annotated[AuthedApp, Depends(chat_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
    payload: Annotated[UserPayload | None, Depends(optional_json_body(UserPayload))],
    user: str | None = None,
) -> Response:
    """204 with no body, as Dify; 404 for a conversation that is not the user's."""
    who = user_or_default(payload.user if payload is not None and payload.user else user)
    await conversations.delete_conversation(state.db, state.lookup, app.id, who, conversation_id)
    return Response(status_code=204)


@router.get("/v1/conversations/{conversation_id}/variables")
async def conversation_variables(
    conversation_id: str,
    app: Annotated[AuthedApp, Depends(chat_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
    user: str | None = None,
    limit: Limit = 20,
) -> dict[str, Any]:
    """Agent-chat conversations have no variables: Dify's empty page."""
    await conversations.require_conversation(
        state.db, state.lookup, app.id, user_or_default(user), conversation_id
    )
    return {"limit": limit, "has_more": False, "data": []}


@router.put("/v1/conversations/{conversation_id}/variables/{variable_id}")
async def update_conversation_variable(
    conversation_id: str, variable_id: str, app: Annotated[AuthedApp, Depends(chat_app)]
) -> None:
    raise not_found("Conversation Variable Not Exists.")


@router.get("/v1/app/feedbacks")
async def app_feedbacks(
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
    page: Annotated[int, Query(ge=1)] = 1,
    limit: Annotated[int, Query(ge=1, le=101)] = 20,
) -> dict[str, Any]:
    """Every rating of the app's messages, newest first (Dify's shape; end users only, so
    ``from_source`` is ``user`` and ``from_account_id`` null)."""
    feedbacks = await conversations.app_feedbacks(state.db, app.id, page=page, limit=limit)
    return {
        "data": [
            {
                "id": f.id,
                "app_id": app.id,
                "conversation_id": f.conversation_id,
                "message_id": f.message_id,
                "rating": f.rating,
                "content": f.content,
                "from_source": "user",
                "from_end_user_id": f.end_user_id,
                "from_account_id": None,
                "created_at": f.created_at.isoformat(),
                "updated_at": f.updated_at.isoformat(),
            }
            for f in feedbacks
        ]
    }


@router.get("/v1/messages/{message_id}/suggested")
async def suggested_questions(
    message_id: str,
    app: Annotated[AuthedApp, Depends(chat_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
    user: str | None = None,
) -> dict[str, Any]:
    """Questions the user may ask next, made by the app's model with Dify's prompt when the app has
    ``suggested_questions_after_answer``; Dify's 400 otherwise (after the message is found)."""
    who = require_user(user)
    exchanges = await conversations.recent_exchanges(
        state.db, state.lookup, app.id, who, message_id, limit=suggestions.HISTORY_MESSAGES
    )
    config = await current_config(state.lookup, app.id)
    if not config.suggested_questions_after_answer:
        raise ApiError(400, "bad_request", "Suggested Questions Is Disabled.")
    questions = await suggestions.suggest_questions(state.model(config.model), exchanges)
    return {"result": "success", "data": questions}


@router.post("/v1/conversations/{conversation_id}/name")
async def rename_conversation(
    conversation_id: str,
    app: Annotated[AuthedApp, Depends(chat_app)],
    payload: Annotated[RenamePayload, Depends(json_body(RenamePayload))],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> dict[str, Any]:
    who = user_or_default(payload.user)
    namer = None
    if payload.auto_generate:  # the app's model names it, with Dify's prompt
        model = state.model((await current_config(state.lookup, app.id)).model)
        namer = partial(naming.generate_name, model)
    conv = await conversations.rename_conversation(
        state.db,
        state.lookup,
        app.id,
        who,
        conversation_id,
        name=payload.name,
        auto_generate=payload.auto_generate,
        namer=namer,
    )
    return conversation_body(conv)


@router.get("/v1/messages")
async def list_messages(
    app: Annotated[AuthedApp, Depends(chat_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
    conversation_id: str | None = None,
    user: str | None = None,
    first_id: str | None = None,
    limit: Limit = 20,
    message_id: str | None = None,
) -> dict[str, Any]:
    """One thread of the conversation (Dify's: the one ending at the newest message); ours:
    ``message_id`` picks the thread through that message, down to the newest message of its branch
    (another version of a message, as the chat page switches to it)."""
    who = user_or_default(user)
    if conversation_id is None:
        raise invalid_param("conversation_id is required")
    if not conversation_id:
        return {"limit": limit, "has_more": False, "data": []}  # Dify's answer to an empty id
    conversation_id = uuid_param("conversation_id", conversation_id)
    first_id = uuid_param("first_id", first_id) if first_id else None
    message_id = uuid_param("message_id", message_id) if message_id else None
    page = await conversations.message_page(
        state.db,
        state.lookup,
        state.files,
        app.id,
        who,
        conversation_id,
        limit=limit,
        first_id=first_id or None,
        message_id=message_id,
    )
    thoughts = app.mode not in PLAIN_MODES  # a chat app's messages have none, as Dify's
    data = [message_body(m, thoughts=thoughts) for m in page.items]
    return {"limit": page.limit, "has_more": page.has_more, "data": data}


@router.post("/v1/messages/{message_id}/feedbacks")
async def message_feedback(
    message_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    payload: Annotated[FeedbackPayload, Depends(json_body(FeedbackPayload))],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> dict[str, str]:
    who = require_user(payload.user)
    await conversations.rate_message(
        state.db, state.lookup, app.id, who, message_id, payload.rating, payload.content
    )
    return {"result": "success"}
