"""What a handoff costs beside a plain run, with an instant scripted model.

Two turns that take two model calls each, on function calling:

- plain: the model calls a tool, then answers (one agent, 2 model calls, 1 tool call);
- handoff: the first agent calls its handoff tool, its run is closed, the second agent answers
  (``stream_with_handoffs``: two agents' runs, 2 model calls, 1 tool call, the turn carried).

µs per turn, p50 / p90 / p99 after a warm-up; the ratio of the p50s is the handoff's overhead (the
goal: within 2× of a plain run). Whole replies in one chunk, usage given, no delay: the figures are
the loop's own cost.

Run: .venv/bin/python bench/bench_handoff.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from loopwright import Agent, tool
from loopwright.agent.events import Finished
from loopwright.agent.handoffs import handoff_tool, stream_with_handoffs, tool_name
from loopwright.model.entities import Usage
from loopwright.testing import Reply, ScriptedModel

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]
USAGE = Usage(prompt_tokens=50, completion_tokens=10, total_tokens=60)


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def scripted(*replies: Reply) -> ScriptedModel:
    return ScriptedModel(list(replies), features=FC, chunk_size=10_000, cycle=True)


def plain_turn() -> Callable[[], Awaitable[str]]:
    call = Reply.tool_calls(("add", {"a": 2, "b": 3}), usage=USAGE)
    agent = Agent(model=scripted(call, Reply.text("5", usage=USAGE)), tools=[add])

    async def turn() -> str:
        return (await agent.run("What is 2 + 3?")).text

    return turn


def handoff_turn() -> Callable[[], Awaitable[str]]:
    call = Reply.tool_calls((tool_name("maths"), {"reason": "a sum"}), usage=USAGE)
    agents = {
        "desk": Agent(model=scripted(call), tools=[handoff_tool("maths", "sums")]),
        "maths": Agent(model=scripted(Reply.text("5", usage=USAGE)), tools=[add]),
    }

    async def turn() -> str:
        text = ""
        async for event in stream_with_handoffs(agents, "desk", "What is 2 + 3?"):
            if isinstance(event, Finished):
                text = event.result.text
        return text

    return turn


async def timings(turn: Callable[[], Awaitable[str]], runs: int) -> list[float]:
    for _ in range(max(10, runs // 10)):  # warm-up
        await turn()
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        text = await turn()
        out.append((time.perf_counter() - t) * 1e6)
        assert text == "5", text
    return out


def summary(values: list[float]) -> str:
    q = statistics.quantiles(values, n=100)
    return f"p50 {q[49]:8.1f} µs   p90 {q[89]:8.1f} µs   p99 {q[98]:8.1f} µs"


async def main(runs: int) -> None:
    plain = await timings(plain_turn(), runs)
    handed = await timings(handoff_turn(), runs)
    print(f"plain turn   (tool round + answer):        {summary(plain)}")
    print(f"handoff turn (handoff round + other agent): {summary(handed)}")
    print(f"handoff / plain at p50: {statistics.median(handed) / statistics.median(plain):.2f}×")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5000)
    asyncio.run(main(parser.parse_args().runs))
