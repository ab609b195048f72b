"""Rows for the store's tests, built by the same repository builders production writes with
(``new_conversation``, ``new_message``, ``new_thought``, ``thought_values``, ``message_result``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.model.entities import Usage
from loopwright.store import codec
from loopwright.store import repositories as repo
from loopwright.store.models import Conversation, Message, MessageAgentThought, new_id, utcnow
from loopwright.store.threads import UUID_NIL


async def create_conversation(
    s: AsyncSession, app_id: str, end_user_id: str, *, name: str = "New conversation", inputs: Any = None
) -> Conversation:
    config = await repo.latest_config(s, app_id)
    assert config is not None
    values = repo.new_conversation(
        new_id(), app_id, end_user_id, config.id, name=name, inputs=inputs or {}, now=utcnow()
    )
    conv = Conversation(**values)
    s.add(conv)
    await s.flush()
    return conv


async def create_message(
    s: AsyncSession,
    conv: Conversation,
    query: str,
    *,
    inputs: Mapping[str, Any] | None = None,
    parent_message_id: str | None = UUID_NIL,  # as the Service API writes: after the message before
) -> Message:
    now = utcnow()
    values = repo.new_message(
        new_id(),
        conv.id,
        conv.app_id,
        query,
        inputs=inputs if inputs is not None else conv.inputs,
        parent_message_id=parent_message_id,
        now=now,
    )
    msg = Message(**values)
    conv.updated_at = now
    s.add(msg)
    await s.flush()
    return msg


async def set_result(s: AsyncSession, message_id: str, **outcome: Any) -> Message:
    msg = await s.get(Message, message_id)
    assert msg is not None
    for column, value in repo.message_result(**outcome).items():
        setattr(msg, column, value)
    await s.flush()
    return msg


async def add_thought(
    s: AsyncSession,
    message_id: str,
    position: int,
    *,
    thought: str = "",
    tools: Sequence[str] = (),
    inputs: Sequence[Any] = (),
    observations: Sequence[str] = (),
    metas: Sequence[Mapping[str, Any]] = (),
    answer: str = "",
    file_ids: Sequence[str] = (),
    usage: Usage | None = None,
    labels: Mapping[str, Mapping[str, str]] | None = None,
    created_by: str = "",
) -> MessageAgentThought:
    """A round's row as production writes it: Dify's initial values, then the round's columns."""
    thought_id = new_id()
    row = MessageAgentThought(
        **repo.new_thought(message_id, position, thought_id=thought_id, created_by=created_by),
    )
    s.add(row)
    values = repo.thought_values(
        thought_id,
        position,
        thought=thought,
        tool_names=tools,
        tool_inputs=list(inputs) or [{} for _ in tools],
        observations=list(observations) or ["" for _ in tools],
        metas=list(metas) or [{} for _ in tools],
        answer=answer,
        file_ids=file_ids,
        usage=usage,
        labels=labels,
    )
    for column, value in values.items():
        setattr(row, column, value)
    await s.flush()
    return row


__all__ = ["add_thought", "codec", "create_conversation", "create_message", "set_result"]
