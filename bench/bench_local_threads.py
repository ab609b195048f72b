"""The embedded model's main job on a quiet and on a busy machine, per llama.cpp thread count.

For each thread count (every core, one, and the default that ``loopwright.model.local.default_threads``
picks from the load average) the main job — "Use the calculator to compute 17 * 23." with the
calculator, from question to final answer — runs ``--runs`` times alone, then as many times beside
``--hogs`` CPU-heavy processes (busy loops, one per core by default). Prints the median wall time and
first token of each, and the slowdown beside the hogs: what the thread policy is for is a slowdown in
proportion to the CPU share left (about 2× with one hog per core), not the 5–15× of spinning threads.

Each configuration runs in its own process (llama.cpp's thread count is fixed when the model loads).

Run: .venv/bin/python bench/bench_local_threads.py [--runs 3] [--hogs N] [--threads 2,1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

QUESTION = "Use the calculator to compute 17 * 23."


def _hog() -> None:
    while True:
        pass


async def _runs(threads: int | None, runs: int) -> list[tuple[float, float]]:
    from loopwright import Agent
    from loopwright.agent import TextDelta
    from loopwright.model.local import LocalModel
    from loopwright.tools.builtin import calculator_tool

    model = LocalModel(n_threads=threads)
    await model.load()
    agent = Agent(model=model, tools=[calculator_tool()], max_iterations=3)
    await agent.run(QUESTION)  # warm-up: the context then holds the prompt, as in a server
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        first = None
        async for event in agent.stream(QUESTION):
            if first is None and isinstance(event, TextDelta):
                first = time.perf_counter() - started
        out.append((time.perf_counter() - started, first or 0.0))
    return out


def _child(threads: int | None, runs: int) -> None:
    from loopwright.model.local import LocalModel

    times = asyncio.run(_runs(threads, runs))
    print(json.dumps({"threads": LocalModel(n_threads=threads).n_threads, "times": times}))


def _measure(threads: int | None, runs: int) -> dict[str, object]:
    arg = "default" if threads is None else str(threads)
    done = subprocess.run(
        [sys.executable, __file__, "--child", arg, "--runs", str(runs)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _median(times: list[list[float]], i: int) -> float:
    return statistics.median(t[i] for t in times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--threads", default=f"{os.cpu_count() or 1},1,default")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(None if args.child == "default" else int(args.child), args.runs)
        return
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, {args.hogs} hogs beside")
    for spec in args.threads.split(","):
        threads = None if spec == "default" else int(spec)
        alone = _measure(threads, args.runs)
        hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
        for hog in hogs:
            hog.start()
        try:
            busy = _measure(threads, args.runs)
        finally:
            for hog in hogs:
                hog.terminate()
                hog.join()
        a, b = alone["times"], busy["times"]  # type: ignore[index]
        print(
            f"threads {spec:>7} ({busy['threads']} beside the hogs): alone {_median(a, 0):5.1f} s "  # type: ignore[arg-type]
            f"(first token {_median(a, 1):4.1f} s), beside {_median(b, 0):5.1f} s "  # type: ignore[arg-type]
            f"(first token {_median(b, 1):4.1f} s): {_median(b, 0) / _median(a, 0):.1f}× slower"  # type: ignore[arg-type]
        )


if __name__ == "__main__":
    main()
