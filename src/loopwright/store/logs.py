"""Read-only queries for operators: every conversation of an app (whoever its end user), a
conversation's messages with their feedback, and the app's usage per day. The admin API's logs
(``app.admin.app_logs``) read these; nothing here is scoped to an end user, so nothing here may serve one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import Conversation, EndUser, Message, MessageFeedback

__all__ = [
    "ConversationRow",
    "DailyUsage",
    "app_conversations",
    "conversation_messages",
    "daily_usage",
    "feedback_of_messages",
]


@dataclass(frozen=True, slots=True)
class ConversationRow:
    conversation: Conversation
    user: str  # the end user's ``user`` string
    messages: int


async def app_conversations(
    session: AsyncSession, app_id: str, *, offset: int, limit: int
) -> tuple[list[ConversationRow], int]:
    """A page of the app's conversations (deleted ones too: an operator sees them), most recently
    updated first, each with its end user and number of messages; and how many there are in all."""
    total = await session.scalar(select(func.count()).where(Conversation.app_id == app_id)) or 0
    counts = (
        select(Message.conversation_id, func.count().label("n"))
        .where(Message.app_id == app_id)
        .group_by(Message.conversation_id)
        .subquery()
    )
    stmt = (
        select(Conversation, EndUser.session_id, func.coalesce(counts.c.n, 0))
        .join(EndUser, EndUser.id == Conversation.end_user_id)
        .outerjoin(counts, counts.c.conversation_id == Conversation.id)
        .where(Conversation.app_id == app_id)
        .order_by(Conversation.updated_at.desc(), Conversation.id.desc())
        .offset(offset)
        .limit(limit)
    )
    rows = [ConversationRow(c, user, int(n)) for c, user, n in (await session.execute(stmt)).all()]
    return rows, int(total)


async def conversation_messages(
    session: AsyncSession, app_id: str, conversation_id: str, *, limit: int
) -> tuple[Conversation, str, list[Message]] | None:
    """The app's conversation with its end user's ``user`` and its last ``limit`` messages, oldest
    first; ``None`` when the app has no such conversation."""
    found = (
        await session.execute(
            select(Conversation, EndUser.session_id)
            .join(EndUser, EndUser.id == Conversation.end_user_id)
            .where(Conversation.id == conversation_id, Conversation.app_id == app_id)
        )
    ).first()
    if found is None:
        return None
    stmt = (
        select(Message)
        .where(Message.conversation_id == conversation_id)
        .order_by(Message.created_at.desc(), Message.id.desc())
        .limit(limit)
    )
    messages = list(await session.scalars(stmt))
    messages.reverse()
    return found[0], found[1], messages


async def feedback_of_messages(
    session: AsyncSession, message_ids: Sequence[str]
) -> dict[str, list[MessageFeedback]]:
    """Every end user's feedback on each of these messages."""
    if not message_ids:
        return {}
    out: dict[str, list[MessageFeedback]] = {}
    stmt = select(MessageFeedback).where(MessageFeedback.message_id.in_(message_ids))
    for row in await session.scalars(stmt):
        out.setdefault(row.message_id, []).append(row)
    return out


@dataclass(frozen=True, slots=True)
class DailyUsage:
    day: str  # YYYY-MM-DD (UTC)
    messages: int
    conversations: int
    end_users: int
    message_tokens: int
    answer_tokens: int
    total_price: Decimal
    errors: int
    latency: float  # mean seconds per answer


async def daily_usage(session: AsyncSession, app_id: str, since: datetime) -> list[DailyUsage]:
    """The app's messages since ``since`` summed per day (UTC), oldest day first."""
    day = func.date(Message.created_at)
    stmt = (
        select(
            day,
            func.count(),
            func.count(func.distinct(Message.conversation_id)),
            func.count(func.distinct(Conversation.end_user_id)),
            func.coalesce(func.sum(Message.message_tokens), 0),
            func.coalesce(func.sum(Message.answer_tokens), 0),
            func.count().filter(Message.status == "error"),
            func.coalesce(func.avg(Message.provider_response_latency), 0.0),
        )
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(Message.app_id == app_id, Message.created_at >= since)
        .group_by(day)
        .order_by(day)
    )
    rows = (await session.execute(stmt)).all()
    # Prices are stored as text (exact decimals): summed here, not by the database.
    prices: dict[str, Decimal] = {}
    price_rows = await session.execute(
        select(day, Message.total_price).where(Message.app_id == app_id, Message.created_at >= since)
    )
    for d, price in price_rows.all():
        prices[str(d)] = prices.get(str(d), Decimal(0)) + (price or Decimal(0))
    return [
        DailyUsage(
            str(d),
            int(n),
            int(c),
            int(u),
            int(mt),
            int(at),
            prices.get(str(d), Decimal(0)),
            int(e),
            float(lat),
        )
        for d, n, c, u, mt, at, e, lat in rows
    ]
