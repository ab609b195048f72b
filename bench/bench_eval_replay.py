"""A replayed eval set's wall time: N cases (default 100), each a recorded conversation turn — a
calculator call, then the answer — run with ``--replay`` through the app runtime (every turn stored,
its trajectory read back, every check made) with no model. Goal: 100 cases in at most 5 s.

The set and the app are written to a scratch directory; the app's model file does not exist, which a
replay never notices. The time counted is ``loopwright eval run``'s whole run: opening a scratch
database and creating the app in it, then the cases, ``--concurrency`` at a time.

Run: .venv/bin/python bench/bench_eval_replay.py [--cases 100] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from loopwright.evals.runner import evaluate
from loopwright.evals.schema import EvalSet

APP = """\
name: bench
model: scripted:/nonexistent/never-loaded.json
tools: [{name: calculator}, {name: current_time}]
"""


def eval_set(n: int) -> EvalSet:
    cases = []
    for i in range(n):
        a, b = 17 + i, 23
        cases.append(
            {
                "name": f"case-{i}",
                "query": f"What is {a} * {b}?",
                "replies": [
                    {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": f"{a}*{b}"}]]},
                    f"{a} * {b} = {a * b}.",
                ],
                "expect": {
                    "answer": {"number": a * b},
                    "trajectory": {
                        "match": "exact",
                        "tools": [{"name": "calculator", "output": {"number": a * b}}],
                    },
                    "limits": {"rounds": 2},
                },
            }
        )
    return EvalSet.model_validate({"name": "replay-bench", "cases": cases})


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ.setdefault("LOOPWRIGHT_DATA_DIR", scratch)
        app = Path(scratch) / "app.yaml"
        app.write_text(APP, encoding="utf-8")
        cases = eval_set(args.cases)
        started = time.perf_counter()
        report = await evaluate(cases, str(app), replay=True, concurrency=args.concurrency)
        took = time.perf_counter() - started
    assert report.passed == args.cases, [c.failed_checks for c in report.cases if not c.passed][:3]
    per_case = sorted(c.seconds for c in report.cases)
    print(f"{args.cases} replayed cases, concurrency {args.concurrency}: {took:.2f} s (goal for 100: ≤ 5 s)")
    print(f"per case p50 {per_case[len(per_case) // 2] * 1000:.0f} ms, max {per_case[-1] * 1000:.0f} ms")
    print(f"all passed: {report.passed}/{len(report.cases)}")


if __name__ == "__main__":
    asyncio.run(main())
