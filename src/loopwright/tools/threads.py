"""Running sync tool functions off the event loop, cheaply.

``asyncio.to_thread`` goes through ``ThreadPoolExecutor`` and chains a concurrent future to an asyncio
one; on these machines that hop costs ~140 µs. Here worker threads take jobs from one queue and hand
the result straight to the waiting asyncio future: ~50 µs. Workers start on demand (up to
``MAX_WORKERS``) and are daemons: a sync tool that never returns cannot hold the process open.
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
_jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
_lock = threading.Lock()
_workers = 0
_idle = 0  # workers waiting for a job that no submitted job has claimed yet
_backlog = 0  # jobs submitted when every worker was busy and no more could start


async def run_sync(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Call ``fn(*args, **kwargs)`` in a worker thread, with the caller's context variables, and wait
    for it without blocking the event loop. Cancelling the wait does not stop the call itself (no
    thread can be stopped); its result is then dropped."""
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    _ensure_worker()
    _jobs.put((future, contextvars.copy_context(), fn, args, kwargs))
    return await future


def _ensure_worker() -> None:
    # Every job is claimed by exactly one worker: an idle one, a new one, or (at the limit) the next
    # one to finish. So parallel calls never queue behind each other while a worker could start.
    global _workers, _idle, _backlog
    with _lock:
        if _idle > 0:
            _idle -= 1
            return
        if _workers >= MAX_WORKERS:
            _backlog += 1
            return
        _workers += 1
    threading.Thread(target=_work, name=f"loopwright-tool-{_workers}", daemon=True).start()


def _work() -> None:
    global _idle, _backlog
    while True:
        future, context, fn, args, kwargs = _jobs.get()
        try:
            result = context.run(fn, *args, **kwargs)
        except BaseException as e:  # handed to the awaiting task, which decides
            _deliver(future, None, e)
        else:
            _deliver(future, result, None)
        with _lock:
            if _backlog > 0:
                _backlog -= 1  # take a waiting job next
            else:
                _idle += 1


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
