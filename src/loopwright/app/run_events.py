"""Resumable streams: every run's wire events numbered, kept in the database, and followed from any
process.

Each streaming run gets a :class:`RunRecord` (``EventJournal.open``): the run's task numbers its events
1, 2, 3… in the order its reader gets them (the SSE ``id:`` of each frame) and hands them to the record
— an append to a list, nothing more, so the stream itself goes no slower. Every ``interval`` (50 ms by
default, injectable) the journal writes what all runs added since, one chunk row per run, in one write
of the database writer (``store.streams``): a token-by-token stream costs at most 20 writes a second
whatever its speed. A run's last chunk is ``final``, written as soon as the run ends.

An item of a chunk is an ``agent_message`` delta as its text (nearly every event; the message's ids
are on the stream's row) or any other event's payload as Dify sends it (an ``error``'s code, status
and message already chosen: ``describe_error``).

:meth:`EventJournal.follow` replays a stream after a given event and then follows it live until its
final chunk: it reads the chunks from the database whenever it hears of new ones — at once in this
process (after the write committed), through ``NOTIFY`` from another process on PostgreSQL
(``app.relay``), or by a short poll (:data:`POLL_INTERVAL`) on SQLite, where all workers are on one
host. A stream that ended is kept for ``retention`` and then purged by the worker sweep
(``app.recovery``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from loopwright.app.wire_events import AgentMessage, ErrorEvent, EventHead, WireEvent
from loopwright.errors import NotFoundError
from loopwright.store import streams
from loopwright.store.db import Database
from loopwright.store.models import RunStream, utcnow
from loopwright.store.writer import Insert

log = logging.getLogger("loopwright.app")

FLUSH_INTERVAL = 0.05  # seconds: how long events wait to be written, batched
POLL_INTERVAL = 0.2  # seconds between reads of a followed stream where nothing notifies (SQLite)
RECHECK_INTERVAL = 5.0  # seconds: a follower re-reads even without news (a notification lost)
RETENTION = timedelta(hours=1)  # how long a stream that ended can be replayed
INTERNAL_MESSAGE = "Internal Server Error, please contact support."

Item = str | dict[str, Any]
ErrorFields = Callable[[BaseException], tuple[str, int, str]]


def _internal_error(_exc: BaseException) -> tuple[str, int, str]:
    return "internal_server_error", 500, INTERNAL_MESSAGE


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass(frozen=True, slots=True)
class Replayed:
    """One event of a followed stream: its number and its item (see the module's docstring)."""

    seq: int
    item: Item


class RunRecord:
    """The recording of one run's events (see the module's docstring)."""

    __slots__ = ("_journal", "ended", "items", "seq", "task_id")

    def __init__(self, journal: EventJournal, task_id: str) -> None:
        self._journal = journal
        self.task_id = task_id
        self.seq = 0  # the number of the last event added
        self.items: list[Item] = []  # added since the last write
        self.ended = False

    def add(self, event: WireEvent) -> None:
        self.seq += 1
        items = self.items
        if type(event) is AgentMessage:
            items.append(event.answer)
        else:
            items.append(self._journal.payload(event))
        if len(items) == 1:
            self._journal.pending(self)

    def end(self) -> None:
        """The run has ended: its last chunk, final, is written now (with what other runs added)."""
        if not self.ended:
            self.ended = True
            self._journal.pending(self)
            self._journal.flush()


class EventJournal:
    """The run streams of one process (see the module's docstring). ``notified``: other processes
    tell this one of new chunks (PostgreSQL), else followers poll."""

    def __init__(
        self,
        db: Database,
        *,
        interval: float = FLUSH_INTERVAL,
        poll_interval: float = POLL_INTERVAL,
        retention: timedelta = RETENTION,
    ) -> None:
        self.db = db
        self.interval = interval
        self.poll_interval = poll_interval
        self.retention = retention
        self.describe_error: ErrorFields = _internal_error  # the server sets its error table's
        self.notified = db.engine.dialect.name == "postgresql"
        self._pending: dict[str, RunRecord] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._followers: dict[str, set[asyncio.Event]] = {}
        self._writes: set[asyncio.Future[None]] = set()

    # --- recording ----------------------------------------------------------------------------------

    def open(self, head: EventHead, app_id: str, user: str, worker_id: str | None) -> RunRecord:
        """Start the stream of a run (its row is queued on the database writer)."""
        row = {
            "task_id": head.task_id,
            "app_id": app_id,
            "user": user,
            "message_id": head.message_id,
            "conversation_id": head.conversation_id,
            "message_created_at": head.created_at,
            "worker_id": worker_id,
            "started_at": utcnow(),
        }
        self.db.writer.submit(Insert(RunStream, row))
        return RunRecord(self, head.task_id)

    def payload(self, event: WireEvent) -> dict[str, Any]:
        if isinstance(event, ErrorEvent):
            return event.payload_with(*self.describe_error(event.error))
        return event.payload()

    def pending(self, record: RunRecord) -> None:
        self._pending[record.task_id] = record
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.interval, self.flush)

    def flush(self) -> asyncio.Future[None] | None:
        """Write what the runs added since the last write (the timer calls this); the future
        resolves once it is committed."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        records, self._pending = self._pending, {}
        chunks = []
        for record in records.values():
            items, record.items = record.items, []
            if not items and not record.ended:
                continue
            chunks.append(
                {
                    "task_id": record.task_id,
                    "first_seq": record.seq - len(items) + 1,
                    "last_seq": record.seq,
                    "items": _dumps(items),
                    "final": record.ended,
                }
            )
        if not chunks:
            return None
        done = self.db.writer.submit(streams.write_chunks(chunks, utcnow()))
        task_ids = [record.task_id for record in records.values()]
        done.add_done_callback(lambda fut: self._written(fut, task_ids))
        self._writes.add(done)
        return done

    async def settled(self) -> None:
        """Wait until everything recorded so far is written (tests, shutdown)."""
        self.flush()
        if self._writes:
            await asyncio.wait(set(self._writes))

    def _written(self, fut: asyncio.Future[None], task_ids: list[str]) -> None:
        self._writes.discard(fut)
        if fut.cancelled() or fut.exception() is not None:
            log.warning("run events could not be stored (%d streams): a re-attach misses them", len(task_ids))
            return
        self.wake(task_ids)

    # --- following ----------------------------------------------------------------------------------

    def wake(self, task_ids: list[str]) -> None:
        """New chunks of these streams are committed: their followers read them."""
        followers = self._followers
        if not followers:
            return
        for task_id in task_ids:
            for news in followers.get(task_id, ()):
                news.set()

    def wake_all(self) -> None:
        """Notifications may have been lost (the listening connection broke): every follower reads."""
        for events in self._followers.values():
            for news in events:
                news.set()

    async def head_of(self, task_id: str, app_id: str, user: str) -> EventHead:
        """The leading fields of a stream's events, if it is this app's and user's; else
        :class:`NotFoundError` (as for a stream that never was, or was purged)."""
        async with self.db.sessionmaker() as session:
            stream = await streams.get_stream(session, task_id)
        if stream is None or stream.app_id != app_id or stream.user != user:
            raise NotFoundError("Stream not found: no such task for this user, or it has expired")
        return EventHead(task_id, stream.message_id, stream.conversation_id, stream.message_created_at)

    async def follow(self, task_id: str, after: int, ping_interval: float) -> AsyncIterator[list[Replayed]]:
        """The stream's events numbered above ``after``, as they are stored, until its final chunk.
        An empty list: nothing came for ``ping_interval`` (a reader sends a ping)."""
        loop = asyncio.get_running_loop()
        news = asyncio.Event()
        self._followers.setdefault(task_id, set()).add(news)
        wait = RECHECK_INTERVAL if self.notified else self.poll_interval
        try:
            quiet_since = loop.time()
            while True:
                news.clear()  # before reading: a chunk committed after the read sets it again
                batch, after, final = await self._read(task_id, after)
                if batch:
                    quiet_since = loop.time()
                    yield batch
                if final:
                    return
                timeout = min(wait, max(quiet_since + ping_interval - loop.time(), 0.0))
                try:
                    await asyncio.wait_for(news.wait(), timeout)
                except TimeoutError:
                    if loop.time() - quiet_since >= ping_interval:
                        quiet_since = loop.time()
                        yield []
        finally:
            followers = self._followers.get(task_id)
            if followers is not None:
                followers.discard(news)
                if not followers:
                    del self._followers[task_id]

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
