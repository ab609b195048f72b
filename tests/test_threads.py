"""The worker threads that run blocking calls (sync tools, files, SQLite) off the event loop."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from loopwright._threads import WorkerThreads, run_sync

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


async def test_runs_off_the_loop_thread_and_returns_the_value() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def work(a: int, *, b: int) -> int:
        seen.append(threading.get_ident())
        return a + b

    assert await run_sync(work, 2, b=3) == 5
    assert seen and seen[0] != loop_thread


async def test_exceptions_reach_the_caller() -> None:
    def boom() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        await run_sync(boom)


async def test_context_variables_are_visible_in_the_worker() -> None:
    request_id.set("r-42")
    assert await run_sync(request_id.get) == "r-42"


async def test_parallel_calls_do_not_queue_behind_each_other() -> None:
    # Each call waits at a barrier until all six are inside their own thread at once: calls that
    # queued behind each other would never meet there (the barrier would time out and break).
    meet = threading.Barrier(6, timeout=10)

    def together(i: int) -> tuple[int, int]:
        meet.wait()
        return i, threading.get_ident()

    results = await asyncio.gather(*(run_sync(together, i) for i in range(6)))
    assert [i for i, _ in results] == list(range(6))
    assert len({ident for _, ident in results}) == 6


async def test_a_pool_of_its_own_starts_workers_on_demand_up_to_its_limit() -> None:
    pool = WorkerThreads(max_workers=2, name="test-pool")
    assert pool.workers == 0
    assert await pool.run_sync(lambda: threading.current_thread().name) == "test-pool-1"
    meet = threading.Barrier(2, timeout=10)

    def hold() -> str:
        meet.wait()  # both holders at once: the pool runs two workers
        return threading.current_thread().name

    both = asyncio.gather(pool.run_sync(hold), pool.run_sync(hold))
    third = asyncio.ensure_future(pool.run_sync(lambda: "after"))  # no third worker: it waits
    assert sorted(await both) == ["test-pool-1", "test-pool-2"]
    assert await third == "after"
    assert pool.workers == 2


async def test_a_cancelled_wait_drops_the_late_result() -> None:
    done = threading.Event()

    def slow() -> str:
        time.sleep(0.1)
        done.set()
        return "late"

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await run_sync(slow)
    await asyncio.to_thread(done.wait, 1)
    await asyncio.sleep(0.01)  # the late result is delivered to a cancelled future: ignored
    assert await run_sync(lambda: "next") == "next"
