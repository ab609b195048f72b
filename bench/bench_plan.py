"""What plan-and-execute costs beside a plain run, with an instant scripted model.

Two runs that do the same work — one tool call and an answer — on function calling:

- plain: the model calls the tool, then answers (2 model calls, 1 tool call);
- plan: the model writes a one-step plan, the step runs in a round of its own (no model call), then
  the model answers (2 model calls, 1 tool call, plus the plan's events).

µs per run, p50 / p90 / p99 after a warm-up; the ratio of the p50s is the plan round's overhead (the
goal: within 2× of a plain run). Whole replies in one chunk, usage given, no delay: the figures are
the loop's own cost.

Run: .venv/bin/python bench/bench_plan.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from loopwright import Agent, tool
from loopwright.agent.planning import PLAN_TOOL
from loopwright.model.entities import Usage
from loopwright.testing import Reply, ScriptedModel

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]
USAGE = Usage(prompt_tokens=50, completion_tokens=10, total_tokens=60)
PLAN = {"steps": [{"id": "s1", "task": "add", "tool": "add", "arguments": {"a": 2, "b": 3}, "after": []}]}


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent(strategy: str) -> Agent:
    first = (
        Reply.tool_calls((PLAN_TOOL, PLAN), usage=USAGE)
        if strategy == "plan"
        else Reply.tool_calls(("add", {"a": 2, "b": 3}), usage=USAGE)
    )
    model = ScriptedModel([first, Reply.text("5", usage=USAGE)], features=FC, chunk_size=10_000, cycle=True)
    return Agent(model=model, tools=[add], strategy=strategy)  # type: ignore[arg-type]


async def timings(a: Agent, runs: int) -> list[float]:
    for _ in range(max(10, runs // 10)):  # warm-up
        await a.run("What is 2 + 3?")
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        result = await a.run("What is 2 + 3?")
        out.append((time.perf_counter() - t) * 1e6)
        assert result.text == "5"
    return out


def summary(values: list[float]) -> str:
    q = statistics.quantiles(values, n=100)
    return f"p50 {q[49]:8.1f} µs   p90 {q[89]:8.1f} µs   p99 {q[98]:8.1f} µs"


async def main(runs: int) -> None:
    plain = await timings(agent("function-calling"), runs)
    plan = await timings(agent("plan"), runs)
    print(f"plain run (tool round + answer): {summary(plain)}")
    print(f"plan run  (plan + step + answer): {summary(plan)}")
    print(f"plan / plain at p50: {statistics.median(plan) / statistics.median(plain):.2f}×")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5000)
    asyncio.run(main(parser.parse_args().runs))
