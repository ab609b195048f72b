"""The durable executor's added cost, per step and per run, against the in-process executor.

The same runs through ``AppRuntime.start`` in one process on PostgreSQL, first with the in-process
executor, then with the durable one (DBOS), in alternating blocks: a scripted model (one tool round,
then the answer: 3 steps — 2 model calls and 1 tool call — and 4 recorded DBOS steps with the run's end), the
events consumed as a streaming client would. Without ``--delay`` the model answers at once and every
database write of the durable executor is on the run's path (its cost in CPU, the worst case); with a
model that takes time (``--delay 0.01``: 10 ms before each 4-character chunk) only the writes a run
must wait for are (its added latency). Reported: the mean and p50/p99 time of a run under each
executor, the difference per run, and per step (the difference divided by the model and tool calls of
a run). The runs go one after the other (``--concurrency`` for several at once).

Run: .venv/bin/python bench/bench_durable.py [--runs 400] [--blocks 4] [--concurrency 1] [--url
postgresql+asyncpg://…] (default URL: LOOPWRIGHT_TEST_POSTGRES_URL; the app's tables are created there
if missing, the DBOS schema ``dbos_bench`` is dropped at the end)."""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid

from sqlalchemy import text

from loopwright import tool
from loopwright.app.config import AppConfig, ToolConfig
from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runtime import AppRuntime
from loopwright.config import Settings
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.testing import Reply, ScriptedModel

STEPS_PER_RUN = 3  # model call, tool call, model call
SCHEMA = "dbos_bench"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def model(delay: float) -> ScriptedModel:
    replies = [Reply.tool_calls(("add", {"a": 2, "b": 3}), text="Adding."), Reply.text("It is 5, the sum.")]
    features = ["tool-call", "stream-tool-call"]
    return ScriptedModel(replies, features=features, cycle=True, chunk_size=4, delay=delay)


async def one_run(runtime: AppRuntime, app_id: str) -> float:
    started = time.perf_counter()
    run = await runtime.start(MessageRequest(app_id, f"user-{uuid.uuid4().hex[:6]}", "What is 2 + 3?"))
    async for _ in run.events():
        pass
    outcome = await run.outcome()
    assert outcome.status == "normal", outcome
    return time.perf_counter() - started


async def measure(
    db: Database, app_id: str, executor: str, runs: int, concurrency: int, delay: float
) -> list[float]:
    models = {"scripted": model(delay)}
    runtime = AppRuntime(db, Settings(executor=executor), tools=[add], models=models)  # type: ignore[arg-type]
    try:
        for _ in range(10):  # warm: the agent built, the pool's connections open
            await one_run(runtime, app_id)
        times: list[float] = []
        gate = asyncio.Semaphore(concurrency)

        async def timed() -> None:
            async with gate:
                times.append(await one_run(runtime, app_id))

        await asyncio.gather(*(timed() for _ in range(runs)))
        return times
    finally:
        await runtime.shutdown()


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    return f"mean {statistics.fmean(times) * 1000:7.2f} ms   p50 {p(0.5):7.2f} ms   p99 {p(0.99):7.2f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--blocks", type=int, default=4, help="alternate the executors this many times")
    parser.add_argument(
        "--delay", type=float, default=0.0, help="the model's pause before each streamed chunk, in seconds"
    )
    parser.add_argument("--url", default=os.environ.get("LOOPWRIGHT_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    if not args.url:
        raise SystemExit("give --url postgresql+asyncpg://… or set LOOPWRIGHT_TEST_POSTGRES_URL")
    os.environ["LOOPWRIGHT_DBOS_SCHEMA"] = SCHEMA
    db = Database(args.url)
    await db.create_all()
    config = AppConfig(model="scripted", instruction="You add numbers.", tools=[ToolConfig(name="add")])
    async with db.transaction() as session:
        app, _ = await repo.create_app(session, "bench-durable", config.model_dump())
    in_process: list[float] = []
    durable: list[float] = []
    try:
        for _ in range(args.blocks):  # alternated: a drift of the machine weighs on both alike
            for executor, times in (("in-process", in_process), ("durable", durable)):
                times += await measure(
                    db, app.id, executor, args.runs // args.blocks, args.concurrency, args.delay
                )
    finally:
        async with db.engine.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA IF EXISTS "{SCHEMA}" CASCADE'))
        await db.close()
    added = statistics.fmean(durable) - statistics.fmean(in_process)
    added_p50 = statistics.median(durable) - statistics.median(in_process)
    print(
        f"{args.runs} runs, concurrency {args.concurrency}, {STEPS_PER_RUN} steps a run, "
        f"model chunk delay {args.delay * 1000:g} ms (PostgreSQL)"
    )
    print(f"in-process  {summary(in_process)}")
    print(f"durable     {summary(durable)}")
    print(f"added per run:  mean {added * 1000:.2f} ms, p50 {added_p50 * 1000:.2f} ms")
    per_step, per_step_p50 = added / STEPS_PER_RUN * 1000, added_p50 / STEPS_PER_RUN * 1000
    print(f"added per step: mean {per_step:.2f} ms, p50 {per_step_p50:.2f} ms")


if __name__ == "__main__":
    asyncio.run(main())
