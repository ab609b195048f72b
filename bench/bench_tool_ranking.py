"""Tool ranking: recall of the right tool among the offered few, and the prompt tokens saved.

The tool set is the first tool of 92 official Dify plugins (``bench/data/tool_ranking_tools.json``, with
their own names, LLM descriptions and parameters) plus loopwright's 11 built-ins: 103 tools. The
questions (``bench/data/tool_ranking_questions.json``, 60) were written by hand, each with the tools that
would answer it. For each question the ranker (``loopwright.tools.ranking.ToolRanker``, the packaged
MiniLM) orders the tools; recall@k is the share of questions with at least one right tool among the
first k. Tokens: the tools' JSON schemas as an OpenAI-style ``tools`` list, counted with the MiniLM
tokenizer (WordPiece; a stand-in for a chat model's tokenizer — the ratio is what matters), all tools
against the top k. Selection time is per question, tool vectors cached (the first call embeds them).

Run: .venv/bin/python bench/bench_tool_ranking.py
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from loopwright.knowledge.embeddings import MINILM
from loopwright.model.entities import ToolSchema
from loopwright.tools.builtin import builtin_tools
from loopwright.tools.ranking import ToolRanker

DATA = Path(__file__).parent / "data"
KS = (1, 3, 5, 6, 8, 10)


def plugin_tools() -> list[ToolSchema]:
    data = json.loads((DATA / "tool_ranking_tools.json").read_text(encoding="utf-8"))
    out = []
    for t in data["tools"]:
        props = {
            p["name"]: {"type": _json_type(p["type"]), "description": p["description"]}
            for p in t["parameters"]
        }
        required = [p["name"] for p in t["parameters"] if p["required"]]
        out.append(
            ToolSchema(
                t["name"], t["description"], {"type": "object", "properties": props, "required": required}
            )
        )
    return out


def _json_type(kind: str) -> str:
    return {"number": "number", "boolean": "boolean", "integer": "integer"}.get(kind, "string")


def tokens(tools: list[ToolSchema]) -> int:
    listing = [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]
    tokenizer: Any = MINILM.load().tokenizer
    return len(tokenizer(json.dumps(listing), add_special_tokens=False)["input_ids"])


def main() -> None:
    tools = plugin_tools() + [t.schema for t in builtin_tools()]
    names = {t.name for t in tools}
    questions = json.loads((DATA / "tool_ranking_questions.json").read_text(encoding="utf-8"))["questions"]
    for q in questions:
        unknown = set(q["tools"]) - names
        assert not unknown, f"{q['q']!r} names tools not in the set: {unknown}"
    ranker = ToolRanker(threshold=1, top_k=max(KS))
    started = time.perf_counter()
    ranker.scores(tools, "warm up", [])  # loads the model and embeds the tools once
    warm = time.perf_counter() - started
    hits = dict.fromkeys(KS, 0)
    times = []
    misses = []
    for q in questions:
        t0 = time.perf_counter()
        scores = ranker.scores(tools, q["q"], [])
        times.append(time.perf_counter() - t0)
        order = [tools[i].name for i in np.argsort(-scores, kind="stable")]
        rank = min(order.index(name) for name in q["tools"]) + 1
        for k in KS:
            hits[k] += rank <= k
        if rank > 6:
            misses.append((rank, q["q"], order[:3]))
    n = len(questions)
    print(f"{len(tools)} tools, {n} questions (model load + tool embedding: {warm:.1f} s)")
    for k in KS:
        print(f"recall@{k}: {hits[k]}/{n} = {hits[k] / n:.0%}")
    all_tokens = tokens(tools)
    print(f"tool schemas, all {len(tools)} tools: {all_tokens} tokens")
    for k in (3, 6, 10):
        sample = [
            tokens([tools[i] for i in np.argsort(-ranker.scores(tools, q["q"], []))[:k]]) for q in questions
        ]
        mean = statistics.mean(sample)
        print(f"top {k}: {mean:.0f} tokens on average, {1 - mean / all_tokens:.0%} saved per request")
    ms = sorted(t * 1000 for t in times)
    print(f"selection time per question: p50 {ms[len(ms) // 2]:.1f} ms, max {ms[-1]:.1f} ms")
    for rank, question, top in misses:
        print(f"  ranked {rank}: {question!r} (top 3: {', '.join(top)})")


if __name__ == "__main__":
    main()
