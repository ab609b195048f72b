"""Run streams in the database: their rows, their event chunks, and the notifications that tell
other processes about new chunks and stops (``app.run_events``).

On PostgreSQL every write of chunks also sends ``NOTIFY`` on :data:`EVENTS_CHANNEL` (the task ids,
comma-separated) in the same transaction, so a listener hears of them only once they are committed;
a stop asked of a run in another process is a ``NOTIFY`` on :data:`STOPS_CHANNEL`. SQLite has no
notifications: the chunks are polled, and a stop is written on the stream's row (``stop_user``) for
the process running it to find.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import RunEvent, RunStream, Worker
from loopwright.store.writer import WriteFn

__all__ = [
    "EVENTS_CHANNEL",
    "STOPS_CHANNEL",
    "chunks_after",
    "get_stream",
    "interrupt_streams",
    "notifies",
    "purge_streams",
    "request_stop",
    "take_stops",
    "write_chunks",
]

EVENTS_CHANNEL = "loopwright_run_events"
STOPS_CHANNEL = "loopwright_stops"
MAX_NOTIFY_PAYLOAD = 7900  # PostgreSQL's limit is 8000 bytes


def notifies(session: AsyncSession) -> bool:
    """Whether this database sends notifications (PostgreSQL)."""
    bind = session.bind
    return bind is not None and bind.dialect.name == "postgresql"


async def _notify(session: AsyncSession, channel: str, payloads: Sequence[str]) -> None:
    for payload in payloads:
        await session.execute(select(func.pg_notify(channel, payload)))


def _joined(task_ids: Collection[str]) -> list[str]:
    """Task ids joined with commas, in payloads under PostgreSQL's size limit."""
    out: list[str] = []
    current: list[str] = []
    size = 0
    for task_id in task_ids:
        if current and size + len(task_id) + 1 > MAX_NOTIFY_PAYLOAD:
            out.append(",".join(current))
            current, size = [], 0
        current.append(task_id)
        size += len(task_id) + 1
    if current:
        out.append(",".join(current))
    return out


def write_chunks(chunks: Sequence[Mapping[str, Any]], now: datetime) -> WriteFn:
    """A write that stores event chunks (``run_events`` rows without ``created_at``), marks the
    streams whose final chunk is among them as ended, and tells listeners (PostgreSQL)."""
    rows = [{**c, "created_at": now} for c in chunks]
    ended = [c["task_id"] for c in chunks if c["final"]]
    task_ids = list(dict.fromkeys(c["task_id"] for c in chunks))

    async def write(session: AsyncSession) -> None:
        # A chunk already there (a stream the sweep ended while its worker was only slow) is skipped,
        # not allowed to fail the other streams' chunks.
        await session.execute(_insert_new(session), rows)
        if ended:
            await session.execute(
                update(RunStream).where(RunStream.task_id.in_(ended)).values(ended_at=now, stop_user=None)
            )
        if notifies(session):
            await _notify(session, EVENTS_CHANNEL, _joined(task_ids))

    return write


def _insert_new(session: AsyncSession) -> Any:
    """``INSERT … ON CONFLICT DO NOTHING`` into ``run_events`` for this database's dialect."""
    if notifies(session):
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(RunEvent).on_conflict_do_nothing()
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(RunEvent).on_conflict_do_nothing()


async def get_stream(session: AsyncSession, task_id: str) -> RunStream | None:
    return await session.get(RunStream, task_id)


async def chunks_after(session: AsyncSession, task_id: str, after: int) -> list[RunEvent]:
    """The chunks of a stream holding events numbered above ``after`` (or its final chunk, which may
    hold none: it starts above ``after``), in order."""
    query = (
        select(RunEvent)
        .where(RunEvent.task_id == task_id, (RunEvent.last_seq > after) | (RunEvent.first_seq > after))
        .order_by(RunEvent.first_seq)
    )
    return list(await session.scalars(query))


async def interrupt_streams(
    session: AsyncSession,
    final_item: Callable[[RunStream], Mapping[str, Any]],
    now: datetime,
    *,
    worker_id: str | None = None,
    running: Collection[str] = (),
    started_before: datetime | None = None,
) -> list[str]:
    """End every stream still open whose process is gone (no row in ``workers``: call it after the
    sweep removed the dead ones) — and those of ``worker_id`` (this live process) that it no longer
    runs (``running``: the task ids it runs; their end could not be written), started before
    ``started_before`` — with one final chunk holding ``final_item(stream)``; returns their task ids."""
    gone = RunStream.worker_id.is_(None) | RunStream.worker_id.not_in(select(Worker.id))
    if worker_id is not None:
        lost = (RunStream.worker_id == worker_id) & RunStream.task_id.not_in(list(running))
        if started_before is not None:
            lost = lost & (RunStream.started_at < started_before)
        gone = gone | lost
    open_streams = select(RunStream).where(RunStream.ended_at.is_(None), gone)
    orphans = list(await session.scalars(open_streams))
    if not orphans:
        return []
    ids = [s.task_id for s in orphans]
    latest = (
        select(RunEvent.task_id, func.max(RunEvent.last_seq))
        .where(RunEvent.task_id.in_(ids))
        .group_by(RunEvent.task_id)
    )
    last = {task_id: seq for task_id, seq in (await session.execute(latest)).all()}
    rows = []
    for stream in orphans:
        seq = int(last.get(stream.task_id) or 0) + 1
        item = json.dumps([final_item(stream)], ensure_ascii=False, separators=(",", ":"))
        rows.append(
            {"task_id": stream.task_id, "first_seq": seq, "last_seq": seq, "items": item, "final": True}
        )
    await write_chunks(rows, now)(session)
    return ids


async def purge_streams(session: AsyncSession, ended_before: datetime) -> int:
    """Forget the streams that ended before ``ended_before`` (their chunks go with them)."""
    old = select(RunStream.task_id).where(RunStream.ended_at < ended_before)
    await session.execute(delete(RunEvent).where(RunEvent.task_id.in_(old)))
    result = await session.execute(delete(RunStream).where(RunStream.ended_at < ended_before))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def request_stop(task_id: str, app_id: str, user: str) -> WriteFn:
    """A write asking whichever process runs ``task_id`` to stop it, if it is this app's and user's:
    a notification on PostgreSQL, else a mark on the stream's row (found by :func:`take_stops`)."""

    async def write(session: AsyncSession) -> None:
        if notifies(session):
            payload = json.dumps({"task_id": task_id, "app_id": app_id, "user": user})
            await _notify(session, STOPS_CHANNEL, [payload])
            return
        await session.execute(
            update(RunStream)
            .where(
                RunStream.task_id == task_id,
                RunStream.app_id == app_id,
                RunStream.user == user,
                RunStream.ended_at.is_(None),
            )
            .values(stop_user=user)
        )

    return write


async def take_stops(session: AsyncSession, task_ids: Collection[str]) -> list[tuple[str, str, str]]:
    """The stops marked on these streams (``task_id, app_id, user``), cleared (SQLite)."""
    marked = (RunStream.task_id.in_(list(task_ids))) & RunStream.stop_user.is_not(None)
    rows = (
        await session.execute(select(RunStream.task_id, RunStream.app_id, RunStream.stop_user).where(marked))
    ).all()
    if rows:
        await session.execute(update(RunStream).where(marked).values(stop_user=None))
    return [(t, a, u) for t, a, u in rows if u is not None]
