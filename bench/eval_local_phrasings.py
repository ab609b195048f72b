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

The held-out set (``bench/data/local_phrasings_heldout.eval.yaml``): forty more questions of the same
kinds, other numbers and wording, that no change is tuned on; both sets are reported.

Each line shows the case's time; the end, the longest run of every set run together (the embedded
model's runs are capped at 30 s: model._local_budget.RUN_SECONDS).

Run: .venv/bin/python bench/eval_local_phrasings.py [--model PATH.gguf] [--only TEXT]
     [--set first|heldout|both]
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
# Forty more of the same kinds that no change is tuned on (held out): both sets are reported.
HELDOUT = DATA / "local_phrasings_heldout.eval.yaml"
APP = DATA / "local_phrasings.app.yaml"


async def run_set(path: Path, model: str | None, only: list[str]) -> tuple[int, int, float, str]:
    eval_set = load_eval_set(path)
    if only:
        wanted = [c for c in eval_set.cases if any(o.lower() in c.turns[0].query.lower() for o in only)]
        eval_set = eval_set.model_copy(update={"cases": wanted})
    started = time.perf_counter()
    # One at a time: the embedded model answers one request at a time anyway, and in order is readable.
    report = await evaluate(eval_set, str(APP), model=model, concurrency=1)
    score: dict[str, list[bool]] = {}
    for case, result in zip(eval_set.cases, report.cases, strict=True):
        score.setdefault(case.tags[0], []).append(result.passed)
        turn = result.turns[0]
        tools = ",".join(turn.tools) or "-"
        mark = "✓" if result.passed else "✗"
        print(f"{mark} {result.seconds:5.1f} s {turn.query[:58]:58s} tools {tools:24s} {turn.answer[:50]!r}")
    print(f"== {path.name}")
    for kind, oks in score.items():
        print(f"{kind}: {sum(oks)}/{len(oks)}")
    print(f"answered right with a tool call: {report.passed}/{len(report.cases)} = {report.pass_rate:.0%}")
    print(f"time: {time.perf_counter() - started:.0f} s")
    longest = max(report.cases, key=lambda c: c.seconds, default=None)
    if longest is None:
        return report.passed, 0, 0.0, ""
    return report.passed, len(report.cases), longest.seconds, longest.turns[0].query


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="a GGUF path (default: the embedded SmolLM2-135M)")
    parser.add_argument("--only", action="append", default=[], help="only questions containing this text")
    parser.add_argument("--set", choices=["first", "heldout", "both"], default="both")
    args = parser.parse_args()
    model = f"local:{args.model}" if args.model else None
    sets = {"first": [SET], "heldout": [HELDOUT], "both": [SET, HELDOUT]}[args.set]
    totals = [(path.name, await run_set(path, model, args.only)) for path in sets]
    for name, (passed, total, _, _) in totals:
        print(f"{name}: {passed}/{total}")
    seconds, query = max((t[2], t[3]) for _, t in totals)
    print(f"longest run: {seconds:.1f} s ({query!r})")


if __name__ == "__main__":
    asyncio.run(main())
