"""The event journal's live side (app.run.journal): the leading-edge throttle of followed streams, the
longer interval of the others, and followers that get every event exactly once, in order, whether it
came in a notification, from the store, or both — on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from sqlalchemy import select

from loopwright.app.dify.events import EventHead, MessageEnd
from loopwright.app.run.journal import EventJournal, Replayed, RunRecord
from loopwright.app.run.relay import Relay
from loopwright.store import streams
from loopwright.store.db import Database
from loopwright.store.models import RunEvent, utcnow
from loopwright.store.streams import Chunk
from tests.store.test_postgres import _reset, pg_empty, pg_url

__all__ = ["pg_empty", "pg_url"]  # fixtures, used by name

HEAD = EventHead("task-live", "msg-1", "conv-1", 1700000000)
LONG = 3600.0  # an interval no test waits for


class Clock:
    """The journal's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "postgresql"])
async def database(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[Database]:
    if request.param == "postgresql":
        db = Database(request.getfixturevalue("pg_url"))  # skipped without a server
        await _reset(db)
    else:
        db = Database(f"sqlite+aiosqlite:///{tmp_path / 'live.db'}")
    await db.create_all()
    yield db
    await db.close()


async def stored(db: Database) -> list[tuple[str, int, int, bool]]:
    async with db.sessionmaker() as s:
        rows = await s.scalars(select(RunEvent).order_by(RunEvent.task_id, RunEvent.first_seq))
        return [(r.task_id, r.first_seq, r.last_seq, r.final) for r in rows]


async def turns(n: int = 3) -> None:
    """Let the event loop run callbacks queued with ``call_soon`` (no time passes)."""
    for _ in range(n):
        await asyncio.sleep(0)


async def until(check: Callable[[], bool], what: str) -> None:
    """Wait (generously) until ``check()``: an event gate, not a timing assertion."""
    async with asyncio.timeout(30):
        while not check():  # noqa: ASYNC110 - a state of the code under test, which sets no event
            await asyncio.sleep(0.01)


def delta(text: str) -> str:
    """An ``agent_message`` delta as the journal keeps it (its text)."""
    return text


def opened(journal: EventJournal, head: EventHead = HEAD) -> RunRecord:
    record = journal.open(head, "app", "alice", None)
    assert record is not None
    return record


async def test_a_followed_stream_is_written_at_once_when_idle_and_then_once_per_interval(
    database: Database,
) -> None:
    clock = Clock()
    journal = EventJournal(database, interval=LONG, quiet_interval=LONG, clock=clock)
    record = opened(journal)
    journal.mark_followed(HEAD.task_id)
    await database.writer.flush()  # the stream's row

    record.add(delta("a"))  # the journal was idle: written on the next loop turn
    await turns()
    assert record.items == []
    await journal.committed()
    assert await stored(database) == [(HEAD.task_id, 1, 1, False)]

    clock.now += 1  # within the interval: the next events wait for its end, all runs together
    record.add(delta("b"))
    others = [opened(journal, EventHead(f"task-{i:02d}", f"m{i}", "c", 1)) for i in range(20)]
    for other in others:
        journal.mark_followed(other.task_id)
        other.add(delta("x"))
        other.add(delta("y"))
    await turns()
    assert record.items == ["b"] and all(o.items == ["x", "y"] for o in others)

    # The end of the interval (the pending timer's write, called here): one write for every run.
    journal.flush()
    await journal.committed()
    async with database.sessionmaker() as s:
        times = set(await s.scalars(select(RunEvent.created_at).where(RunEvent.first_seq == 2)))
        assert len(times) == 1  # task-live's (2, 2) and the others' (1, 2): one write
    assert (HEAD.task_id, 2, 2, False) in await stored(database)

    # Idle again for less than an interval: the next event waits, by the clock, for what is left.
    clock.now += LONG - 0.001
    record.add(delta("c"))
    await turns()
    assert record.items == ["c"]
    await until(lambda: not record.items, "the write at the end of the interval")
    await journal.committed()
    assert (HEAD.task_id, 3, 3, False) in await stored(database)


async def test_runs_that_end_together_share_one_write(database: Database) -> None:
    clock = Clock()
    journal = EventJournal(database, interval=LONG, quiet_interval=LONG, clock=clock)
    records = [opened(journal, EventHead(f"task-{i:02d}", f"m{i}", "c", 1)) for i in range(30)]
    await database.writer.flush()
    before = database.writer.batches
    for record in records:  # nobody follows: kept for the quiet interval
        record.add(delta("only"))
    await turns()
    assert all(r.items == ["only"] for r in records)
    for record in records:
        record.end()
    await turns()
    await journal.committed()
    assert database.writer.batches == before + 1
    rows = await stored(database)
    assert [(first, last, final) for _, first, last, final in rows] == [(1, 1, True)] * 30


async def test_a_stream_nobody_follows_waits_until_a_follower_comes(database: Database) -> None:
    clock = Clock()
    journal = EventJournal(database, interval=LONG, quiet_interval=LONG, clock=clock)
    record = opened(journal)
    await database.writer.flush()
    record.add(delta("kept"))
    await turns()
    assert record.items == ["kept"]  # not written yet: nobody follows, the quiet interval is long

    got: list[Replayed] = []

    async def follow() -> None:
        async for batch in journal.follow(HEAD.task_id, 0, ping_interval=LONG):
            got.extend(batch)

    follower = asyncio.ensure_future(follow())
    await until(lambda: len(got) == 1, "the follower made the stream written at once")
    clock.now += LONG  # idle: the next events go at once too
    record.add(delta("live"))
    record.add(MessageEnd(HEAD, {}).payload())
    record.end()
    await asyncio.wait_for(follower, 30)
    assert [(r.seq, r.item) for r in got[:2]] == [(1, "kept"), (2, "live")]
    assert [r.seq for r in got] == [1, 2, 3] and isinstance(got[2].item, dict)


class Reads:
    """Counts a journal's reads of the store."""

    def __init__(self, journal: EventJournal) -> None:
        self.count = 0
        real = journal._read

        async def counted(task_id: str, after: int) -> tuple[list[Replayed], int, bool]:
            self.count += 1
            return await real(task_id, after)

        journal._read = counted  # type: ignore[method-assign]


def notify(journal: EventJournal, origin: str, *chunks: Chunk) -> None:
    texts = [streams._dumps(c.items) for c in chunks]
    for payload in streams.notification(origin, chunks, texts):
        journal.heard_notification(payload)


async def test_live_and_stored_events_reach_a_follower_once_each_in_order(database: Database) -> None:
    """A follower in another process (``b``): chunks heard twice, heard while being read, heard with
    a gap (a notification lost) or without their events (too large) — each event once, in order, and
    a live event costs no read."""
    writer = EventJournal(database, interval=LONG, quiet_interval=LONG)
    follower = EventJournal(database, recheck_interval=LONG, poll_interval=LONG)
    follower.notified = True  # it waits for notifications: nothing is polled
    reads = Reads(follower)
    record = opened(writer)
    written: list[Chunk] = []
    sent = 0

    async def write(*texts: str, end: bool = False) -> Chunk:
        nonlocal sent
        for text in texts:
            record.add(delta(text))
        if end:
            record.end()
        await writer.settled()
        items: list[Any] = [f"{i}" for i in range(sent + 1, sent + len(texts) + 1)]
        chunk = Chunk(HEAD.task_id, sent + 1, sent + len(texts), items, end)
        sent += len(texts)
        written.append(chunk)
        return chunk

    got: list[Replayed] = []
    batches: asyncio.Queue[list[Replayed]] = asyncio.Queue()

    async def follow() -> None:
        async for batch in follower.follow(HEAD.task_id, 0, ping_interval=LONG):
            got.extend(batch)
            batches.put_nowait(batch)

    first = await write("1", "2", "3")
    task = asyncio.ensure_future(follow())
    assert [r.seq for r in await asyncio.wait_for(batches.get(), 30)] == [1, 2, 3]  # from the store
    assert reads.count == 1

    notify(follower, "elsewhere", first)  # heard after it was read: skipped
    second = await write("4", "5")
    notify(follower, "elsewhere", second, first)  # out of order, with a duplicate
    assert [r.seq for r in await asyncio.wait_for(batches.get(), 30)] == [4, 5]
    assert reads.count == 1  # taken from the notification

    notify(follower, follower.origin, await write("6"))  # its own process's: skipped
    follower.wake([HEAD.task_id])  # told to read: 6 comes from the store
    assert [r.seq for r in await asyncio.wait_for(batches.get(), 30)] == [6]
    third = written[-1]
    notify(follower, "elsewhere", third)  # and then heard: skipped

    await write("7")  # its notification is lost
    eighth = await write("8")
    notify(follower, "elsewhere", eighth)  # a gap: read the store
    assert [r.seq for r in await asyncio.wait_for(batches.get(), 30)] == [7, 8]
    assert reads.count == 3

    big = await write("9", "10")
    notify(follower, "elsewhere", Chunk(big.task_id, big.first_seq, big.last_seq, None, False))
    assert [r.seq for r in await asyncio.wait_for(batches.get(), 30)] == [9, 10]  # read: no items

    last = await write("11", end=True)
    notify(follower, "elsewhere", last)
    await asyncio.wait_for(task, 30)
    assert [r.seq for r in got] == list(range(1, 12))
    assert [r.item for r in got] == [str(i) for i in range(1, 12)]
    assert reads.count == 4  # the first read, the wake, the gap, the chunk without its events


def test_a_notification_carries_chunks_under_the_size_limit() -> None:
    small = Chunk("t-small", 1, 2, ["é" * 10, {"event": "x"}], False)
    big = Chunk("t-big", 3, 3, ["é" * 5000], False)  # 10,000 bytes in UTF-8
    many = [Chunk(f"t-{i:04d}", 1, 1, ["word"], False) for i in range(600)]
    chunks = [small, big, *many]
    payloads = streams.notification("origin", chunks, [streams._dumps(c.items) for c in chunks])
    assert len(payloads) > 1 and all(len(p.encode()) <= 8000 for p in payloads)
    wanted = {"t-small", "t-big", "t-0599"}
    heard = [c for p in payloads for c in streams.parse_notification(p, "other", wanted)]
    assert heard == [small, Chunk("t-big", 3, 3, None, False), many[-1]]
    assert [c for p in payloads for c in streams.parse_notification(p, "origin", wanted)] == []


async def test_a_follower_in_another_process_hears_chunks_with_their_events(pg_empty: Database) -> None:
    """PostgreSQL, two journals as two processes: the follower's request makes the writer write the
    stream with the short interval, chunks arrive in notifications (no read), and a lost notification
    is made up for from the store."""
    db = pg_empty
    await db.create_all()
    writer = EventJournal(db, interval=0.005, quiet_interval=LONG)
    follower = EventJournal(db, recheck_interval=LONG)
    relays = [Relay(db, writer), Relay(db, follower)]
    dropped: list[str] = []
    heard = follower.heard_notification

    def lossy(payload: str) -> None:
        if len(dropped) < 1 and streams.SEPARATOR in payload and HEAD.task_id in payload:
            dropped.append(payload)  # the first notification of the stream is lost
            return
        heard(payload)

    follower.heard_notification = lossy  # type: ignore[method-assign]
    try:
        for relay in relays:
            relay.start()
            assert relay._listener is not None
            await asyncio.wait_for(relay._listener.connected.wait(), 30)
        record = opened(writer)
        await db.writer.flush()
        reads = Reads(follower)
        got: list[Replayed] = []

        async def follow() -> None:
            async for batch in follower.follow(HEAD.task_id, 0, ping_interval=LONG):
                got.extend(batch)

        task = asyncio.ensure_future(follow())
        await until(lambda: record.followed, "the writer heard that the stream is followed")
        for i in range(1, 41):
            record.add(delta(str(i)))
            await asyncio.sleep(0.002)
        record.add(MessageEnd(HEAD, {}).payload())
        record.end()
        await asyncio.wait_for(task, 30)
    finally:
        for relay in relays:
            await relay.aclose()
    assert [r.seq for r in got] == list(range(1, 42))
    assert [r.item for r in got[:40]] == [str(i) for i in range(1, 41)]
    assert dropped and reads.count >= 2  # the first read, and the gap the lost notification left
    assert reads.count < 10  # most chunks came in notifications


async def test_a_follower_ahead_of_the_store_learns_that_the_stream_ended(database: Database) -> None:
    """A client saw events 1–5 live, but its worker died with only 1–2 stored: the sweep's final chunk
    (numbered 3) ends the re-attached stream instead of leaving it waiting."""
    journal = EventJournal(database, interval=LONG, quiet_interval=LONG)
    record = opened(journal)
    record.add(delta("a"))
    record.add(delta("b"))
    await journal.settled()
    async with database.transaction() as s:
        ended = await streams.interrupt_streams(s, lambda _s: {"event": "error"}, utcnow())
    assert ended == [HEAD.task_id]
    got: list[Replayed] = []
    async with asyncio.timeout(30):
        async for batch in journal.follow(HEAD.task_id, 5, ping_interval=LONG):
            got.extend(batch)
    assert got == []
    async with asyncio.timeout(30):
        async for batch in journal.follow(HEAD.task_id, 1, ping_interval=LONG):
            got.extend(batch)
    assert [(r.seq, r.item) for r in got] == [(2, "b"), (3, {"event": "error"})]


async def test_a_follower_that_does_not_keep_up_holds_a_bounded_number_of_chunks(database: Database) -> None:
    journal = EventJournal(database, interval=LONG, quiet_interval=LONG, recheck_interval=LONG)
    record = opened(journal)
    await database.writer.flush()
    events = journal.follow(HEAD.task_id, 0, ping_interval=LONG)
    record.add(delta("0"))
    await journal.settled()
    first = await asyncio.wait_for(anext(events), 30)  # the reader takes one batch, then stalls
    assert [r.seq for r in first] == [1]
    for i in range(1, 600):
        record.add(delta(str(i)))
        await journal.settled()  # a chunk each, handed to the stalled follower
    [follower] = journal._followers[HEAD.task_id]
    assert len(follower.heard) <= 256 and follower.reread
    record.end()
    await journal.settled()
    got = list(first)
    async with asyncio.timeout(30):
        async for batch in events:
            got.extend(batch)
    assert [r.item for r in got] == [str(i) for i in range(600)]
