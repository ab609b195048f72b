"""Running blocking calls (sync tools, file and SQLite work) off the event loop, cheaply.

``asyncio.to_thread`` goes through ``ThreadPoolExecutor`` and chains a concurrent future to an asyncio
one; on these machines that hop costs ~140 µs. Here worker threads take jobs from one queue and hand
the result straight to the waiting asyncio future: ~50 µs. Workers start on demand (up to
``max_workers``) and are daemons: a sync call that never returns cannot hold the process open.

:class:`WorkerThreads` owns its queue, workers and counts; :data:`WORKERS` is the process's one pool and
:func:`run_sync` its ``run_sync``. Not public API.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

MAX_WORKERS = 32

_Job = tuple[asyncio.Future[Any], contextvars.Context, Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class WorkerThreads:
    """A pool of daemon worker threads fed from one queue (see the module's docstring)."""

    def __init__(self, max_workers: int = MAX_WORKERS, *, name: str = "loopwright-worker") -> None:
        self.max_workers = max_workers
        self.name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0
        self._idle = 0  # workers waiting for a job that no submitted job has claimed yet
        self._backlog = 0  # jobs submitted when every worker was busy and no more could start

    @property
    def workers(self) -> int:
        """How many worker threads have started (they live as long as the process)."""
        return self._workers

    async def run_sync(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Call ``fn(*args, **kwargs)`` in a worker thread, with the caller's context variables, and
        wait for it without blocking the event loop. Cancelling the wait does not stop the call itself
        (no thread can be stopped); its result is then dropped."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._ensure_worker()
        self._jobs.put((future, contextvars.copy_context(), fn, args, kwargs))
        return await future

    def _ensure_worker(self) -> None:
        # Every job is claimed by exactly one worker: an idle one, a new one, or (at the limit) the next
        # one to finish. So parallel calls never queue behind each other while a worker could start.
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                return
            if self._workers >= self.max_workers:
                self._backlog += 1
                return
            self._workers += 1
            number = self._workers
        threading.Thread(target=self._work, name=f"{self.name}-{number}", daemon=True).start()

    def _work(self) -> None:
        jobs, lock = self._jobs, self._lock
        while True:
            future, context, fn, args, kwargs = jobs.get()
            try:
                result = context.run(fn, *args, **kwargs)
            except BaseException as e:  # handed to the awaiting task, which decides
                _deliver(future, None, e)
            else:
                _deliver(future, result, None)
            with lock:
                if self._backlog > 0:
                    self._backlog -= 1  # take a waiting job next
                else:
                    self._idle += 1


def _deliver(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    def settle() -> None:
        if future.done():  # the waiter was cancelled (a timeout, a stopped run)
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
        future.get_loop().call_soon_threadsafe(settle)


WORKERS = WorkerThreads(name="loopwright-tool")
"""The process's worker threads, shared by every caller of :func:`run_sync`."""

run_sync = WORKERS.run_sync
