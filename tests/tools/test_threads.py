"""The worker threads that run sync tools."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from loopwright.tools.threads import run_sync

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
    started = time.perf_counter()
    results = await asyncio.gather(*(run_sync(time.sleep, 0.1) for _ in range(6)))
    assert results == [None] * 6
    assert time.perf_counter() - started < 0.35  # 6 × 100 ms in parallel, not 600 ms


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
