"""Throughput of the ReAct parser: robust mode vs dify mode (the Dify 1.12.1 algorithm).

Run: ``.venv/bin/python bench/bench_parser.py [--repeats N]``.  Streams the golden case
"bench text" (a ~4 KB ReAct reply: a thought paragraph, a fenced JSON action, prose) in 1-, 4-
and 16-character deltas and prints chars/s of CPU time (``time.process_time``, best of the
repeats) for both modes and the ratio robust/dify.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Literal

from loopwright.agent.react_parser import new_parser

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "agent" / "fixtures" / "dify-parser-golden.json"
SIZES = (1, 4, 16)


def bench_text() -> str:
    cases = json.loads(FIXTURE.read_text(encoding="utf-8"))["cases"]
    return next(c["input"] for c in cases if c["label"] == "bench text")


def run_once(mode: Literal["robust", "dify"], chunks: list[str]) -> int:
    parser = new_parser(mode)
    feed = parser.feed
    n = 0
    for chunk in chunks:
        n += len(feed(chunk))
    n += len(parser.flush())
    return n


def measure(mode: Literal["robust", "dify"], chunks: list[str], total: int, repeats: int) -> float:
    """Best chars/s over ``repeats`` timings, each of enough passes to last ~50 ms."""
    passes = 1
    while True:
        t0 = time.process_time()
        for _ in range(passes):
            run_once(mode, chunks)
        if time.process_time() - t0 >= 0.05:
            break
        passes *= 2
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(passes):
            run_once(mode, chunks)
        best = min(best, (time.process_time() - t0) / passes)
    return total / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    text = bench_text()
    print(
        f"machine: {platform.platform()}; {platform.processor() or platform.machine()}; cpus={os.cpu_count()}"
    )
    print(f"python:  {sys.version.split()[0]} ({platform.python_implementation()})")
    print(f"input:   golden case 'bench text', {len(text)} chars; best of {args.repeats}, CPU time")
    print("dify:    DifyReactParser, the Dify 1.12.1 per-character algorithm (approximates Dify's speed)")
    print()
    print(f"{'chunk':>5}  {'robust chars/s':>15}  {'dify chars/s':>13}  {'robust/dify':>11}")
    for size in SIZES:
        chunks = [text[k : k + size] for k in range(0, len(text), size)]
        robust = measure("robust", chunks, len(text), args.repeats)
        dify = measure("dify", chunks, len(text), args.repeats)
        print(f"{size:>5}  {robust / 1e6:>13.2f} M  {dify / 1e6:>11.2f} M  {robust / dify:>10.1f}x")


if __name__ == "__main__":
    main()
