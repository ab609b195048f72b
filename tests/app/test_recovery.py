"""No half rows after a crash (app.run.recovery): running messages of a dead process are marked
interrupted."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import OperationalError

from loopwright.app.dify.events import MessageEnd
from loopwright.app.run import recovery
from loopwright.app.run.recovery import WorkerLease
from loopwright.store import db as store_db
from loopwright.store.db import Database
from loopwright.store.models import Message, MessageAgentThought, Worker, utcnow
from loopwright.testing import Reply, ScriptedModel
from tests.app.test_messages import CONFIG, FC, ask, new_app, runtime_for


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


async def message_row(db: Database, message_id: str) -> Message:
    async with db.transaction() as s:
        row = await s.get(Message, message_id)
    assert row is not None
    return row


async def test_a_message_is_running_in_its_worker_until_it_ends(db: Database) -> None:
    app_id = await new_app(db, CONFIG)
    model = ScriptedModel(
        [Reply.text("hello"), Reply.text("one two three four five six")],
        features=FC,
        chunk_size=3,
        delay=0.01,
    )
    runtime = runtime_for(db, model)
    [e async for e in (await runtime.start(ask(app_id, "hi"))).events()]  # alice exists from here on
    run = await runtime.start(ask(app_id, "count"))
    events = run.events()
    first = await anext(events)  # the run is under way
    await db.writer.settled(first.head.conversation_id)
    during = await message_row(db, first.head.message_id)
    assert (during.status, during.worker_id) == ("running", runtime.lease.id)
    rest = [e async for e in events]
    assert isinstance(rest[-1], MessageEnd)
    after = await message_row(db, first.head.message_id)
    assert (after.status, after.worker_id, after.error) == ("normal", None, None)
    await runtime.shutdown()
    async with db.transaction() as s:
        assert await s.get(Worker, runtime.lease.id) is None  # a clean exit leaves no worker row


async def test_a_dead_workers_running_message_is_marked_interrupted_and_keeps_its_thoughts(
    db: Database,
) -> None:
    app_id = await new_app(db, CONFIG)
    clock = Clock()
    # A process that started a message, stored its first round, and was killed (its lease never
    # closed, its heartbeat stopped): simulated by a run whose rows are written and then abandoned.
    model = ScriptedModel(
        [Reply.tool_calls(("add", {"a": 2, "b": 3}), text="Adding."), Reply.text("It is 5.")],
        features=FC,
    )
    dead = runtime_for(db, model)
    dead.lease = WorkerLease(db, interval=3600, clock=clock)
    run = await dead.start(ask(app_id, "2+3?"))
    head = None
    async for event in run.events():
        head = event.head
        if type(event).__name__ == "AgentThought" and event.observation:  # type: ignore[attr-defined]
            break  # the first round is done and stored
    assert head is not None
    await db.writer.settled(head.conversation_id)
    async with db.transaction() as s:  # what a kill -9 leaves: the row running, the lease in place
        await s.execute(
            update(Message)
            .where(Message.id == head.message_id)
            .values(status="running", worker_id=dead.lease.id)
        )

    # A live worker that beats on time keeps its running messages.
    live = WorkerLease(db, interval=3600, clock=clock)
    await live.beat()
    clock.now += timedelta(seconds=60)
    await live.beat()
    assert (await message_row(db, head.message_id)).status == "running"  # 60 s < three beats of dead's

    # Three beats later the dead worker is stale: the next sweep marks its message.
    clock.now += timedelta(hours=3)
    assert await live.beat() == 1
    row = await message_row(db, head.message_id)
    assert row.status == "error" and row.worker_id is None
    assert row.error is not None and row.error.startswith("interrupted:")
    async with db.transaction() as s:
        thoughts = list(
            await s.scalars(
                select(MessageAgentThought).where(MessageAgentThought.message_id == head.message_id)
            )
        )
        assert await s.get(Worker, dead.lease.id) is None  # the dead worker is forgotten
    assert thoughts and thoughts[0].tool == "add" and thoughts[0].thought == "Adding."
    assert await live.beat() == 0  # marked once
    await asyncio.wait_for(dead.runs.shutdown(1.0), 10)


async def test_opening_a_lease_sweeps_what_a_dead_process_left(db: Database) -> None:
    app_id = await new_app(db, CONFIG)
    model = ScriptedModel([Reply.text("done")], features=FC)
    runtime = runtime_for(db, model)
    run = await runtime.start(ask(app_id, "hi"))
    end = [e async for e in run.events()][-1]
    assert isinstance(end, MessageEnd)
    await db.writer.settled(end.head.conversation_id)
    async with db.transaction() as s:  # as if a process that never registered had been running it
        await s.execute(
            update(Message)
            .where(Message.id == end.head.message_id)
            .values(status="running", worker_id="gone")
        )
    fresh = WorkerLease(db)
    await fresh.open()
    try:
        assert (await message_row(db, end.head.message_id)).status == "error"
    finally:
        await fresh.aclose()
        await runtime.shutdown()


async def running_under(db: Database, message_id: str, worker_id: str) -> None:
    async with db.transaction() as s:
        await s.execute(
            update(Message).where(Message.id == message_id).values(status="running", worker_id=worker_id)
        )


async def test_after_the_database_was_away_a_worker_takes_no_stale_lease_for_dead_until_it_beat_again(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An outage longer than three beats leaves every live worker's lease stale: the first beat after
    a failed one only renews (the others renew at theirs), the next sweeps the truly dead."""
    app_id = await new_app(db, CONFIG)
    runtime = runtime_for(db, ScriptedModel([Reply.text("one"), Reply.text("two")], features=FC))
    ends = [[e async for e in (await runtime.start(ask(app_id, q))).events()][-1] for q in ("a", "b")]
    for end in ends:
        await db.writer.settled(end.head.conversation_id)
    clock = Clock()
    me, dead = WorkerLease(db, interval=3600, clock=clock), WorkerLease(db, interval=3600, clock=clock)
    other_runs = [(ends[0].head.task_id, ends[0].head.message_id)]
    other = WorkerLease(db, interval=3600, clock=clock, running=lambda: other_runs)
    for lease in (me, other, dead):
        await lease.beat()
    await running_under(db, ends[0].head.message_id, other.id)  # a live worker's run
    await running_under(db, ends[1].head.message_id, dead.id)  # a dead worker's (it never beats again)
    before = clock.now  # every lease's last beat before the outage
    bounds: list[datetime] = []  # the durable takeover's: a worker not beaten since is taken for dead

    async def takeover(session: object, alive_since: datetime, gone: object) -> list[tuple[str, str]]:
        bounds.append(alive_since)
        return []

    me.takeover = takeover

    async def database_away(*args: object, **kwargs: object) -> None:
        raise OperationalError("UPDATE workers", {}, ConnectionRefusedError("the database is down"))

    with monkeypatch.context() as away:
        away.setattr(recovery.repo, "heartbeat", database_away)
        await me._beat_in_background()  # logged, not raised
    clock.now += timedelta(hours=4)  # back after more than three beats: every lease looks stale
    await me._beat_in_background()
    statuses = [(await message_row(db, end.head.message_id)).status for end in ends]
    assert statuses == ["running", "running"]
    await other.beat()  # the live worker's first beat after the outage
    clock.now += timedelta(hours=1)
    await me._beat_in_background()
    assert (await message_row(db, ends[0].head.message_id)).status == "running"
    row = await message_row(db, ends[1].head.message_id)
    assert row.status == "error" and row.error is not None and row.error.startswith("interrupted:")
    assert len(bounds) == 2 and bounds[0] <= before < bounds[1] == clock.now - timedelta(hours=3)
    await runtime.shutdown()


