"""Memory rows: a conversation's summaries (compaction); an end user's working memory and
observations (memory across conversations). Reads and writes are scoped to one app's end user: no
function here reads another's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import (
    ConversationSummary,
    MemoryBlock,
    MemoryObservation,
    new_id,
    utcnow,
)

__all__ = [
    "delete_memory",
    "delete_observation",
    "get_block",
    "latest_summary",
    "new_observation",
    "new_summary",
    "observations",
    "set_block",
    "summaries",
]

MAX_OBSERVATIONS = 500  # the newest an end user's recall ranks


async def latest_summary(
    session: AsyncSession, conversation_id: str, thread: Sequence[str] | None = None
) -> ConversationSummary | None:
    """The conversation's newest summary (of the most messages), if any. With ``thread`` (the ids of
    the thread a message goes on, oldest first), the newest one made on that thread: a summary of the
    first ``covered_messages`` messages whose last one is the thread's message at that place (a summary
    made on another branch does not stand for this one's turns)."""
    stmt = (
        select(ConversationSummary)
        .where(ConversationSummary.conversation_id == conversation_id)
        .order_by(ConversationSummary.covered_messages.desc(), ConversationSummary.created_at.desc())
    )
    if thread is None:
        return (await session.scalars(stmt.limit(1))).first()
    stmt = stmt.where(ConversationSummary.covered_messages <= len(thread))
    for row in await session.scalars(stmt):
        if row.covered_messages > 0 and thread[row.covered_messages - 1] == row.last_message_id:
            return row
    return None


async def summaries(session: AsyncSession, conversation_id: str) -> list[ConversationSummary]:
    """Every summary of the conversation, oldest first."""
    stmt = (
        select(ConversationSummary)
        .where(ConversationSummary.conversation_id == conversation_id)
        .order_by(ConversationSummary.covered_messages, ConversationSummary.created_at)
    )
    return list(await session.scalars(stmt))


def new_summary(
    conversation_id: str, *, covered_messages: int, last_message_id: str, summary: str, model: str
) -> dict[str, Any]:
    """The column values of a new summary row."""
    return {
        "id": new_id(),
        "conversation_id": conversation_id,
        "covered_messages": covered_messages,
        "last_message_id": last_message_id,
        "summary": summary,
        "model": model,
        "created_at": utcnow(),
    }


async def get_block(session: AsyncSession, app_id: str, end_user_id: str) -> str:
    """The end user's working memory in the app ("" when none)."""
    row = await session.get(MemoryBlock, end_user_id)
    return row.content if row is not None and row.app_id == app_id else ""


async def set_block(session: AsyncSession, app_id: str, end_user_id: str, content: str) -> None:
    """Replace the end user's working memory (the end user must be the app's)."""
    row = await session.get(MemoryBlock, end_user_id)
    if row is None:
        session.add(MemoryBlock(end_user_id=end_user_id, app_id=app_id, content=content, updated_at=utcnow()))
    elif row.app_id == app_id:
        row.content, row.updated_at = content, utcnow()
    await session.flush()


async def observations(
    session: AsyncSession, app_id: str, end_user_id: str, *, limit: int = MAX_OBSERVATIONS
) -> list[MemoryObservation]:
    """The end user's newest observations in the app, newest first."""
    stmt = (
        select(MemoryObservation)
        .where(MemoryObservation.app_id == app_id, MemoryObservation.end_user_id == end_user_id)
        .order_by(MemoryObservation.created_at.desc(), MemoryObservation.id.desc())
        .limit(limit)
    )
    return list(await session.scalars(stmt))


def new_observation(
    app_id: str, end_user_id: str, conversation_id: str, message_id: str, text: str
) -> dict[str, Any]:
    """The column values of a new observation row (one per message)."""
    return {
        "id": new_id(),
        "app_id": app_id,
        "end_user_id": end_user_id,
        "conversation_id": conversation_id,
        "message_id": message_id,
        "text": text,
        "created_at": utcnow(),
    }


async def delete_observation(
    session: AsyncSession, app_id: str, end_user_id: str, observation_id: str
) -> bool:
    """Delete one of the end user's observations; False when there is none of that id."""
    o = MemoryObservation
    result = await session.execute(
        delete(o).where(o.id == observation_id, o.app_id == app_id, o.end_user_id == end_user_id)
    )
    return bool(getattr(result, "rowcount", 0))


async def delete_memory(session: AsyncSession, app_id: str, end_user_id: str) -> None:
    """Delete everything the app remembers of the end user (working memory and observations)."""
    await session.execute(
        delete(MemoryObservation).where(
            MemoryObservation.app_id == app_id, MemoryObservation.end_user_id == end_user_id
        )
    )
    await session.execute(
        delete(MemoryBlock).where(MemoryBlock.app_id == app_id, MemoryBlock.end_user_id == end_user_id)
    )
