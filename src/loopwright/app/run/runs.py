"""Running messages, by ``task_id``: the in-process executor and the run handle.

Each run is an asyncio task that consumes the message's event generator (``app.run.messages``); whoever
started it only takes what it produces. A client that goes away therefore does not stop the run: it
continues to its end and is saved. ``stop`` sets the run's stop event and cancels the run's task where
it waits (the model stream or a tool call); the generator takes that as a stop: it saves with status
``stopped`` and ends with ``message_end``.

How events reach a reader (:meth:`Run.pump`, given an :class:`EventSink`): while the reader waits with
nothing queued and its sink takes writes without waiting, the run's task writes each event to the sink
itself — one task woken per event instead of two, and no queue in between. Otherwise events go into
the run's queue and the reader takes them (several at once when they have piled up): a reader that is
slow or stuck never holds a run up, and attaches again once it has caught up. Order is kept because
the run writes directly only while the queue is empty. The sink decides the encoding (the server's
writes SSE frames); nothing here knows HTTP.

Pings: one ticker per registry queues :data:`PING` for each run that has been silent for the ping
interval — rather than a timeout around every read of every stream. Stops asked of another process
reach this one through the relay (:mod:`app.run.relay`): pushed on PostgreSQL; on SQLite with several
workers the same ticker looks for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from loopwright.app.dify.events import ErrorEvent, EventHead, MessageEnd, ToolApprovalRequired, WireEvent
from loopwright.app.run.journal import RunRecord
from loopwright.app.run.relay import Relay
from loopwright.model.entities import Usage
from loopwright.tools.base import ToolOutput

log = logging.getLogger("loopwright.app")

TICKS_PER_INTERVAL = 4  # a ping follows between 1 and 1.25 intervals of silence


class Ping:
    """Queued by the ticker for a silent run; a reader sends Dify's ``event: ping``."""

    __slots__ = ()


PING = Ping()
Queued = WireEvent | Ping | None  # None: the run has ended


class EventSink(Protocol):
    """Where a reader of a run wants its events: ``direct`` says whether :meth:`ready` can tell that a
    write now would not wait (only then may the run's own task write)."""

    direct: bool

    def ready(self) -> bool: ...

    async def write(self, events: Sequence[WireEvent | Ping]) -> None: ...


Status = Literal["normal", "error", "stopped", "waiting"]  # waiting: paused for approvals


@dataclass(slots=True)
class RunOutcome:
    """How a run ended, once it is saved: the status and answer stored on the message, the error that
    ended it, its last ``message_end`` (if it got one), the files its tools made and its usage."""

    status: Status
    answer: str
    error: BaseException | None = None
    end: MessageEnd | None = None
    files: list[ToolOutput] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    approval: ToolApprovalRequired | None = None  # status "waiting": the calls it waits on


@dataclass(eq=False)
class Run:
    """The handle of one running message: its ids, its events (:meth:`events` or :meth:`pump`) and its
    outcome (:meth:`outcome`)."""

    head: EventHead
    app_id: str
    user: str
    keep_events: bool = True  # False: nobody reads the events (blocking mode, app-as-tool)
    stop_event: asyncio.Event = field(default_factory=asyncio.Event)
    queue: asyncio.Queue[Queued] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    last_event: float = 0.0  # loop time of the last event sent or queued (pings included)
    sink: EventSink | None = None  # set while the run may write to its reader itself
    record: RunRecord | None = None  # where its events are kept for a re-attach (app.run.journal)
    _outcome: asyncio.Future[RunOutcome] | None = None

    @property
    def task_id(self) -> str:
        return self.head.task_id

    def done(self) -> bool:
        return self.task is not None and self.task.done()

    def ended_as(self) -> Status | None:
        """The status the run ended with, once it has been saved (None before)."""
        fut = self._outcome
        if fut is None or not fut.done() or fut.cancelled():
            return None
        return fut.result().status

    def finish(self, outcome: RunOutcome) -> None:
        """Record how the run ended (the message pipeline calls this once it is saved)."""
        fut = self._future()
        if not fut.done():
            fut.set_result(outcome)

    async def outcome(self) -> RunOutcome:
        """Wait for the run to end and be saved."""
        return await asyncio.shield(self._future())

    def _future(self) -> asyncio.Future[RunOutcome]:
        if self._outcome is None:
            self._outcome = asyncio.get_running_loop().create_future()
        return self._outcome

    async def events(self) -> AsyncIterator[WireEvent]:
        """The run's events until it ends (pings left out)."""
        while True:
            event = await self.queue.get()
            if event is None:
                return
            if not isinstance(event, Ping):
                yield event

    async def pump(self, sink: EventSink) -> None:
        """Give the run's events to ``sink`` until the run ends (see the module's docstring).
        Cancelling this (a reader that went away) leaves the run going."""
        queue = self.queue
        try:
            while True:
                if sink.direct and queue.empty():
                    self.sink = sink
                event = await queue.get()
                self.sink = None
                batch: list[WireEvent | Ping] = []
                while event is not None:
                    batch.append(event)
                    if queue.empty():
                        break
                    event = queue.get_nowait()
                if batch:
                    await sink.write(batch)
                if event is None:
                    return
        finally:
            self.sink = None


