"""Resumable streams: every run's wire events numbered, kept in the database, and followed from any
process.

Each streaming run gets a :class:`RunRecord` (``EventJournal.open``): the run's task numbers its events
1, 2, 3… in the order its reader gets them (the SSE ``id:`` of each frame) and hands them to the record
— an append to a list, nothing more, so the stream itself goes no slower. The journal writes what the
runs added in chunks, one row per run per write, all runs' rows in one write of the database writer
(``store.streams``), throttled so that the write rate stays bounded whatever the number and speed of
the streams:

- a stream that someone follows is written with a **leading-edge throttle** of ``interval`` (10 ms by
  default): an event that finds the journal idle for ``interval`` is written at once (on the next turn
  of the event loop, with whatever else that turn added); later ones wait for the end of the interval.
  A sparse event is thus relayed with next to no delay, and a busy journal writes at most
  ``1 / interval`` times a second;
- a stream nobody follows is written every ``quiet_interval`` (250 ms): its events are only kept for a
  client that may come back, so fewer, larger rows do (the cost of the journal is mostly per row). A
  client that re-attaches makes it followed, which writes what it has at once;
- a run's last chunk is ``final``, written as a followed stream's when the run ends (runs that end
  together share a write).

Who follows what: followers in this process are known; a follower in another process asks for its
stream by a notification (``FOLLOWS_CHANNEL``, PostgreSQL). On SQLite with several workers nothing
reaches the others, so every stream is treated as followed (``follow_all``).

An item of a chunk is an ``agent_message`` delta as its text (nearly every event; the message's ids
are on the stream's row) or any other event's payload as Dify sends it (an ``error``'s code, status
and message already chosen), as the run's encoder made it (``app.dify.encoder``).

:meth:`EventJournal.follow` replays a stream after a given event and then follows it live until its
final chunk. The stored chunks are the source of truth: a follower reads them when it starts, and
after that takes the chunks it hears of live — handed over in memory in this process once their write
committed, and carried in the ``NOTIFY`` payload itself from another process on PostgreSQL
(``app.run.relay``), so a live event costs the follower no read. Only followed streams' chunks and last
chunks are notified: a follower elsewhere asks for its stream before its first read, so a chunk
written before the writer heard the request is either in that read or revealed as a gap by the next
chunk it hears (the last one at the latest). Every event carries its number and a
follower keeps the number of the last one it gave out, so each event is given exactly once, in order,
whichever way it came: a chunk heard twice is skipped, a gap (a notification lost, a chunk too large
for one) or a quiet ``recheck_interval`` makes it read the stored chunks again. On SQLite followers
in other processes hear nothing: they read every ``poll_interval``.

With ``enabled`` false (``LOOPWRIGHT_RESUMABLE_STREAMS=false``: one worker whose clients never
re-attach) nothing is recorded and a re-attach is answered ``404`` with a message saying so. A stream
that ended is kept for ``retention`` and then purged by the worker sweep (``app.run.recovery``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from loopwright.app.dify.events import EventHead
from loopwright.errors import NotFoundError
from loopwright.store import streams
from loopwright.store.db import Database
from loopwright.store.models import RunStream, utcnow
from loopwright.store.streams import Chunk, Item
from loopwright.store.writer import Insert

log = logging.getLogger("loopwright.app")

FLUSH_INTERVAL = 0.01  # seconds: at most one write of followed streams per interval (leading edge)
QUIET_INTERVAL = 0.25  # seconds: how long the events of a stream nobody follows wait to be written
POLL_INTERVAL = 0.2  # seconds between reads of a followed stream where nothing notifies (SQLite)
RECHECK_INTERVAL = 5.0  # seconds: a follower re-reads even without news (a notification lost)
MAX_HEARD = 256  # chunks a follower holds for its reader; more: they are dropped and read again
RETENTION = timedelta(hours=1)  # how long a stream that ended can be replayed
OFF_MESSAGE = (
    "Resumable streams are turned off on this server (LOOPWRIGHT_RESUMABLE_STREAMS=false): "
    "a stream cannot be re-attached"
)

__all__ = ["EventJournal", "Item", "Replayed", "RunRecord"]


@dataclass(frozen=True, slots=True)
class Replayed:
    """One event of a followed stream: its number and its item (see the module's docstring)."""

    seq: int
    item: Item


def stream_row(head: EventHead, app_id: str, user: str, worker_id: str | None) -> dict[str, Any]:
    """The ``run_streams`` row of a run that starts now."""
    return {
        "task_id": head.task_id,
        "app_id": app_id,
        "user": user,
        "message_id": head.message_id,
        "conversation_id": head.conversation_id,
        "message_created_at": head.created_at,
        "worker_id": worker_id,
        "started_at": utcnow(),
    }


class RunRecord:
    """The recording of one run's events (see the module's docstring)."""

    __slots__ = ("_journal", "carry", "ended", "followed", "items", "seq", "task_id")

    def __init__(self, journal: EventJournal, task_id: str) -> None:
        self._journal = journal
        self.task_id = task_id
        self.seq = 0  # the number of the last event added
        self.items: list[Item] = []  # added since the last write
        self.ended = False
        self.followed = journal.follow_all  # written with the short interval
        # the events since the run's last step boundary, when a durable run carries them in its
        # recorded steps (app.run.durable); None: not kept
        self.carry: list[Item] | None = None

    def add(self, item: Item) -> None:
        """One more event, as its encoder made its item (``app.dify.encoder``)."""
        self.seq += 1
        items = self.items
        items.append(item)
        if self.carry is not None:
            self.carry.append(item)
        if len(items) == 1:
            self._journal.pending(self)

    def end(self) -> None:
        """The run has ended: its last chunk, final, is written with the followed streams' next write
        (at once if the journal was idle for ``interval``: runs that end together share one write)."""
        if not self.ended:
            self.ended = True
            self._journal.ended(self)


class _Follower:
    """One reader of a stream: the chunks heard live since it last looked, and whether it must read
    the stored ones (told so, or it heard of chunks without their events)."""

    __slots__ = ("heard", "news", "reread")

    def __init__(self) -> None:
        self.news = asyncio.Event()
        self.heard: list[Chunk] = []
        self.reread = False


class EventJournal:
    """The run streams of one process (see the module's docstring). ``notified``: other processes
    tell this one of new chunks (PostgreSQL), else followers in other processes poll."""

    def __init__(
        self,
        db: Database,
        *,
        interval: float = FLUSH_INTERVAL,
        quiet_interval: float = QUIET_INTERVAL,
        poll_interval: float = POLL_INTERVAL,
        recheck_interval: float = RECHECK_INTERVAL,
        retention: timedelta = RETENTION,
        enabled: bool = True,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.db = db
        self.interval = interval
        self.quiet_interval = quiet_interval
        self.poll_interval = poll_interval
        self.recheck_interval = recheck_interval
        self.retention = retention
        self.enabled = enabled
        self.notified = db.engine.dialect.name == "postgresql"
        # Every stream counts as followed: followers elsewhere cannot say so (SQLite, several workers)
        self.follow_all = False
        self.origin = uuid.uuid4().hex[:12]  # this process, in its notifications (its own are skipped)
        self._clock = clock  # the loop's time by default; tests pass their own
        self._records: dict[str, RunRecord] = {}  # the runs recorded here that have not ended
        self._soon: dict[str, RunRecord] = {}  # followed runs with events to write
        self._later: dict[str, RunRecord] = {}  # other runs with events to write
        self._soon_timer: asyncio.Handle | None = None
        self._later_timer: asyncio.TimerHandle | None = None
        self._last_soon = -1e18  # clock time of the last write of followed runs
        self._followers: dict[str, set[_Follower]] = {}
        self._writes: set[asyncio.Future[None]] = set()

    def _now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    # --- recording ----------------------------------------------------------------------------------

    def record(self, task_id: str, seq: int) -> RunRecord | None:
        """The record of a stream that goes on (its row exists), numbered on from ``seq``, its last
        stored event; None when the journal is off."""
        if not self.enabled:
            return None
        record = RunRecord(self, task_id)
        record.seq = seq
        record.followed = record.followed or task_id in self._followers
        self._records[task_id] = record  # a follower here makes it written at once
        return record

    def open(self, head: EventHead, app_id: str, user: str, worker_id: str | None) -> RunRecord | None:
        """Start the stream of a run (its row is queued on the database writer); None when the journal
        is off."""
        if not self.enabled:
            return None
        self.db.writer.submit(Insert(RunStream, stream_row(head, app_id, user, worker_id)))
        record = RunRecord(self, head.task_id)
        if head.task_id in self._followers:
            record.followed = True
        self._records[head.task_id] = record
        return record

    def pending(self, record: RunRecord) -> None:
        """``record`` has events to write (its first since the last write)."""
        if record.followed or record.ended:
            self._soon[record.task_id] = record
            self._schedule_soon()
            return
        self._later[record.task_id] = record
        if self._later_timer is None:
            loop = asyncio.get_running_loop()
            self._later_timer = loop.call_later(self.quiet_interval, self._flush_later)

    def _schedule_soon(self) -> None:
        if self._soon_timer is not None:
            return
        loop = asyncio.get_running_loop()
        wait = self._last_soon + self.interval - self._now()
        if wait <= 0:  # idle for an interval: at once, with what the rest of this loop turn adds
            self._soon_timer = loop.call_soon(self._flush_soon)
        else:
            self._soon_timer = loop.call_later(wait, self._flush_soon)

    def ended(self, record: RunRecord) -> None:
        """Write ``record``'s final chunk with the next write of followed streams."""
        self._records.pop(record.task_id, None)
        self._later.pop(record.task_id, None)
        self._soon[record.task_id] = record
        self._schedule_soon()

    def mark_followed(self, task_id: str) -> None:
        """Someone follows ``task_id``: if it runs here, it is written with the short interval from
        now on, and what it has is written now."""
        record = self._records.get(task_id)
        if record is None or record.followed:
            return
        record.followed = True
        if self._later.pop(task_id, None) is not None:
            self._soon[task_id] = record
            self._schedule_soon()

    def _flush_soon(self) -> None:
        if self._soon_timer is not None:
            self._soon_timer.cancel()
            self._soon_timer = None
        self._last_soon = self._now()
        records, self._soon = self._soon, {}
        self._write(records.values())

    def _flush_later(self) -> None:
        self._later_timer = None
        records, self._later = self._later, {}
        self._write(records.values())

    def flush(self) -> asyncio.Future[None] | None:
        """Write what every run added since its last write now; the future resolves once it is
        committed (None: nothing to write)."""
        if self._soon_timer is not None:
            self._soon_timer.cancel()
            self._soon_timer = None
        if self._later_timer is not None:
            self._later_timer.cancel()
            self._later_timer = None
        self._last_soon = self._now()
        records = {**self._later, **self._soon}
        self._soon, self._later = {}, {}
        return self._write(records.values())

    def _write(self, records: Iterable[RunRecord]) -> asyncio.Future[None] | None:
        chunks = []
        announced = []  # told to other processes: followed streams' chunks, and last chunks
        for record in records:
            items, record.items = record.items, []
            if not items and not record.ended:
                continue
            last = record.seq
            chunk = Chunk(record.task_id, last - len(items) + 1, last, items, record.ended)
            chunks.append(chunk)
            if record.followed or record.ended:
                announced.append(chunk)
        if not chunks:
            return None
        origin = self.origin if self.notified else None
        write = streams.write_chunks(chunks, utcnow(), origin=origin, announced=announced)
        done = self.db.writer.submit(write)
        done.add_done_callback(lambda fut: self._written(fut, chunks))
        self._writes.add(done)
        return done

    async def settled(self) -> None:
        """Wait until everything recorded so far is written (tests, shutdown)."""
        self.flush()
        if self._writes:
            await asyncio.wait(set(self._writes))

    async def committed(self) -> None:
        """Wait until the writes already made have landed (none is started: see :meth:`settled`)."""
        if self._writes:
            await asyncio.wait(set(self._writes))

    def _written(self, fut: asyncio.Future[None], chunks: list[Chunk]) -> None:
        self._writes.discard(fut)
        if fut.cancelled() or fut.exception() is not None:
            log.warning("run events could not be stored (%d streams): a re-attach misses them", len(chunks))
            return
        self.heard(chunks)

    # --- following ----------------------------------------------------------------------------------

    def heard(self, chunks: Iterable[Chunk]) -> None:
        """These chunks are committed (written here, or heard of from another process): their
        followers take them."""
        followers = self._followers
        if not followers:
            return
        for chunk in chunks:
            for follower in followers.get(chunk.task_id, ()):
                if len(follower.heard) < MAX_HEARD:
                    follower.heard.append(chunk)
                else:  # a reader that does not keep up: it reads the store instead of holding more
                    follower.heard.clear()
                    follower.reread = True
                follower.news.set()

    def heard_notification(self, payload: str) -> None:
        """A notification of new chunks from a process (``store.streams.notification``); this
        process's own are skipped (its followers had them already)."""
        if not self._followers:
            return
        self.heard(streams.parse_notification(payload, self.origin, self._followers))

    def wake(self, task_ids: Iterable[str]) -> None:
        """New chunks of these streams are stored (the sweep ended them): their followers read them."""
        followers = self._followers
        if not followers:
            return
        for task_id in task_ids:
            for follower in followers.get(task_id, ()):
                follower.reread = True
                follower.news.set()

    def wake_all(self) -> None:
        """Notifications may have been lost (the listening connection broke): every follower reads."""
        self.wake(list(self._followers))

    async def head_of(self, task_id: str, app_id: str, user: str) -> EventHead:
        """The leading fields of a stream's events, if it is this app's and user's; else
        :class:`NotFoundError` (as for a stream that never was, or was purged, or the journal is off)."""
        if not self.enabled:
            raise NotFoundError(OFF_MESSAGE)
        async with self.db.sessionmaker() as session:
            stream = await streams.get_stream(session, task_id)
        if stream is None or stream.app_id != app_id or stream.user != user:
            raise NotFoundError("Stream not found: no such task for this user, or it has expired")
        return EventHead(task_id, stream.message_id, stream.conversation_id, stream.message_created_at)

    async def follow(self, task_id: str, after: int, ping_interval: float) -> AsyncIterator[list[Replayed]]:
        """The stream's events numbered above ``after``, once each and in order, until its final
        chunk. An empty list: nothing came for ``ping_interval`` (a reader sends a ping)."""
        loop = asyncio.get_running_loop()
        follower = _Follower()
        self._followers.setdefault(task_id, set()).add(follower)  # before the first read: nothing missed
        self._ask_to_follow(task_id)
        news = follower.news
        wait = self.recheck_interval if self.notified else self.poll_interval
        try:
            quiet_since = read_at = loop.time()
            read = True  # the stored chunks first
            while True:
                news.clear()  # before looking: a chunk heard after it sets it again
                heard, follower.heard = follower.heard, []
                batch: list[Replayed] = []
                final = False
                if not read and not follower.reread:
                    after, final, read = _take(heard, after, batch)
                if (read or follower.reread) and not final:
                    # heard chunks are committed, so this read has them: they are left out
                    follower.reread = read = False
                    stored, after, final = await self._read(task_id, after)
                    batch.extend(stored)
                    read_at = loop.time()
                if batch:
                    quiet_since = loop.time()
                    yield batch
                if final:
                    return
                timeout = min(wait - (loop.time() - read_at), ping_interval - (loop.time() - quiet_since))
                try:
                    await asyncio.wait_for(news.wait(), max(timeout, 0.0))
                except TimeoutError:
                    if loop.time() - read_at >= wait:
                        read = True  # a notification may have been lost; poll (SQLite)
                    if loop.time() - quiet_since >= ping_interval:
                        quiet_since = loop.time()
                        yield []
        finally:
            followers = self._followers.get(task_id)
            if followers is not None:
                followers.discard(follower)
                if not followers:
                    del self._followers[task_id]

    async def stored(self, task_id: str) -> tuple[list[Replayed], bool]:
        """The stream's events stored now (its writes waiting are made first), and whether it ended."""
        fut = self.flush()
        if fut is not None:
            await fut
        events, _, final = await self._read(task_id, 0)
        return events, final

    def _ask_to_follow(self, task_id: str) -> None:
        """Make the run write this stream with the short interval: here, or by a notification to the
        process running it (PostgreSQL; on SQLite with several workers every stream is)."""
        if task_id in self._records:
            self.mark_followed(task_id)
        elif self.notified:
            self.db.writer.submit(streams.request_follow(task_id))

    async def _read(self, task_id: str, after: int) -> tuple[list[Replayed], int, bool]:
        async with self.db.sessionmaker() as session:
            chunks = await streams.chunks_after(session, task_id, after)
        out: list[Replayed] = []
        final = False
        for chunk in chunks:
            items = json.loads(chunk.items)
            out.extend(Replayed(chunk.first_seq + i, item) for i, item in enumerate(items))
            final = final or chunk.final
        out = [r for r in out if r.seq > after]
        if chunks:
            after = max(after, chunks[-1].last_seq)
        return out, after, final


def _take(heard: list[Chunk], after: int, batch: list[Replayed]) -> tuple[int, bool, bool]:
    """Add to ``batch`` the events of ``heard`` that follow ``after`` without a gap; the new ``after``,
    whether the final chunk was reached, and whether the stored chunks must be read (a gap, or a chunk
    heard of without its events)."""
    if len(heard) > 1:
        heard.sort(key=lambda c: c.first_seq)
    for chunk in heard:
        if chunk.last_seq <= after and not chunk.final:
            continue  # heard twice, or already read
        if chunk.first_seq > after + 1 or chunk.items is None:
            return after, False, True
        first, items = chunk.first_seq, chunk.items
        batch.extend(Replayed(first + i, items[i]) for i in range(max(0, after + 1 - first), len(items)))
        after = max(after, chunk.last_seq)
        if chunk.final:
            return after, True, False
    return after, False, False
