"""10,000 randomized scripted runs whose tools and model misbehave (the long version of
tests/reliability/test_tool_faults.py): a tool that raises, one that hangs past its timeout, one that
returns 10 MB, bad and malformed arguments, an unknown tool, model failures. Runs ``--concurrency``
at a time through the app runtime on a SQLite file and reports: runs, crashes (an exception out of a
run), runs that ended neither with an answer nor with a clear error, messages not stored with their
outcome, and the wall time.

Run: .venv/bin/python bench/bench_faults.py [--runs 10000] [--concurrency 20] [--seed 42]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.app.test_messages import FC, ask, new_app  # noqa: E402
from tests.reliability.test_tool_faults import TOOLS, script  # noqa: E402

from loopwright.app.config import AppConfig, ToolConfig  # noqa: E402
from loopwright.app.dify.events import ErrorEvent, MessageEnd  # noqa: E402
from loopwright.app.run.runtime import AppRuntime  # noqa: E402
from loopwright.config import Settings  # noqa: E402
from loopwright.store.db import Database  # noqa: E402
from loopwright.store.models import Message  # noqa: E402
from loopwright.testing import ScriptedModel  # noqa: E402


def rss_mib() -> float:
    """This process's resident memory (Linux)."""
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def one(runtime: AppRuntime, app_id: str, i: int, fails: bool) -> str | None:
    """Run one message; what went wrong with it, if anything."""
    try:
        run = await runtime.start(ask(app_id, f"run {i}"))
        events = [e async for e in run.events()]
        outcome = await run.outcome()
    except Exception as exc:  # a crash: the runtime let an exception out
        return f"crash: {type(exc).__name__}: {exc}"
    last = events[-1] if events else None
    if fails and not (isinstance(last, ErrorEvent) and outcome.status == "error"):
        return f"run {i}: expected a clear error, got {type(last).__name__} {outcome.status}"
    if not fails and not (isinstance(last, MessageEnd) and outcome.status == "normal"):
        return f"run {i}: expected an answer, got {type(last).__name__} {outcome.status}"
    return None


async def main(runs: int, concurrency: int, seed: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite+aiosqlite:///{tmp}/faults.db")
        await db.create_all()
        config = AppConfig(model="scripted", tools=[ToolConfig(name=t.name) for t in TOOLS], max_iterations=5)
        rng = random.Random(seed)
        plans = [script(rng) for _ in range(runs)]
        problems: list[str] = []
        started = time.perf_counter()
        # one app and model per slot, so that each slot's runs take their script's replies in order
        for first in range(0, runs, concurrency):
            batch = plans[first : first + concurrency]
            slots = []
            for k, (replies, fails) in enumerate(batch):
                app_id = await new_app(db, config)
                runtime = AppRuntime(
                    db, Settings(), tools=TOOLS, models={"scripted": ScriptedModel(replies, features=FC)}
                )
                slots.append((runtime, app_id, first + k, fails))
            results = await asyncio.gather(*(one(r, a, i, f) for r, a, i, f in slots))
            problems += [p for p in results if p]
            for runtime, *_ in slots:
                await runtime.aclose()
            done = first + len(batch)
            if done % 1000 < concurrency:
                print(
                    f"  {done} runs, {time.perf_counter() - started:.0f} s, RSS {rss_mib():.0f} MiB",
                    flush=True,
                )
        await db.writer.flush()
        async with db.sessionmaker() as s:
            stored = await s.scalar(
                select(func.count()).select_from(Message).where(Message.status.in_(["normal", "error"]))
            )
        elapsed = time.perf_counter() - started
        await db.close()
    print(f"runs: {runs}  concurrency: {concurrency}  seed: {seed}  wall: {elapsed:.1f} s")
    print(f"crashes or unclear endings: {len(problems)}  stored with an outcome: {stored}/{runs}")
    for p in problems[:20]:
        print("  ", p)
    return 1 if problems or stored != runs else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.runs, args.concurrency, args.seed)))
