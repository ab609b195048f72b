"""Conversations, message history and feedback, each scoped to the key's app and the ``user``."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.app.config import AppConfig
from loopwright.app.errors import CONVERSATION_NOT_EXISTS
from loopwright.app.message_writes import conversation_name
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.errors import invalid_param, not_found
from loopwright.server.state import MAX_NAME_CHARS, ServerState, get_state, require_user
from loopwright.store import repositories as repo
from loopwright.store.models import AppConfig as AppConfigRow
from loopwright.store.models import (
    Conversation,
    Message,
    MessageAgentThought,
    MessageFeedback,
    MessageFile,
    unix_seconds,
)
from loopwright.tools.files.signing import tool_file_of_url

router = APIRouter()

Limit = Annotated[int, Query(ge=1, le=100)]


class UserPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    user: str | None = None


class RenamePayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str | None = None
    auto_generate: bool = False
    user: str


class FeedbackPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    rating: Literal["like", "dislike"] | None = None
    user: str
    content: str | None = None


async def _conversation(session: AsyncSession, app_id: str, user: str, conversation_id: str) -> Conversation:
    end_user = await repo.get_or_create_end_user(session, app_id, user)
    conv = await repo.get_conversation(session, app_id, end_user.id, conversation_id)
    if conv is None:
        raise not_found(CONVERSATION_NOT_EXISTS)
    return conv


async def conversation_body(session: AsyncSession, conv: Conversation) -> dict[str, Any]:
    row = await session.get(AppConfigRow, conv.app_config_id)
    introduction = AppConfig.model_validate(row.config).opening_statement if row is not None else ""
    return {
        "id": conv.id,
        "name": conv.name,
        "inputs": dict(conv.inputs or {}),
        "status": conv.status,
        "introduction": introduction,
        "created_at": unix_seconds(conv.created_at),
        "updated_at": unix_seconds(conv.updated_at),
    }


@router.get("/v1/conversations")
async def list_conversations(
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[ServerState, Depends(get_state)],
    user: str | None = None,
    last_id: str | None = None,
    limit: Limit = 20,
    sort_by: str = "-updated_at",
) -> dict[str, Any]:
    user = require_user(user)
    async with state.db.transaction() as session:
        end_user = await repo.get_or_create_end_user(session, app.id, user)
        if last_id:
            last = await repo.get_conversation(session, app.id, end_user.id, last_id)
            if last is None:
                raise not_found("Last Conversation Not Exists.")
        page = await repo.list_conversations(
            session, app.id, end_user.id, limit=limit, last_id=last_id or None
        )
        data = [await conversation_body(session, c) for c in page.items]
    return {"limit": page.limit, "has_more": page.has_more, "data": data}


@router.delete("/v1/conversations/{conversation_id}")
async def delete_conversation(
    conversation_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[ServerState, Depends(get_state)],
    payload: UserPayload | None = None,
    user: str | None = None,
) -> dict[str, str]:
    who = require_user(payload.user if payload is not None and payload.user else user)
    async with state.db.transaction() as session:
        conv = await _conversation(session, app.id, who, conversation_id)
        await repo.delete_conversation(session, conv)
    return {"result": "success"}


@router.post("/v1/conversations/{conversation_id}/name")
async def rename_conversation(
    conversation_id: str,
    payload: RenamePayload,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[ServerState, Depends(get_state)],
) -> dict[str, Any]:
    user = require_user(payload.user)
    async with state.db.transaction() as session:
        conv = await _conversation(session, app.id, user, conversation_id)
        if payload.auto_generate:
            first = await session.scalar(
                select(Message)
                .where(Message.conversation_id == conv.id)
                .order_by(Message.created_at, Message.id)
                .limit(1)
            )
            name = conversation_name(first.query) if first is not None else conv.name
        else:
            name = (payload.name or "").strip()
            if not name:
                raise invalid_param("name is required when auto_generate is false")
            if len(name) > MAX_NAME_CHARS:
                raise invalid_param(f"name must be at most {MAX_NAME_CHARS} characters")
        await repo.rename_conversation(session, conv, name)
        return await conversation_body(session, conv)


def _json(text: str | None, default: Any) -> Any:
    if not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def thought_body(t: MessageAgentThought) -> dict[str, Any]:
    files = _json(t.message_files, [])
    return {
        "id": t.id,
        "chain_id": None,
        "message_id": t.message_id,
        "position": t.position,
        "thought": t.thought,
        "tool": t.tool,
        "tool_labels": _json(t.tool_labels_str, {}),
        "tool_input": t.tool_input,
        "created_at": unix_seconds(t.created_at),
        "observation": t.observation,
        "files": files if isinstance(files, list) else [],
    }


@router.get("/v1/messages")
async def list_messages(
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[ServerState, Depends(get_state)],
    conversation_id: str | None = None,
    user: str | None = None,
    first_id: str | None = None,
    limit: Limit = 20,
) -> dict[str, Any]:
    user = require_user(user)
    if not conversation_id:
        raise invalid_param("conversation_id is required")
    async with state.db.transaction() as session:
        conv = await _conversation(session, app.id, user, conversation_id)
        if first_id and await repo.get_message(session, conv.id, first_id) is None:
            raise not_found("First Message Not Exists.")
        page = await repo.list_messages(session, conv.id, limit=limit, first_id=first_id or None)
        ratings = await _ratings(session, [m.id for m in page.items], conv.end_user_id)
        data = []
        files = await _message_files(session, [m.id for m in page.items], state)
        for m in page.items:
            thoughts = await repo.list_thoughts(session, m.id)
            data.append(
                {
                    "id": m.id,
                    "conversation_id": m.conversation_id,
                    "parent_message_id": m.parent_message_id,
                    "inputs": dict(m.inputs or {}),
                    "query": m.query,
                    "answer": m.answer,
                    "message_files": files.get(m.id, []),
                    "feedback": {"rating": ratings[m.id]} if m.id in ratings else None,
                    "retriever_resources": [],
                    "created_at": unix_seconds(m.created_at),
                    "agent_thoughts": [thought_body(t) for t in thoughts],
                    "status": m.status,
                    "error": m.error,
                }
            )
    return {"limit": page.limit, "has_more": page.has_more, "data": data}


async def _ratings(session: AsyncSession, message_ids: list[str], end_user_id: str) -> dict[str, str]:
    if not message_ids:
        return {}
    rows = await session.scalars(
        select(MessageFeedback).where(
            MessageFeedback.message_id.in_(message_ids), MessageFeedback.end_user_id == end_user_id
        )
    )
    return {r.message_id: r.rating for r in rows}


async def _message_files(
    session: AsyncSession, message_ids: list[str], state: ServerState
) -> dict[str, list[dict[str, Any]]]:
    """The files of each message, the user's (uploads, remote URLs) and the tools' (with a freshly
    signed URL: a stored signature would have expired), as Dify lists them."""
    if not message_ids:
        return {}
    rows = await session.scalars(
        select(MessageFile).where(MessageFile.message_id.in_(message_ids)).order_by(MessageFile.created_at)
    )
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r.message_id, []).append(
            {
                "id": r.id,
                "type": r.type,
                "url": await _signed(state, r.url) if r.transfer_method == "tool_file" else r.url or "",
                "belongs_to": r.belongs_to,
                "transfer_method": r.transfer_method,
                "upload_file_id": r.upload_file_id,
            }
        )
    return out


async def _signed(state: ServerState, url: str | None) -> str:
    """A tool file's URL, signed now (a remote one as it is)."""
    file_id = tool_file_of_url(url or "")
    if file_id is None:
        return url or ""
    files = await state.files()
    stored = await files.get(file_id)
    return files.url_for(stored) if stored is not None else url or ""


@router.post("/v1/messages/{message_id}/feedbacks")
async def message_feedback(
    message_id: str,
    payload: FeedbackPayload,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[ServerState, Depends(get_state)],
) -> dict[str, str]:
    user = require_user(payload.user)
    async with state.db.transaction() as session:
        end_user = await repo.get_or_create_end_user(session, app.id, user)
        message = await session.scalar(
            select(Message)
            .join(Conversation, Conversation.id == Message.conversation_id)
            .where(
                Message.id == message_id,
                Conversation.app_id == app.id,
                Conversation.end_user_id == end_user.id,
            )
        )
        if message is None:
            raise not_found("Message Not Exists.")
        await repo.set_feedback(session, message.id, end_user.id, payload.rating, payload.content)
    return {"result": "success"}
