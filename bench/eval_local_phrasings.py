"""Plain phrasings on the embedded model: the share answered right *with a tool call*.

Forty questions a newcomer might type into ``loopwright run`` — arithmetic stated several ways,
percentages, unit conversions, the current time and date in a zone — kept as an eval set
(``bench/data/local_phrasings.eval.yaml``) and run by ``loopwright eval`` on the app
``bench/data/local_phrasings.app.yaml``: the embedded model (SmolLM2-135M, greedy), the CLI's default
tools (calculator and current_time), the CLI's iteration limit, no instruction. A question counts as
right when the expected tool was called and the final answer states its result: for arithmetic the
right number, for the time the date, the hour and minute, or the weekday the tool returned. The
questions are data; nothing in the project looks at their wording.

The same run from the command line: ``loopwright eval run bench/data/local_phrasings.eval.yaml --app
bench/data/local_phrasings.app.yaml -j 1``; this script adds the score per kind.

Run: .venv/bin/python bench/eval_local_phrasings.py [--model PATH.gguf] [--only TEXT]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from loopwright.evals.runner import evaluate
from loopwright.evals.schema import load_eval_set

DATA = Path(__file__).resolve().parent / "data"
SET = DATA / "local_phrasings.eval.yaml"
APP = DATA / "local_phrasings.app.yaml"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="a GGUF path (default: the embedded SmolLM2-135M)")
    parser.add_argument("--only", action="append", default=[], help="only questions containing this text")
    args = parser.parse_args()
    eval_set = load_eval_set(SET)
    if args.only:
        wanted = [c for c in eval_set.cases if any(o.lower() in c.turns[0].query.lower() for o in args.only)]
        eval_set = eval_set.model_copy(update={"cases": wanted})
    started = time.perf_counter()
    # One at a time: the embedded model answers one request at a time anyway, and in order is readable.
    report = await evaluate(
        eval_set, str(APP), model=f"local:{args.model}" if args.model else None, concurrency=1
    )
    score: dict[str, list[bool]] = {}
    for case, result in zip(eval_set.cases, report.cases, strict=True):
        score.setdefault(case.tags[0], []).append(result.passed)
        turn = result.turns[0]
        tools = ",".join(turn.tools) or "-"
        print(f"{'✓' if result.passed else '✗'} {turn.query[:58]:58s} tools {tools:24s} {turn.answer[:50]!r}")
    for kind, oks in score.items():
        print(f"{kind}: {sum(oks)}/{len(oks)}")
    total = report.passed, len(report.cases)
    print(f"answered right with a tool call: {total[0]}/{total[1]} = {report.pass_rate:.0%}")
    print(f"time: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    asyncio.run(main())
