"""Tool calling of local models: a score per category, in the manner of the Berkeley function-calling
leaderboard (BFCL), so that users can choose a local model.

Categories (BFCL's names): ``simple`` — one tool offered, the question needs it; ``multiple`` — five
tools offered, the question needs one of them; ``parallel`` — the question needs two calls in one
reply; ``irrelevance`` (no tool) — tools offered, none fits: the right reply calls nothing. As in
BFCL's AST evaluation, a case is scored on the model's first reply alone (its calls are compared
with the expected ones; no tool result is fed back): the right tools, no others, and the right
arguments — the calculator's expression must compute the expected number, other arguments must
equal one of the accepted values (case and spacing aside).

Each model runs through the agent as ``loopwright run`` does (``strategy="auto"``): the embedded
SmolLM2 on ReAct and its grammar (one call a reply, so it cannot score on ``parallel``); a model
whose chat template teaches a tool-call format calls tools natively.

Run: .venv/bin/python bench/bench_local_tools.py [--model local] [--model local:/path/model.gguf]
     [--size N]   (N cases of each category; default all)
     [--no-budget]   (no round or run time budget: on a busy machine the 30 s run cap ends runs
                      before the model has answered, which would score the machine, not the model)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from loopwright import Agent, tool
from loopwright.agent import Finished, RoundFinished, ToolCallStarted
from loopwright.config import build_model, load_settings
from loopwright.model.base import Model
from loopwright.model.local import LocalModel
from loopwright.tools.base import Tool
from loopwright.tools.builtin import builtin_tools
from loopwright.tools.builtin.calculator import calculate


@tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """The current weather in a city.

    Args:
        city: The city, e.g. "Paris".
        unit: "celsius" or "fahrenheit".
    """
    return f"18 degrees {unit} and cloudy in {city}"


@tool
def convert_currency(amount: float, source: str, target: str) -> str:
    """Convert an amount of money from one currency to another.

    Args:
        amount: The amount to convert.
        source: The currency code to convert from, e.g. "EUR".
        target: The currency code to convert to, e.g. "USD".
    """
    return f"{amount * 1.1:.2f} {target}"


@tool
def send_email(to: str, subject: str) -> str:
    """Send an email.

    Args:
        to: The recipient's address.
        subject: The subject line.
    """
    return "sent"


@tool
def word_count(text: str) -> str:
    """Count the words of a text.

    Args:
        text: The text.
    """
    return str(len(text.split()))


def tools_by_name() -> dict[str, Tool]:
    builtin = {t.name: t for t in builtin_tools() if t.name in ("calculator", "current_time")}
    return {**builtin, **{t.name: t for t in (get_weather, convert_currency, send_email, word_count)}}


# An expected call: the tool's name and, per argument, the accepted values ("=N" for the calculator:
# an expression that computes N).
Call = tuple[str, dict[str, list[Any]]]


@dataclass
class Case:
    category: str
    question: str
    tools: list[str]
    calls: list[Call] = field(default_factory=list)  # none: the right reply calls nothing


ALL = ["calculator", "current_time", "get_weather", "convert_currency", "send_email"]
CASES = [
    Case("simple", "What is 17 * 23?", ["calculator"], [("calculator", {"expression": ["=391"]})]),
    Case(
        "simple", "How much is 1234 plus 5678?", ["calculator"], [("calculator", {"expression": ["=6912"]})]
    ),
    Case("simple", "What's the weather in Paris?", ["get_weather"], [("get_weather", {"city": ["Paris"]})]),
    Case(
        "simple",
        "Convert 250 euros to US dollars.",
        ["convert_currency"],
        [("convert_currency", {"amount": [250], "source": ["EUR"], "target": ["USD"]})],
    ),
    Case(
        "simple",
        "What time is it in Tokyo?",
        ["current_time"],
        [("current_time", {"timezone": ["Asia/Tokyo", "Tokyo"]})],
    ),
    Case("simple", "Divide 144 by 12.", ["calculator"], [("calculator", {"expression": ["=12"]})]),
    Case("multiple", "What is 15% of 80?", ALL, [("calculator", {"expression": ["=12"]})]),
    Case("multiple", "Is it raining in London right now?", ALL, [("get_weather", {"city": ["London"]})]),
    Case(
        "multiple",
        "What is the time in Berlin?",
        ALL,
        [("current_time", {"timezone": ["Europe/Berlin", "Berlin"]})],
    ),
    Case(
        "multiple",
        "How many yen is 100 dollars?",
        ALL,
        [("convert_currency", {"amount": [100], "source": ["USD"], "target": ["JPY"]})],
    ),
    Case(
        "multiple",
        "Email bob@example.com with the subject Lunch.",
        ALL,
        [("send_email", {"to": ["bob@example.com"], "subject": ["Lunch"]})],
    ),
    Case("multiple", "Multiply 48 by 12.", ALL, [("calculator", {"expression": ["=576"]})]),
    Case(
        "parallel",
        "What's the weather in Paris and in Rome?",
        ["get_weather"],
        [("get_weather", {"city": ["Paris"]}), ("get_weather", {"city": ["Rome"]})],
    ),
    Case(
        "parallel",
        "Compute 12 * 7 and 15% of 80.",
        ["calculator"],
        [("calculator", {"expression": ["=84"]}), ("calculator", {"expression": ["=12"]})],
    ),
    Case(
        "parallel",
        "What is the time in Tokyo and the weather in Tokyo?",
        ["current_time", "get_weather"],
        [("current_time", {"timezone": ["Asia/Tokyo", "Tokyo"]}), ("get_weather", {"city": ["Tokyo"]})],
    ),
    Case(
        "parallel",
        "Convert 10 EUR to USD and 10 EUR to GBP.",
        ["convert_currency"],
        [
            ("convert_currency", {"amount": [10], "source": ["EUR"], "target": ["USD"]}),
            ("convert_currency", {"amount": [10], "source": ["EUR"], "target": ["GBP"]}),
        ],
    ),
    Case("irrelevance", "Hello, who are you?", ALL),
    Case("irrelevance", "Write a short poem about the sea.", ["calculator", "get_weather"]),
    Case("irrelevance", "What is the capital of France?", ["convert_currency", "send_email"]),
    Case("irrelevance", "Thank you, that's all.", ["current_time", "word_count"]),
]
CATEGORIES = ["simple", "multiple", "parallel", "irrelevance"]


def _same(expected: Any, given: Any) -> bool:
    if isinstance(expected, str) and expected.startswith("="):
        try:
            return abs(float(calculate(str(given))) - float(expected[1:])) < 1e-6
        except (ValueError, TypeError):
            return False
    if isinstance(expected, int | float):
        try:
            return float(given) == float(expected)
        except (ValueError, TypeError):
            return False
    return " ".join(str(given).lower().split()) == " ".join(str(expected).lower().split())


def _matches(call: Call, made: tuple[str, dict[str, Any]]) -> bool:
    name, accepted = call
    return made[0] == name and all(
        any(_same(v, made[1].get(k)) for v in vals) for k, vals in accepted.items()
    )


def score(case: Case, made: list[tuple[str, dict[str, Any]]]) -> bool:
    """Every expected call made once, and nothing else (BFCL's AST rule, in any order)."""
    if len(made) != len(case.calls):
        return False
    left = list(made)
    for call in case.calls:
        found = next((m for m in left if _matches(call, m)), None)
        if found is None:
            return False
        left.remove(found)
    return True


async def first_reply(model: Model, case: Case, table: dict[str, Tool]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls of the model's first reply to the question."""
    agent = Agent(model=model, tools=[table[name] for name in case.tools], max_iterations=3)
    made: list[tuple[str, dict[str, Any]]] = []
    async for event in agent.stream(case.question):
        if isinstance(event, ToolCallStarted) and event.round == 1:
            arguments = (
                event.arguments if isinstance(event.arguments, dict) else json.loads(event.arguments or "{}")
            )
            made.append((event.name, arguments))
        if isinstance(event, RoundFinished | Finished):
            break
    return made


async def run_model(spec: str, size: int | None, budget: bool) -> dict[str, tuple[int, int]]:
    model = build_model(spec, load_settings())
    if not budget and isinstance(model, LocalModel):
        model.round_seconds = model.run_seconds = None
    table = tools_by_name()
    results: dict[str, list[bool]] = {c: [] for c in CATEGORIES}
    started = time.perf_counter()
    for category in CATEGORIES:
        for case in [c for c in CASES if c.category == category][:size]:
            t = time.perf_counter()
            made = await first_reply(model, case, table)
            ok = score(case, made)
            results[category].append(ok)
            mark, seconds = "✓" if ok else "✗", time.perf_counter() - t
            print(f"  {mark} {seconds:5.1f} s {category:11s} {case.question[:48]:48s} {made}")
    print(f"  ({time.perf_counter() - started:.0f} s)")
    return {c: (sum(r), len(r)) for c, r in results.items()}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", action="append", help="local (default) or local:/path/model.gguf; repeatable"
    )
    parser.add_argument("--size", type=int, default=None, help="cases per category (default: all)")
    parser.add_argument("--no-budget", action="store_true", help="no time budget per round or run")
    args = parser.parse_args()
    table: dict[str, dict[str, tuple[int, int]]] = {}
    for spec in args.model or ["local"]:
        print(f"== {spec}")
        table[spec] = await run_model(spec, args.size, not args.no_budget)
    print("\nmodel".ljust(40) + "".join(c.rjust(13) for c in CATEGORIES) + "overall".rjust(10))
    for spec, scores in table.items():
        cells = "".join(f"{ok}/{n}".rjust(13) for ok, n in scores.values())
        ok, n = sum(s[0] for s in scores.values()), sum(s[1] for s in scores.values())
        print(spec[-39:].ljust(39) + cells + f"{ok / max(n, 1):.0%}".rjust(10))


if __name__ == "__main__":
    asyncio.run(main())
