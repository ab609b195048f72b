"""Runs paused for approvals (``pending_approvals``): read one, take one (once), find the overdue; their
Dify Human Input forms (``human_input_forms``): read one, use one (once)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import HumanInputForm, PendingApproval


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


async def get_form(session: AsyncSession, token_hash: str) -> HumanInputForm | None:
    return await session.get(HumanInputForm, token_hash)


async def use_form(session: AsyncSession, token_hash: str, action: str, now: datetime) -> bool:
    """Mark a form submitted; whether this caller did it (a form is used once, even by two requests
    at the same time). Commits."""
    result = await session.execute(
        update(HumanInputForm)
        .where(HumanInputForm.token_hash == token_hash, HumanInputForm.submitted_at.is_(None))
        .values(submitted_at=now, action=action)
    )
    await session.commit()
    return bool(getattr(result, "rowcount", 0))


async def reopen_form(session: AsyncSession, token_hash: str) -> None:
    """Take back a form's use (the run it decides could not be resumed: it still waits). Commits."""
    await session.execute(
        update(HumanInputForm)
        .where(HumanInputForm.token_hash == token_hash)
        .values(submitted_at=None, action=None)
    )
    await session.commit()