class RunRegistry:
    """The in-process executor: the runs of one process, each an asyncio task."""

    def __init__(self, ping_interval: float = 10.0, relay: Relay | None = None) -> None:
        self._runs: dict[str, Run] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._ping_interval = ping_interval
        self._relay = relay
        self._stop_poll = relay.stop_poll_interval if relay is not None else None
        if relay is not None:
            relay.on_stop = self._stop_local
        self._ticker: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._runs)

    def get(self, task_id: str) -> Run | None:
        return self._runs.get(task_id)

    def running(self) -> list[tuple[str, str]]:
        """The task and message ids of the runs going on."""
        return [(run.task_id, run.head.message_id) for run in self._runs.values()]

    def start(self, run: Run, events: AsyncGenerator[WireEvent, None]) -> Run:
        """Register ``run`` and start consuming ``events`` into it."""
        loop = asyncio.get_running_loop()
        run.last_event = loop.time()
        run._future()  # created on this loop, before anyone waits for it
        self._runs[run.task_id] = run
        task = loop.create_task(self._consume(run, events), name=f"loopwright-run-{run.task_id}")
        run.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if self._ticker is None or self._ticker.done():
            self._ticker = loop.create_task(self._tick(), name="loopwright-pings")
        return run

    async def _consume(self, run: Run, events: AsyncGenerator[WireEvent, None]) -> None:
        loop = asyncio.get_running_loop()
        queue = run.queue
        keep = run.keep_events
        record = run.record if keep else None
        try:
            async for event in events:
                if not keep:
                    continue
                if record is not None:
                    record.add(event)  # numbered as its reader gets it: the SSE id
                sink = run.sink
                if sink is not None and sink.ready() and queue.empty():
                    await _write(run, sink, event)
                else:
                    queue.put_nowait(event)
                run.last_event = loop.time()
        except Exception as exc:  # the pipeline reports its own errors; this is a failure around it
            log.exception("run %s failed", run.task_id)
            error = ErrorEvent(run.head, exc)
            if record is not None:
                record.add(error)
            queue.put_nowait(error)
            run.finish(RunOutcome("error", "", exc))
        finally:
            with contextlib.suppress(Exception):
                await events.aclose()
            queue.put_nowait(None)
            if run.record is not None:
                run.record.end()
            self._runs.pop(run.task_id, None)
            run.finish(RunOutcome("stopped", ""))  # only if the pipeline never got to record one

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        every = self._ping_interval / TICKS_PER_INTERVAL
        if self._stop_poll is not None:
            every = min(every, self._stop_poll)
        while self._runs:
            await asyncio.sleep(every)
            now = loop.time()
            for run in self._runs.values():
                if run.keep_events and now - run.last_event >= self._ping_interval:
                    run.queue.put_nowait(PING)
                    run.last_event = now
            if self._stop_poll is not None:
                await self._take_stops()

    async def _take_stops(self) -> None:
        assert self._relay is not None
        try:
            await self._relay.take_stops(list(self._runs))
        except Exception as exc:  # the database is busy or gone: try again next tick
            log.warning("could not read stop requests: %s", exc)

    def stop(self, task_id: str, app_id: str, user: str) -> bool:
        """Stop the run if it belongs to this app and user; whether it was here to stop. With several
        workers, a run that is not here is asked of the others."""
        if self._stop_local(task_id, app_id, user):
            return True
        if self._relay is not None:
            self._relay.request_stop(task_id, app_id, user)
        return False

    def _stop_local(self, task_id: str, app_id: str, user: str) -> bool:
        run = self._runs.get(task_id)
        if run is None or run.app_id != app_id or run.user != user:
            return False
        stop(run)
        return True

    async def wait_idle(self) -> None:
        """Wait until every run has finished (and been saved); bound it with ``asyncio.timeout``."""
        tasks = set(self._tasks)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def shutdown(self, grace: float = 10.0) -> None:
        """Stop every run and wait for them to save; cancel what does not end in time."""
        for run in list(self._runs.values()):
            stop(run)
        tasks = set(self._tasks)
        if self._ticker is not None:
            self._ticker.cancel()
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=1.0)


async def _write(run: Run, sink: EventSink, event: WireEvent) -> None:
    """Write to an attached reader; while it is ready the write returns without waiting, so a stop
    cannot land here. A write that fails detaches the reader (the event is lost only to a connection
    that is broken); the run goes on."""
    try:
        await sink.write((event,))
    except Exception:
        log.warning("run %s: writing to its reader failed; the run goes on", run.task_id, exc_info=True)
        run.sink = None


def stop(run: Run) -> None:
    """Stop a run: set its stop event and interrupt what it waits on now (the pipeline sees the stop
    event and ends as stopped)."""
    if run.stop_event.is_set():
        return
    run.stop_event.set()
    if run.task is not None and not run.task.done():
        run.task.cancel()
