"""Running messages, by ``task_id``: the in-process registry of runs and the run handle.

Each run is an asyncio task running its message's pipeline (``app.run.pipeline``); whoever started it
only takes what it produces. A client that goes away therefore does not stop the run: it continues to
its end and is saved.

**One stop.** :meth:`Run.stop` is the only way a run is stopped — a client's stop, one relayed from
another worker (:mod:`app.run.relay`), a shutdown: it records the reason on the run and cancels the
run's task where it waits (the model stream, a tool call, a guard). The pipeline takes a cancellation
that carries a reason (:meth:`Run.stopping`) as the stop: it saves with status ``stopped`` and ends
with ``message_end``; a cancellation without one (the process going down) is saved and goes on up.

**One encoding.** The pipeline hands each wire event to :meth:`Run.emit`, which encodes it once
(``app.dify.encoder``: the journal's item and the SSE frame), adds the item to the run's journal
record and gives the frame to the reader. How events reach a reader (:meth:`Run.pump`, given an
:class:`EventSink`): while the reader waits with nothing queued and its sink takes writes without
waiting, the run's task writes each event to the sink itself — one task woken per event instead of
two, and no queue in between. Otherwise events go into the run's queue and the reader takes them
(several at once when they have piled up): a reader that is slow or stuck never holds a run up, and
attaches again once it has caught up. Order is kept because the run writes directly only while the
queue is empty. Nothing here knows HTTP.

Pings: one ticker per registry queues the run's encoder's ping (Dify's :data:`PING`) for each run
that has been silent for the ping interval — rather than a timeout around every read of every
stream. Stops asked of another process reach this one through the relay: pushed on PostgreSQL; on
SQLite with several workers the same ticker looks for them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from loopwright.app.dify.encoder import PING, DifyEncoder, Encoded
from loopwright.app.dify.events import ErrorEvent, EventHead, MessageEnd, ToolApprovalRequired, WireEvent
from loopwright.app.run.journal import RunRecord
from loopwright.app.run.relay import Relay
from loopwright.model.entities import Usage
from loopwright.tools.base import ToolOutput

log = logging.getLogger("loopwright.app")

TICKS_PER_INTERVAL = 4  # a ping follows between 1 and 1.25 intervals of silence

__all__ = ["PING", "EventSink", "Run", "RunOutcome", "RunRegistry", "Status"]

Queued = Encoded | None  # None: the run has ended


class EventSink(Protocol):
    """Where a reader of a run wants its events: ``direct`` says whether :meth:`ready` can tell that a
    write now would not wait (only then may the run's own task write)."""

    direct: bool

    def ready(self) -> bool: ...

    async def write(self, events: Sequence[Encoded]) -> None: ...


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
    """The handle of one running message: its ids, its events (:meth:`events` or :meth:`pump`), its
    stop (:meth:`stop`) and its outcome (:meth:`outcome`)."""

    head: EventHead
    app_id: str
    user: str
    keep_events: bool = True  # False: nobody reads the events (blocking mode, app-as-tool)
    record: RunRecord | None = None  # where its events are kept for a re-attach (app.run.journal)
    encoder: DifyEncoder = field(default_factory=DifyEncoder)  # numbers on from its stream's last event
    stop_reason: str | None = None  # why it was stopped (``stop``); None: it was not
    queue: asyncio.Queue[Queued] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    last_event: float = 0.0  # loop time of the last event sent or queued (pings included)
    sink: EventSink | None = None  # set while the run may write to its reader itself
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

    def on_end(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` once the run's task has ended (at once when it has)."""
        if self.task is None or self.task.done():
            callback()
        else:
            self.task.add_done_callback(lambda _: callback())

    def stop(self, reason: str = "requested") -> None:
        """Stop the run: record why and interrupt what it waits on now (the pipeline takes the
        cancellation as the stop, see :meth:`stopping`). A second stop does nothing."""
        if self.stop_reason is not None:
            return
        self.stop_reason = reason
        if self.task is not None and not self.task.done():
            self.task.cancel()

    def stopping(self) -> bool:
        """In the run's task, catching a cancellation: whether it is the run's stop. If so it is taken
        back (the run ends as stopped, saved, with ``message_end``); if not it must go on up."""
        if self.stop_reason is None:
            return False
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            task.uncancel()
        return True

    async def emit(self, event: WireEvent) -> None:
        """Hand one event to the run's reader and journal, encoded once (see the module's docstring)."""
        if not self.keep_events:
            return
        encoded = self.encoder.encode(event)
        record = self.record
        if record is not None:
            record.add(encoded.item)  # type: ignore[arg-type]  # an event's item is never None
        sink = self.sink
        queue = self.queue
        if sink is not None and queue.empty() and sink.ready():
            await _write(self, sink, encoded)
        else:
            queue.put_nowait(encoded)
        self.last_event = asyncio.get_running_loop().time()

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
            encoded = await self.queue.get()
            if encoded is None:
                return
            if encoded.event is not None:
                yield encoded.event

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
                batch: list[Encoded] = []
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

    def start(self, run: Run, body: Coroutine[Any, Any, None]) -> Run:
        """Register ``run`` and start running ``body`` (its pipeline) as its task."""
        loop = asyncio.get_running_loop()
        run.last_event = loop.time()
        run._future()  # created on this loop, before anyone waits for it
        self._runs[run.task_id] = run
        task = loop.create_task(self._run(run, body), name=f"loopwright-run-{run.task_id}")
        run.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if self._ticker is None or self._ticker.done():
            self._ticker = loop.create_task(self._tick(), name="loopwright-pings")
        return run

    async def _run(self, run: Run, body: Coroutine[Any, Any, None]) -> None:
        try:
            await body
        except Exception as exc:  # the pipeline reports its own errors; this is a failure around it
            log.exception("run %s failed", run.task_id)
            try:
                await run.emit(ErrorEvent(run.head, exc))
            finally:
                run.finish(RunOutcome("error", "", exc))
        finally:
            run.queue.put_nowait(None)
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
                    run.queue.put_nowait(run.encoder.ping)
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
        run.stop()
        return True

    async def wait_idle(self) -> None:
        """Wait until every run has finished (and been saved); bound it with ``asyncio.timeout``."""
        tasks = set(self._tasks)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def shutdown(self, grace: float = 10.0) -> None:
        """Stop every run and wait for them to save; cancel what does not end in time."""
        for run in list(self._runs.values()):
            run.stop("shutdown")
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


async def _write(run: Run, sink: EventSink, event: Encoded) -> None:
    """Write to an attached reader; while it is ready the write returns without waiting, so a stop
    cannot land here. A write that fails detaches the reader (the event is lost only to a connection
    that is broken); the run goes on."""
    try:
        await sink.write((event,))
    except Exception:
        log.warning("run %s: writing to its reader failed; the run goes on", run.task_id, exc_info=True)
        run.sink = None
