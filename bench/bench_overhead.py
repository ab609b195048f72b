"""The agent loop's own cost, and how it runs slow tools.

1. µs per full run — 2 model calls + 1 tool call — with an instant scripted model (whole replies in one
   chunk, no delay): function calling with an async tool, with a sync tool (which hops to a worker
   thread), and ReAct with an async tool; then function calling and ReAct with the Agent built anew
   for every run (``Agent(...)`` + ``run``, as a caller that keeps no agent does; the model and the
   tools are the caller's, made once). p50 / p90 / p99 over many runs after a warm-up.
2. Memory: traced allocations still held after 20,000 more runs (should be ~0: no per-run growth).
3. Wall time of one round of 5 tool calls that each sleep 50 ms (concurrent: ≈ 50 ms).
4. Callbacks: the function-calling run with 0, 1 and 5 no-op callbacks (plain methods overriding
   every hook), to show what registering them costs and that none costs nothing.
5. When openai-agents and/or smolagents are installed (not dependencies of loopwright): the same run
   with each (bench/_peers.py), built per run and reused, and how many times loopwright's is faster.

Run: .venv/bin/python bench/bench_overhead.py
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import platform
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable

import _peers

from loopwright import Agent, AgentCallback, tool
from loopwright.agent.callbacks import HOOKS
from loopwright.model.entities import Usage
from loopwright.testing import Reply, ScriptedModel

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]
# Real providers report usage; giving it here keeps the scripted model's own estimate out of the figures.
USAGE = Usage(prompt_tokens=50, completion_tokens=10, total_tokens=60)


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def add_sync(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def nap(ms: int) -> str:
    """Sleep."""
    await asyncio.sleep(ms / 1000)
    return "ok"


def fc_model(tool_name: str) -> ScriptedModel:
    return ScriptedModel(
        [
            Reply.tool_calls((tool_name, {"a": 2, "b": 3}), usage=USAGE),
            Reply.text("The answer is 5.", usage=USAGE),
        ],
        features=FC,
        chunk_size=1 << 20,
        cycle=True,
        record=0,
    )


def fc_agent(tool_name: str, tools: list) -> Agent:  # type: ignore[type-arg]
    return Agent(model=fc_model(tool_name), tools=tools, instruction="You are a calculator.")


def built_per_run(model: ScriptedModel) -> Callable[[], Awaitable[object]]:
    """A run that builds its Agent first (the model and the tool are made once, as a caller's are)."""

    def once() -> Awaitable[object]:
        return Agent(model=model, tools=[add], instruction="You are a calculator.").run("What is 2 + 3?")

    return once


class NoOp(AgentCallback):
    """Overrides every hook with a plain method that does nothing."""


for _hook in HOOKS:
    setattr(NoOp, _hook, lambda self, *args: None)


def react_model() -> ScriptedModel:
    step = 'Thought: add\nAction:\n```json\n{"action": "add", "action_input": {"a": 2, "b": 3}}\n```'
    final = 'Thought: done\nAction:\n```json\n{"action": "Final Answer", "action_input": "5"}\n```'
    return ScriptedModel(
        [Reply.text(step, usage=USAGE), Reply.text(final, usage=USAGE)],
        chunk_size=1 << 20,
        cycle=True,
        record=0,
    )


def react_agent() -> Agent:
    return Agent(model=react_model(), tools=[add], instruction="You are a calculator.")


async def per_run_us(agent: Agent | Callable[[], Awaitable[object]], runs: int) -> list[float]:
    once = agent if callable(agent) else (lambda: agent.run("What is 2 + 3?"))
    for _ in range(500):  # warm-up
        await once()
    times = []
    clock = time.perf_counter
    for _ in range(runs):
        t0 = clock()
        await once()
        times.append((clock() - t0) * 1e6)
    return times


async def held_bytes_after(agent: Agent, runs: int) -> int:
    for _ in range(1000):
        await agent.run("What is 2 + 3?")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for i in range(runs):
        await agent.run("What is 2 + 3?")
        if i % 100 == 0:
            # Let the event loop turn, as any server does between requests: it drops the cancelled
            # timers of tool timeouts only when it runs (at most ~100 are ever kept).
            await asyncio.sleep(0)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    return sum(s.size_diff for s in after.compare_to(before, "filename"))


async def five_naps_ms(repeats: int = 5) -> float:
    calls = [("nap", {"ms": 50}, f"c{i}") for i in range(5)]
    best = float("inf")
    for _ in range(repeats):
        model = ScriptedModel([Reply.tool_calls(*calls), Reply.text("ok")], features=FC, chunk_size=1 << 20)
        agent = Agent(model=model, tools=[nap])
        t0 = time.perf_counter()
        await agent.run("nap")
        best = min(best, (time.perf_counter() - t0) * 1000)
    return best


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    print(
        f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    )
    print(f"python: {platform.python_version()}")
    results = {}
    cases: list[tuple[str, Agent | Callable[[], Awaitable[object]]]] = [
        ("function calling, async tool", fc_agent("add", [add])),
        ("function calling, sync tool (thread hop)", fc_agent("add_sync", [add_sync])),
        ("react, async tool", react_agent()),
        ("function calling, agent built per run", built_per_run(fc_model("add"))),
        ("react, agent built per run", built_per_run(react_model())),
    ]
    for label, agent in cases:
        times = await per_run_us(agent, 20_000)
        results[label] = times
        print(
            f"{label:42s} p50 {statistics.median(times):7.1f} µs   p90 {pct(times, 0.9):7.1f} µs   "
            f"p99 {pct(times, 0.99):7.1f} µs"
        )
    for n in (0, 1, 5):
        agent = fc_agent("add", [add])
        agent.callbacks = [NoOp() for _ in range(n)]
        times = await per_run_us(agent, 20_000)
        print(
            f"{f'function calling, {n} no-op callbacks':42s} p50 {statistics.median(times):7.1f} µs   "
            f"p90 {pct(times, 0.9):7.1f} µs   p99 {pct(times, 0.99):7.1f} µs"
        )
    held = await held_bytes_after(fc_agent("add", [add]), 20_000)
    print(f"memory held after 20,000 more runs: {held / 1024:.1f} KiB ({held / 20_000:.2f} B/run)")
    print(f"one round of 5 tools sleeping 50 ms each: {await five_naps_ms():.1f} ms (best of 5)")
    await compare_with_peers(statistics.median(results["function calling, agent built per run"]))
    print(json.dumps({k: round(statistics.median(v), 1) for k, v in results.items()}))


async def compare_with_peers(ours_built: float) -> None:
    for name, measure in [("openai-agents", _peers.openai_agents_us), ("smolagents", _peers.smolagents_us)]:
        for built in (True, False):
            times = await measure(built)
            if times is None:
                print(f"{name}: not installed (pip install {name}), skipped")
                break
            p50 = statistics.median(times)
            label = f"{name}, agent {'built per run' if built else 'reused'}"
            print(
                f"{label:42s} p50 {p50:7.0f} µs   loopwright built per run is {p50 / ours_built:5.0f}× faster"
            )


if __name__ == "__main__":
    asyncio.run(main())
