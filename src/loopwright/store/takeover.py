"""The rows a durable run's takeover reads and claims (``app.run.durable``): a message that another
worker left running, the workers whose lease is stale, and the claims that make a run this worker's
while it is taken up. Every statement runs in the caller's transaction."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import Conversation, Message, MessageAgentThought, RunEvent, RunStream, Worker
from loopwright.store.repositories import RUNNING

__all__ = ["LeftRun", "claim_runs", "lock_takeovers", "stale_workers", "take_up_run"]


class LeftRun:
    """A message left running: its status now, its end user, the number of its last stored event."""

    __slots__ = ("end_user_id", "last_seq", "status")

    def __init__(self, status: str | None, end_user_id: str, last_seq: int) -> None:
        self.status = status
        self.end_user_id = end_user_id
        self.last_seq = last_seq


async def take_up_run(
    session: AsyncSession, task_id: str, message_id: str, conversation_id: str, worker_id: str
) -> LeftRun:
    """Read a message left running and, while it still is, make it this worker's: its stream's row
    claimed and its thought rows deleted (they are written again from the run's checkpoint; some may
    have been ahead of it)."""
    status = await session.scalar(select(Message.status).where(Message.id == message_id))
    if status != RUNNING:  # it ended (and was saved) before its end was recorded
        return LeftRun(status, "", 0)
    end_user_id = await session.scalar(
        select(Conversation.end_user_id).where(Conversation.id == conversation_id)
    )
    await session.execute(delete(MessageAgentThought).where(MessageAgentThought.message_id == message_id))
    last_seq = await session.scalar(select(func.max(RunEvent.last_seq)).where(RunEvent.task_id == task_id))
    await session.execute(update(RunStream).where(RunStream.task_id == task_id).values(worker_id=worker_id))
    return LeftRun(status, str(end_user_id or ""), int(last_seq or 0))


async def lock_takeovers(session: AsyncSession, key: int) -> None:
    """Serialize the workers' takeover sweeps (PostgreSQL: an advisory lock until the transaction
    ends; SQLite serializes writers itself)."""
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        await session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


async def stale_workers(session: AsyncSession, alive_since: datetime, me: str) -> list[str]:
    """The workers other than ``me`` whose last heartbeat is older than ``alive_since``."""
    return list(
        await session.scalars(select(Worker.id).where(Worker.heartbeat_at < alive_since, Worker.id != me))
    )


async def claim_runs(session: AsyncSession, task_ids: Collection[str], me: str) -> list[tuple[str, str]]:
    """Make the streams of ``task_ids`` that have not ended, and their messages still running,
    ``me``'s; returns (task id, message id) of each stream found."""
    rows = [
        (t, m)
        for t, m in await session.execute(
            select(RunStream.task_id, RunStream.message_id).where(RunStream.task_id.in_(list(task_ids)))
        )
    ]
    await session.execute(
        update(Message)
        .where(Message.id.in_([m for _, m in rows]), Message.status == RUNNING)
        .values(worker_id=me)
        .execution_options(synchronize_session=False)
    )
    await session.execute(
        update(RunStream)
        .where(RunStream.task_id.in_(list(task_ids)), RunStream.ended_at.is_(None))
        .values(worker_id=me)
        .execution_options(synchronize_session=False)
    )
    return rows
