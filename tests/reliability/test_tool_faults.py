"""Randomized scripted runs (seeded) whose tools and model misbehave — a tool that raises, one that
hangs past its timeout, one that returns 10 MB, bad arguments, an unknown tool, malformed argument
JSON, a model that fails: no crash, and every run ends with an answer or a clear error, stored as
such (bench/bench_faults.py runs 10,000 of them)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from sqlalchemy import select

from loopwright import tool
from loopwright.app.config import AppConfig, ToolConfig
from loopwright.app.dify.events import ErrorEvent, MessageEnd
from loopwright.app.run.runtime import AppRuntime
from loopwright.config import Settings
from loopwright.model.base import ModelError
from loopwright.store.db import Database
from loopwright.store.models import Message
from loopwright.testing import Reply, ScriptedModel
from tests.app.test_messages import FC, ask, new_app

SEED = 42
RUNS = 40


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def boom(x: int) -> str:
    """Always fails."""
    raise RuntimeError(f"boom {x}")


@tool(timeout=0.2)
async def sleepy(x: int) -> str:
    """Hangs past its timeout."""
    await asyncio.sleep(30)
    return "never"


@tool
def huge(x: int) -> str:
    """Returns 10 MB."""
    return "x" * (10 * 1024 * 1024)


TOOLS = [add, boom, sleepy, huge]
FAULTY_CALLS: list[tuple[str, Any]] = [
    ("boom", {"x": 1}),
    ("sleepy", {"x": 1}),
    ("huge", {"x": 1}),
    ("add", {"a": "two", "b": None}),  # bad arguments
    ("add", {}),  # missing arguments
    ("nope", {"x": 1}),  # an unknown tool
    ("add", '{"a": 2, "b":'),  # malformed JSON
    ("add", {"a": 2, "b": 3}),  # a good call among them
]


def script(rng: random.Random) -> tuple[list[Reply], bool]:
    """One run's replies: rounds of random calls, then an answer — or a model failure; whether it
    should end in error."""
    replies = [
        Reply.tool_calls(*rng.sample(FAULTY_CALLS, rng.randint(1, 3)), text="Trying.")
        for _ in range(rng.randint(0, 2))
    ]
    if rng.random() < 0.2:
        return [*replies, Reply.error(ModelError("the provider is down"))], True
    return [*replies, Reply.text("Done.")], False


async def test_randomized_faulty_runs_end_cleanly(db: Database) -> None:
    config = AppConfig(model="scripted", tools=[ToolConfig(name=t.name) for t in TOOLS], max_iterations=5)
    app_id = await new_app(db, config)
    rng = random.Random(SEED)
    plans = [script(rng) for _ in range(RUNS)]
    model = ScriptedModel([r for replies, _ in plans for r in replies], features=FC)
    runtime = AppRuntime(db, Settings(), tools=TOOLS, models={"scripted": model})
    for i, (_, fails) in enumerate(plans):
        run = await runtime.start(ask(app_id, f"run {i}"))
        events = [e async for e in run.events()]
        outcome = await asyncio.wait_for(run.outcome(), 60)
        last = events[-1]
        if fails:
            assert isinstance(last, ErrorEvent) and outcome.status == "error", i
            assert "provider is down" in str(outcome.error)
        else:
            assert isinstance(last, MessageEnd) and outcome.status == "normal", i
            # the answer is every round's text, as Dify saves it: the tool rounds' then the last one's
            *tries, last = outcome.answer.split("\n")
            assert last == "Done." and set(tries) <= {"Trying."}, outcome.answer
    await runtime.shutdown()
    async with db.transaction() as s:
        rows = list(await s.scalars(select(Message)))
    assert len(rows) == RUNS
    assert sorted(r.status for r in rows) == sorted("error" if fails else "normal" for _, fails in plans)
    assert all(r.error and "provider is down" in r.error for r in rows if r.status == "error")
