"""Runs paused for approvals (``pending_approvals``): read one, take one (once), find the overdue."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import PendingApproval


async def get_pending(session: AsyncSession, task_id: str) -> PendingApproval | None:
    return await session.get(PendingApproval, task_id)


async def take_pending(session: AsyncSession, task_id: str) -> bool:
    """Delete the paused run's row; whether this caller got it (two decisions, or a decision and the
    timeout, may race: only one resumes the run). Commits."""
    result = await session.execute(delete(PendingApproval).where(PendingApproval.task_id == task_id))
    await session.commit()
    return bool(getattr(result, "rowcount", 0))


async def overdue(session: AsyncSession, now: datetime, limit: int = 100) -> list[PendingApproval]:
    """Paused runs whose approval time is up, oldest deadline first."""
    query = (
        select(PendingApproval)
        .where(PendingApproval.expires_at <= now)
        .order_by(PendingApproval.expires_at)
        .limit(limit)
    )
    return list((await session.execute(query)).scalars())
