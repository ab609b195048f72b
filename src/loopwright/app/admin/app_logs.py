"""An app's logs for its operators: every conversation (whoever asked), a conversation's messages each
with its agent log (:mod:`app.admin.agent_log`), its feedback and its usage, and the app's usage per day.

Unlike :mod:`app.admin.conversations`, nothing here is scoped to an end user: these serve the admin API
only, behind the admin token.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from loopwright.app.admin.agent_log import agent_log
from loopwright.app.admin.conversations import VersionsView
from loopwright.app.lookup import AppLookup
from loopwright.errors import NotFoundError, UserInputError
from loopwright.store import logs, threads
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import unix_seconds, utcnow

MAX_MESSAGES = 200  # of one conversation, the newest
MAX_USAGE_DAYS = 366


@dataclass(frozen=True, slots=True)
class ConversationLog:
    id: str
    name: str
    user: str  # the end user's ``user`` string
    status: str
    deleted: bool
    messages: int
    inputs: dict[str, Any]
    created_at: int  # Unix seconds
    updated_at: int
    end_user_id: str = ""  # the end user's id (the memory routes take it)


@dataclass(frozen=True, slots=True)
class ConversationLogPage:
    data: list[ConversationLog]
    total: int
    page: int
    limit: int
    has_more: bool


async def conversation_logs(
    db: Database, app_id: str, *, page: int = 1, limit: int = 20
) -> ConversationLogPage:
    """Page ``page`` (from 1) of the app's conversations, most recently updated first."""
    if page < 1 or not 1 <= limit <= 100:
        raise UserInputError("page must be at least 1 and limit between 1 and 100")
    async with db.sessionmaker() as session:
        rows, total = await logs.app_conversations(session, app_id, offset=(page - 1) * limit, limit=limit)
    data = [
        ConversationLog(
            r.conversation.id,
            r.conversation.name,
            r.user,
            r.conversation.status,
            r.conversation.is_deleted,
            r.messages,
            dict(r.conversation.inputs or {}),
            unix_seconds(r.conversation.created_at),
            unix_seconds(r.conversation.updated_at),
            r.conversation.end_user_id,
        )
        for r in rows
    ]
    return ConversationLogPage(data, total, page, limit, page * limit < total)


@dataclass(frozen=True, slots=True)
class Feedback:
    rating: str
    content: str | None
    end_user_id: str
    updated_at: int


@dataclass(frozen=True, slots=True)
class MessageLog:
    id: str
    query: str
    answer: str
    inputs: dict[str, Any]
    status: str
    error: str | None
    message_tokens: int
    answer_tokens: int
    total_price: str  # exact decimal, as text
    currency: str
    latency: float  # seconds
    created_at: int
    feedback: list[Feedback]
    agent_log: dict[str, Any]  # rounds, tool calls, times, tokens (app.admin.agent_log's shape)
    versions: VersionsView  # its place among its versions (Regenerate, an edited question)


@dataclass(frozen=True, slots=True)
class ConversationMessages:
    conversation: ConversationLog
    messages: list[MessageLog]


async def conversation_messages(
    db: Database, lookup: AppLookup, app_id: str, conversation_id: str
) -> ConversationMessages:
    """The app's conversation and its newest :data:`MAX_MESSAGES` messages, oldest first, each with its
    feedback and agent log; :class:`NotFoundError` for a conversation that is not the app's."""
    async with db.sessionmaker() as session:
        found = await logs.conversation_messages(session, app_id, conversation_id, limit=MAX_MESSAGES)
        if found is None:
            raise NotFoundError("Conversation Not Exists.")
        conv, user, messages = found
        ids = [m.id for m in messages]
        thoughts = await repo.thoughts_of_messages(session, ids)
        feedback = await logs.feedback_of_messages(session, ids)
        tree = await threads.load_tree(session, conversation_id)
    version = await lookup.config(conv.app_config_id)
    strategy = version.config.strategy if version is not None else "auto"
    head = ConversationLog(
        conv.id,
        conv.name,
        user,
        conv.status,
        conv.is_deleted,
        len(messages),
        dict(conv.inputs or {}),
        unix_seconds(conv.created_at),
        unix_seconds(conv.updated_at),
        conv.end_user_id,
    )
    out = [
        MessageLog(
            m.id,
            m.query,
            m.answer,
            dict(m.inputs or {}),
            m.status,
            m.error,
            m.message_tokens,
            m.answer_tokens,
            str(m.total_price),
            m.currency,
            m.provider_response_latency,
            unix_seconds(m.created_at),
            [
                Feedback(f.rating, f.content, f.end_user_id, unix_seconds(f.updated_at))
                for f in feedback.get(m.id, [])
            ],
            agent_log(m, thoughts.get(m.id, []), executor=user, strategy=strategy),
            VersionsView(tree.parent.get(m.id), tree.siblings(m.id)),
        )
        for m in messages
    ]
    return ConversationMessages(head, out)


@dataclass(frozen=True, slots=True)
class Usage:
    days: list[logs.DailyUsage]
    messages: int
    message_tokens: int
    answer_tokens: int
    total_price: str
    errors: int


async def usage(db: Database, app_id: str, *, days: int = 30) -> Usage:
    """The app's usage over the last ``days`` days, per day and in all."""
    if not 1 <= days <= MAX_USAGE_DAYS:
        raise UserInputError(f"days must be between 1 and {MAX_USAGE_DAYS}")
    since = utcnow().replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=days - 1)
    async with db.sessionmaker() as session:
        rows = await logs.daily_usage(session, app_id, since)
    return Usage(
        rows,
        sum(r.messages for r in rows),
        sum(r.message_tokens for r in rows),
        sum(r.answer_tokens for r in rows),
        str(sum((r.total_price for r in rows), start=Decimal(0))),
        sum(r.errors for r in rows),
    )