async def test_a_live_workers_run_whose_end_was_not_saved_is_marked_a_few_beats_later(db: Database) -> None:
    app_id = await new_app(db, CONFIG)
    clock = Clock()
    runtime = runtime_for(db, ScriptedModel([Reply.text("done"), Reply.text("again")], features=FC))
    runtime.lease = WorkerLease(db, interval=3600, clock=clock, running=runtime.runs.running)
    end = [e async for e in (await runtime.start(ask(app_id, "hi"))).events()][-1]
    await db.writer.settled(end.head.conversation_id)
    async with db.transaction() as s:  # its result was lost (the database was down when it ended)
        await s.execute(
            update(Message)
            .where(Message.id == end.head.message_id)
            .values(status="running", worker_id=runtime.lease.id)
        )
    assert await runtime.lease.beat() == 0  # too recent: it might be a run that is just starting
    assert (await message_row(db, end.head.message_id)).status == "running"
    clock.now += timedelta(hours=4)  # three beats (of an hour here) later
    assert await runtime.lease.beat() == 1
    row = await message_row(db, end.head.message_id)
    assert row.status == "error" and row.error is not None and row.error.startswith("interrupted:")
    # a run going on in this worker is never marked, however old
    run = await runtime.start(ask(app_id, "again"))
    clock.now += timedelta(hours=1)
    assert await runtime.lease.beat() == 0
    [e async for e in run.events()]
    await runtime.shutdown()


async def _locked_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, busy_timeout_ms: int
) -> tuple[Database, sqlite3.Connection]:
    """A SQLite database whose write lock another connection holds (``BEGIN IMMEDIATE``), with a
    short busy timeout and no pause between a lease's tries."""
    monkeypatch.setattr(store_db, "SQLITE_BUSY_TIMEOUT_MS", busy_timeout_ms)
    monkeypatch.setattr(recovery, "OPEN_RETRY_DELAY", 0.0)
    path = tmp_path / "locked.db"
    db = Database(f"sqlite+aiosqlite:///{path}")
    await db.create_all()
    other_writer = sqlite3.connect(path, isolation_level=None)
    other_writer.execute("BEGIN IMMEDIATE")
    return db, other_writer


async def test_a_lease_opens_when_the_database_was_busy_past_its_timeout_at_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under heavy write load SQLite can hold its lock past the busy timeout; registering this process
    # is tried again rather than failing the run that opened the lease.
    db, other_writer = await _locked_sqlite(tmp_path, monkeypatch, busy_timeout_ms=50)
    tries: list[int] = []
    beat = WorkerLease.beat

    async def beat_then_release(lease: WorkerLease) -> int:
        tries.append(1)
        try:
            return await beat(lease)
        finally:
            if other_writer.in_transaction:
                other_writer.execute("ROLLBACK")  # the other writer lets go after the first try

    monkeypatch.setattr(WorkerLease, "beat", beat_then_release)
    lease = WorkerLease(db)
    try:
        await lease.open()
        assert len(tries) == 2
        async with db.transaction() as s:
            assert await s.get(Worker, lease.id) is not None
    finally:
        await lease.aclose()
        other_writer.close()
        await db.close()


async def test_a_lease_gives_up_after_its_tries_with_the_databases_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, other_writer = await _locked_sqlite(tmp_path, monkeypatch, busy_timeout_ms=20)
    lease = WorkerLease(db)
    try:
        with pytest.raises(OperationalError, match="locked"):
            await lease.open()
        assert not lease.opened
    finally:
        other_writer.execute("ROLLBACK")
        other_writer.close()
        await db.close()
