"""Running messages, by ``task_id``.

Each run is an asyncio task that consumes ``run_message(...)`` into a queue; the HTTP response only
reads that queue. A client that disconnects therefore does not stop the run: it continues to its end
and is saved. ``stop`` sets the run's stop event (the run cancels its model stream or tool call at
once, saves with status ``stopped`` and sends ``message_end``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field

from loopwright.app.wire import PING, WireEvent, error_fields, sse

log = logging.getLogger("loopwright.server")

_DONE = None  # the end-of-run sentinel in a run's queue


@dataclass(eq=False)
class Run:
    """One running message."""

    task_id: str
    app_id: str
    user: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    queue: asyncio.Queue[WireEvent | None] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None

    def done(self) -> bool:
        return self.task is not None and self.task.done()


class RunRegistry:
    """The runs of one server process."""

    def __init__(self) -> None:
        self._runs: dict[str, Run] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._runs)

    def get(self, task_id: str) -> Run | None:
        return self._runs.get(task_id)

    def start(self, run: Run, events: AsyncGenerator[WireEvent, None]) -> Run:
        """Register ``run`` and start consuming ``events`` (from ``run_message``) into its queue."""
        self._runs[run.task_id] = run
        task = asyncio.create_task(self._consume(run, events), name=f"loopwright-run-{run.task_id}")
        run.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return run

    async def _consume(self, run: Run, events: AsyncGenerator[WireEvent, None]) -> None:
        try:
            async for event in events:
                run.queue.put_nowait(event)
        except Exception as exc:  # run_message reports its own errors; this is a failure around it
            log.exception("run %s failed", run.task_id)
            code, status, message = error_fields(exc)
            run.queue.put_nowait({"event": "error", "code": code, "message": message, "status": status})
        finally:
            with contextlib.suppress(Exception):
                await events.aclose()
            run.queue.put_nowait(_DONE)
            self._runs.pop(run.task_id, None)

    def stop(self, task_id: str, app_id: str, user: str) -> bool:
        """Stop the run if it belongs to this app and user; whether one was stopped."""
        run = self._runs.get(task_id)
        if run is None or run.app_id != app_id or run.user != user:
            return False
        run.stop.set()
        return True

    async def wait_idle(self) -> None:
        """Wait until every run has finished (and been saved); bound it with ``asyncio.timeout``."""
        tasks = set(self._tasks)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def shutdown(self, grace: float = 10.0) -> None:
        """Stop every run and wait for them to save; cancel what does not end in time."""
        for run in list(self._runs.values()):
            run.stop.set()
        tasks = set(self._tasks)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=1.0)


async def events_of(run: Run) -> AsyncIterator[WireEvent]:
    """The run's events until it ends."""
    while True:
        event = await run.queue.get()
        if event is None:
            return
        yield event


async def sse_frames(run: Run, ping_interval: float) -> AsyncIterator[str]:
    """The run's events as SSE frames, with ``event: ping`` after each ``ping_interval`` of silence.
    Events already waiting are sent in one write (under load, fewer and larger writes keep every
    stream on time). Cancelling this (a client that went away) leaves the run going."""
    queue = run.queue
    while True:
        if queue.empty():
            try:
                async with asyncio.timeout(ping_interval):
                    first = await queue.get()
            except TimeoutError:
                yield PING
                continue
        else:
            first = queue.get_nowait()
        if first is None:
            return
        frames = [sse(first)]
        ended = False
        while not queue.empty():
            event = queue.get_nowait()
            if event is None:
                ended = True
                break
            frames.append(sse(event))
        yield frames[0] if len(frames) == 1 else "".join(frames)
        if ended:
            return
