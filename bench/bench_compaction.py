"""Compaction's added latency per turn (memory.compaction; docs/memory-and-budgets.md).

Two measures, with an instant scripted model:

1. ``compact()`` alone on a conversation at its steady state (a summary, then the turns since): the
   CPU it adds to a turn, for ``trim`` (today's default) and ``summarize`` when no summary is due;
2. whole turns through the in-process runtime on SQLite, one conversation of ``--turns`` turns, with
   ``trim`` and with ``summarize``: the median turn, and the turns that made a summary apart (their
   cost is the summary model's call, instant here).

Run: .venv/bin/python bench/bench_compaction.py [--turns 300] [--repeat 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from loopwright.app.config import MemorySettings
from loopwright.app.run.compaction import Summary, compact
from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runtime import AppRuntime
from loopwright.config import Settings
from loopwright.model.base import estimate_message_tokens
from loopwright.model.entities import AssistantMessage, PromptMessage, UserMessage
from loopwright.store import repositories as repo
from loopwright.store.db import Database

ANSWER = "Noted, and here is a reply of a fair length that the history has to carry along. " * 3
QUESTION = "Question {i} with details the user gives about their plans and wishes " * 2
WINDOW = 4096
ROOM = WINDOW - 1100  # the reply's room, the instruction and the question left out


def _history(turns: int) -> list[PromptMessage]:
    out: list[PromptMessage] = []
    for i in range(turns):
        out += [UserMessage(QUESTION.format(i=i)), AssistantMessage(ANSWER)]
    return out


async def compact_us(mode: str, turns: int, repeat: int) -> float:
    """Median µs of one ``compact()`` of ``turns`` turns after a summary of 100."""
    settings = MemorySettings(compaction=mode)  # type: ignore[arg-type]
    history = _history(100 + turns)
    summary = (
        Summary("The user asked numbered questions about their plans.", 100) if mode == "summarize" else None
    )
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await compact(
            history, settings, room=WINDOW - 1100, count_tokens=estimate_message_tokens, summary=summary
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


async def turns_ms(mode: str, turns: int, work: Path) -> tuple[float, float | None, int]:
    """(median ms of a turn without a new summary, median ms of one that made a summary, summaries)."""
    db = Database(f"sqlite+aiosqlite:///{work / f'{mode}.db'}")
    await db.migrate()
    main = work / f"{mode}-main.json"
    main.write_text(
        json.dumps({"replies": [ANSWER], "cycle": True, "context_size": WINDOW}), encoding="utf-8"
    )
    summary = work / f"{mode}-summary.json"
    summary.write_text(json.dumps({"replies": ["The user asked numbered questions."], "cycle": True}))
    config: dict[str, Any] = {
        "model": f"scripted:{main}",
        "memory": {"compaction": mode, "summary_model": f"scripted:{summary}"},
    }
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, mode, config)
    runtime = AppRuntime(db, Settings())
    plain: list[float] = []
    summarizing: list[float] = []
    summarizer = runtime.model(f"scripted:{summary}")
    conversation = None
    try:
        for i in range(turns):
            before = len(getattr(summarizer, "requests", []))
            start = time.perf_counter()
            run = await runtime.start(
                MessageRequest(app.id, "u", QUESTION.format(i=i), conversation_id=conversation)
            )
            await run.outcome()
            elapsed = (time.perf_counter() - start) * 1e3
            conversation = run.head.conversation_id
            made = len(getattr(summarizer, "requests", [])) > before
            (summarizing if made else plain).append(elapsed)
    finally:
        await runtime.aclose()
        await db.close()
    due = statistics.median(summarizing) if summarizing else None
    return statistics.median(plain[10:] or plain), due, len(summarizing)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    print("compact() alone, steady state (a summary, then the turns since):")
    for turns in (4, 12, 24):
        trim = await compact_us("trim", turns, args.repeat)
        summ = await compact_us("summarize", turns, args.repeat)
        print(f"  {turns:3d} turns since: trim {trim:8.1f} µs   summarize (none due) {summ:8.1f} µs")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        results = {mode: await turns_ms(mode, args.turns, work) for mode in ("trim", "summarize")}
    trim_ms = results["trim"][0]
    summ_ms, due_ms, made = results["summarize"]
    print(f"whole turns ({args.turns}), in-process runtime on SQLite, instant model:")
    print(f"  trim: median {trim_ms:.2f} ms")
    print(f"  summarize: median {summ_ms:.2f} ms without a summary due (+{summ_ms - trim_ms:.2f} ms)")
    if due_ms is not None:
        print(f"  summarize: median {due_ms:.2f} ms when a summary is made ({made} of {args.turns} turns)")


if __name__ == "__main__":
    asyncio.run(main())
