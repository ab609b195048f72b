"""Plain phrasings on the embedded model: the share answered right *with a tool call*.

Forty questions a newcomer might type into ``loopwright run`` — arithmetic stated several ways,
percentages, unit conversions, the current time and date in a zone — each run whole, as the CLI
runs it: the embedded model (SmolLM2-135M, greedy), the CLI's default tools (calculator and
current_time), the CLI's iteration limit. A question counts as right when the expected tool was
called and the final answer states its result: for arithmetic the right number, for the time the
date or the hour and minute the tool returned. The questions are written here as data; nothing in
the project looks at their wording.

Run: .venv/bin/python bench/eval_local_phrasings.py [--model PATH.gguf] [--only TEXT]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import re
import time

from loopwright import Agent
from loopwright.agent import Finished, ToolCallFinished
from loopwright.model.local import LocalModel
from loopwright.tools.builtin import calculator_tool, current_time_tool

# (question, expected tool, expected number for the calculator or None for the time)
PHRASINGS: list[tuple[str, str, float | None]] = [
    # arithmetic, stated several ways
    ("What is 17 * 23?", "calculator", 391),
    ("What's 17 times 23?", "calculator", 391),
    ("Multiply 48 by 12.", "calculator", 576),
    ("How much is 1234 plus 5678?", "calculator", 6912),
    ("Add 345 and 789.", "calculator", 1134),
    ("What is 1000 minus 357?", "calculator", 643),
    ("Subtract 89 from 250.", "calculator", 161),
    ("Divide 144 by 12.", "calculator", 12),
    ("What is 7 squared?", "calculator", 49),
    ("What is 2 to the power of 16?", "calculator", 65536),
    ("What is the square root of 625?", "calculator", 25),
    ("Calculate (15 + 27) * 3.", "calculator", 126),
    ("I bought 3 books at 14 dollars each. How much did I pay?", "calculator", 42),
    ("A train travels 60 km per hour for 4 hours. How far does it go?", "calculator", 240),
    ("What is 9 * 8 * 7?", "calculator", 504),
    ("Compute 3.5 * 4.", "calculator", 14),
    # percentages
    ("What is 12% of 250?", "calculator", 30),
    ("What's 15 percent of 80?", "calculator", 12),
    ("Calculate 20% of 45.", "calculator", 9),
    ("How much is 7.5% of 200?", "calculator", 15),
    ("A shirt costs 40 dollars and is 25% off. How much is the discount?", "calculator", 10),
    ("What is 50 as a percentage of 200?", "calculator", 25),
    ("Increase 80 by 10 percent.", "calculator", 88),
    ("What is 3% of 1500?", "calculator", 45),
    # unit conversions
    ("How many centimeters are in 5 inches?", "calculator", 12.7),
    ("Convert 10 kilometers to meters.", "calculator", 10000),
    ("How many minutes are in 3.5 hours?", "calculator", 210),
    ("How many seconds are in a day?", "calculator", 86400),
    ("Convert 2.5 kilograms to grams.", "calculator", 2500),
    ("How many feet are in 36 inches?", "calculator", 3),
    ("How many hours are in 2 weeks?", "calculator", 336),
    ("Convert 100 degrees Celsius to Fahrenheit.", "calculator", 212),
    # the current time and date in a zone
    ("What time is it now in UTC?", "current_time", None),
    ("What time is it in Tokyo right now?", "current_time", None),
    ("What's the current time in Europe/Paris?", "current_time", None),
    ("What is today's date?", "current_time", None),
    ("What day of the week is it today?", "current_time", None),
    ("What is the date in New York right now?", "current_time", None),
    ("Tell me the current time in London.", "current_time", None),
    ("What time is it?", "current_time", None),
]

_TIME = re.compile(r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}):\d{2} (\w+)")


def states_number(answer: str, value: float) -> bool:
    """Whether the answer contains the number (as the calculator writes it, or as an integer)."""
    forms = {f"{value:g}", str(value)}
    if float(value).is_integer():
        forms.add(str(int(value)))
    return any(re.search(rf"(?<![\d.]){re.escape(form)}(?![\d])", answer.replace(",", "")) for form in forms)


def states_time(answer: str, observation: str) -> bool:
    """Whether the answer carries the tool's date, its hour and minute, or its weekday."""
    found = _TIME.search(observation)
    if found is None:
        return False
    date, clock, weekday = found.groups()
    return any(part in answer for part in (date, clock, weekday))


def right(expected: str, value: float | None, calls: list[tuple[str, str]], answer: str) -> bool:
    observations = [o for name, o in calls if name == expected]
    if not observations:
        return False
    if value is None:
        return any(states_time(answer, o) for o in observations)
    numbers = []
    for o in observations:
        try:
            numbers.append(float(o))
        except ValueError:
            continue
    return any(math.isclose(n, value, rel_tol=1e-6) for n in numbers) and states_number(answer, value)


async def run_one(agent: Agent, question: str) -> tuple[list[tuple[str, str]], str]:
    calls: list[tuple[str, str]] = []
    answer = ""
    async for event in agent.stream(question):
        if isinstance(event, ToolCallFinished):
            calls.append((event.name, event.observation))
        elif isinstance(event, Finished):
            answer = event.result.text
    return calls, answer


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="a GGUF path (default: the embedded SmolLM2-135M)")
    parser.add_argument("--only", action="append", default=[], help="only questions containing this text")
    args = parser.parse_args()
    cases = [c for c in PHRASINGS if not args.only or any(o.lower() in c[0].lower() for o in args.only)]
    model = LocalModel(args.model)
    await model.load()
    agent = Agent(model=model, tools=[calculator_tool(), current_time_tool()], max_iterations=10)
    score: dict[str, list[bool]] = {}
    started = time.perf_counter()
    for question, expected, value in cases:
        calls, answer = await run_one(agent, question)
        ok = right(expected, value, calls, answer)
        kind = "time" if value is None else "calculator"
        score.setdefault(kind, []).append(ok)
        tools = ",".join(name for name, _ in calls) or "-"
        print(f"{'✓' if ok else '✗'} {question[:58]:58s} tools {tools:24s} {answer[:50]!r}", flush=True)
    total = [ok for oks in score.values() for ok in oks]
    for kind, oks in score.items():
        print(f"{kind}: {sum(oks)}/{len(oks)}")
    print(f"answered right with a tool call: {sum(total)}/{len(total)} = {sum(total) / len(total):.0%}")
    print(f"time: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    asyncio.run(main())
