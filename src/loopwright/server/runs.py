"""Running messages, by ``task_id``.

Each run is an asyncio task that consumes ``run_message(...)``; the HTTP response only takes what it
produces. A client that disconnects therefore does not stop the run: it continues to its end and is
saved. ``stop`` sets the run's stop event and cancels the run's task where it waits (the model
stream or a tool call); ``run_message`` takes that as a stop: it saves with status ``stopped`` and
sends ``message_end``.

How events reach a streaming client: while the response waits with nothing queued and its
connection takes writes without waiting (:class:`Client`), the run's task writes each event to it
itself — one task woken per event instead of two, and no queue in between. Otherwise events go
into the run's queue and the response writes them: when the client reads slowly (the server has
paused writing to it), the run queues and goes on, so a slow or stuck reader never holds a run up;
the response attaches again once it has caught up. Order is kept because the run writes directly
only while the queue is empty.

Pings: one ticker per registry puts ``event: ping`` into the queue of each run that has been silent
for the ping interval — rather than a timeout around every read of every stream, which under a
thousand streams costs more than the events themselves. With several worker processes the same
ticker also takes the stops that other workers posted for this one's runs (``server.stops``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field

from starlette.types import Send

from loopwright.app.wire import PING, WireEvent, error_fields, sse
from loopwright.server.stops import StopBoard

log = logging.getLogger("loopwright.server")

_DONE = None  # the end-of-run sentinel in a run's queue
_PING: WireEvent = {"event": "ping"}  # queued by the ticker, sent as ``event: ping``
TICKS_PER_INTERVAL = 4  # a ping follows between 1 and 1.25 intervals of silence


@dataclass(frozen=True, slots=True)
class Client:
    """A streaming response's connection: ``send`` for body chunks and whether a send now would
    write at once rather than wait for the client to read (see ``event_stream.writable_now``)."""

    send: Send
    writable: Callable[[], bool]


@dataclass(eq=False)
class Run:
    """One running message."""

    task_id: str
    app_id: str
    user: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    queue: asyncio.Queue[WireEvent | None] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    last_event: float = 0.0  # loop time of the last event sent or queued (pings included)
    client: Client | None = None  # set while the run may write to its response itself

    def done(self) -> bool:
        return self.task is not None and self.task.done()


class RunRegistry:
    """The runs of one server process."""

    def __init__(self, ping_interval: float = 10.0, board: StopBoard | None = None) -> None:
        self._runs: dict[str, Run] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._ping_interval = ping_interval
        self._board = board
        self._ticker: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._runs)

    def get(self, task_id: str) -> Run | None:
        return self._runs.get(task_id)

    def start(self, run: Run, events: AsyncGenerator[WireEvent, None]) -> Run:
        """Register ``run`` and start consuming ``events`` (from ``run_message``) into its queue."""
        loop = asyncio.get_running_loop()
        run.last_event = loop.time()
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
        try:
            async for event in events:
                client = run.client
                if client is not None and client.writable() and queue.empty():
                    await _write(run, client, sse(event))
                else:
                    queue.put_nowait(event)
                run.last_event = loop.time()
        except Exception as exc:  # run_message reports its own errors; this is a failure around it
            log.exception("run %s failed", run.task_id)
            code, status, message = error_fields(exc)
            queue.put_nowait({"event": "error", "code": code, "message": message, "status": status})
        finally:
            with contextlib.suppress(Exception):
                await events.aclose()
            queue.put_nowait(_DONE)
            self._runs.pop(run.task_id, None)

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        every = self._ping_interval / TICKS_PER_INTERVAL
        if self._board is not None:
            every = min(every, self._board.interval)
        while self._runs:
            await asyncio.sleep(every)
            now = loop.time()
            for run in self._runs.values():
                if now - run.last_event >= self._ping_interval:
                    run.queue.put_nowait(_PING)
                    run.last_event = now
            if self._board is not None:
                await self._take_stops()

    async def _take_stops(self) -> None:
        assert self._board is not None
        try:
            requests = await self._board.take(list(self._runs))
        except Exception as exc:  # the database is busy or gone: try again next tick
            log.warning("could not read stop requests: %s", exc)
            return
        for request in requests:
            self._stop_local(request.task_id, request.app_id, request.user)

    def stop(self, task_id: str, app_id: str, user: str) -> bool:
        """Stop the run if it belongs to this app and user; whether it was here to stop. With several
        workers, a run that is not here is asked of the others."""
        if self._stop_local(task_id, app_id, user):
            return True
        if self._board is not None:
            self._board.request(task_id, app_id, user)
        return False

    def _stop_local(self, task_id: str, app_id: str, user: str) -> bool:
        run = self._runs.get(task_id)
        if run is None or run.app_id != app_id or run.user != user:
            return False
        _stop(run)
        return True

    async def wait_idle(self) -> None:
        """Wait until every run has finished (and been saved); bound it with ``asyncio.timeout``."""
        tasks = set(self._tasks)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def shutdown(self, grace: float = 10.0) -> None:
        """Stop every run and wait for them to save; cancel what does not end in time."""
        for run in list(self._runs.values()):
            _stop(run)
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


async def _write(run: Run, client: Client, frame: str) -> None:
    """Write to an attached client; while it is writable the send returns without waiting, so a
    stop cannot land here. A send that fails detaches the client (the event is lost only to a
    connection that is broken); the run goes on."""
    try:
        await client.send(_body(frame))
    except Exception:
        log.warning("run %s: writing to its client failed; the run goes on", run.task_id, exc_info=True)
        run.client = None


def _body(frame: str) -> dict[str, object]:
    return {"type": "http.response.body", "body": frame.encode(), "more_body": True}


def _stop(run: Run) -> None:
    if run.stop.is_set():
        return
    run.stop.set()
    # Interrupt what the run waits on now (run_message sees the stop event and ends as stopped).
    if run.task is not None and not run.task.done():
        run.task.cancel()


async def events_of(run: Run) -> AsyncIterator[WireEvent]:
    """The run's events until it ends (pings left out)."""
    while True:
        event = await run.queue.get()
        if event is None:
            return
        if event is not _PING:
            yield event


async def stream_to(run: Run, send: Send, writable: Callable[[], bool] | None) -> None:
    """Send the run's events as SSE frames until it ends (a ``send`` that writes body chunks; the
    caller sends the response's start and end). With ``writable`` (the connection can say whether a
    send would wait) the run writes its events itself while this waits with nothing queued; what
    is queued — events the run could not write at once, pings — goes out from here, several in one
    write when they have piled up. Cancelling this (a client that went away) leaves the run going."""
    queue = run.queue
    try:
        while True:
            if writable is not None and queue.empty():
                run.client = Client(send, writable)
            event = await queue.get()
            run.client = None
            frames: list[str] = []
            while event is not None:
                frames.append(PING if event is _PING else sse(event))
                if queue.empty():
                    break
                event = queue.get_nowait()
            if frames:
                await send(_body(frames[0] if len(frames) == 1 else "".join(frames)))
            if event is None:
                return
    finally:
        run.client = None
