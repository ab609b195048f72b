"""Memory rows: a conversation's summaries (compaction)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import ConversationSummary, new_id, utcnow

__all__ = ["latest_summary", "new_summary", "summaries"]


async def latest_summary(session: AsyncSession, conversation_id: str) -> ConversationSummary | None:
    """The conversation's newest summary (of the most messages), if any."""
    stmt = (
        select(ConversationSummary)
        .where(ConversationSummary.conversation_id == conversation_id)
        .order_by(ConversationSummary.covered_messages.desc(), ConversationSummary.created_at.desc())
        .limit(1)
    )
    return (await session.scalars(stmt)).first()


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
