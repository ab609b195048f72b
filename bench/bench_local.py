"""The embedded model on this machine: load time, generation speed, and a full tool round.

Prints: model load time; tokens/s of plain generation (median of 3); the wall time of the main job —
"Use the calculator to compute 17 * 23." from question to final answer (two model calls, one tool
call) — median of 3 after a warm-up. Target for the full round: ≤ 5 s on 2 cores.

Run: .venv/bin/python bench/bench_local.py
"""

from __future__ import annotations

import asyncio
import os
import platform
import statistics
import time

from loopwright import Agent
from loopwright.agent import ToolCallFinished
from loopwright.model.entities import UserMessage
from loopwright.model.local import LocalModel
from loopwright.tools.builtin import builtin_tools


async def tokens_per_second(model: LocalModel) -> float:
    rates = []
    for _ in range(3):
        started = time.perf_counter()
        usage = None
        async for chunk in model.stream(
            [UserMessage("Write a short poem about the sea.")], params={"max_tokens": 128}
        ):
            usage = chunk.usage or usage
        assert usage is not None
        rates.append(usage.completion_tokens / (time.perf_counter() - started))
    return statistics.median(rates)


async def tool_round(model: LocalModel) -> tuple[float, str, str]:
    agent = Agent(model=model, tools=builtin_tools(), max_iterations=3)
    started = time.perf_counter()
    observation = ""
    text = ""
    async for event in agent.stream("Use the calculator to compute 17 * 23."):
        if isinstance(event, ToolCallFinished):
            observation = event.observation
        elif event.type == "finished":
            text = event.result.text
    return time.perf_counter() - started, observation, text


async def main() -> None:
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}")
    model = LocalModel()
    print(f"model: {model.model_path.name} ({model.model_path.stat().st_size / 1e6:.0f} MB)")
    print(f"load: {await model.load():.2f} s")
    print(f"generation: {await tokens_per_second(model):.1f} tokens/s (median of 3, 128 tokens)")
    await tool_round(model)  # warm-up
    runs = [await tool_round(model) for _ in range(3)]
    seconds = statistics.median(r[0] for r in runs)
    print(f"full tool round (question → calculator → answer): {seconds:.2f} s median of 3")
    print(f"  observation {runs[0][1]!r}; answer {runs[0][2]!r}")


if __name__ == "__main__":
    asyncio.run(main())
