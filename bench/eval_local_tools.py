"""Tool-selection accuracy of the embedded model on questions written for it.

Each question has an expected tool (or none). For each, the agent runs its first round on the
embedded model (temperature 0) with every built-in tool and a weather tool offered — or, with
``--rank K``, the K of them the tool ranker (``loopwright.tools.ranking``, the packaged MiniLM) finds
most relevant to the question — and we record which tool it called (or that it answered directly)
and whether the arguments were valid (the tool accepted them; for arithmetic, the result is also the
right number). Then the final answers: each arithmetic question run whole with the calculator alone
offered; among the runs whose calculator call returned the right number, how many final answers state
it (``--free-thought``: as before the final thought was anchored to the observation, for comparison).

Run: .venv/bin/python bench/eval_local_tools.py [--model SPEC] [--rank K] [--only TEXT …] [--selection-only]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import re
import time

from loopwright import Agent, tool
from loopwright.agent import Finished, ToolCallFinished, ToolCallStarted
from loopwright.model import _local_grammar as local_grammar
from loopwright.model.local import LocalModel
from loopwright.tools.builtin import builtin_tools
from loopwright.tools.ranking import ToolRanker


@tool
async def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city name, e.g. "Paris".
    """
    return f"Sunny, 21 °C in {city}."


# (question, expected tool or None, expected numeric result for the calculator)
CASES: list[tuple[str, str | None, float | None]] = [
    ("Use the calculator to compute 17 * 23.", "calculator", 391),
    ("What is 12% of 250?", "calculator", 30),
    ("What is 1234 + 5678?", "calculator", 6912),
    ("Calculate 2 to the power of 10.", "calculator", 1024),
    ("What is the square root of 144?", "calculator", 12),
    ("What is 100 divided by 8?", "calculator", 12.5),
    ("Multiply 9 by 7.", "calculator", 63),
    ("What is 45 minus 17?", "calculator", 28),
    ("I have 3 boxes of 12 eggs. How many eggs is that? Use the calculator.", "calculator", 36),
    ("Compute 15 * 15 with the calculator.", "calculator", 225),
    ("What is 987 - 654?", "calculator", 333),
    ("What time is it now?", "current_time", None),
    ("What time is it now in UTC?", "current_time", None),
    ("What is the current time in Tokyo?", "current_time", None),
    ("What's today's date?", "current_time", None),
    ("Tell me the current time in Europe/Paris.", "current_time", None),
    ("What day of the week is it today?", "current_time", None),
    ("What's the weather like in Paris?", "get_weather", None),
    ("Is it raining in London right now?", "get_weather", None),
    ("What is the weather in Berlin?", "get_weather", None),
    ("How warm is it in Madrid today?", "get_weather", None),
    ("Hello!", None, None),
    ("Who are you?", None, None),
    ("Thank you for your help!", None, None),
    ("Tell me a joke.", None, None),
    ("Good morning!", None, None),
]


async def first_call(agent: Agent, question: str) -> tuple[str | None, str]:
    name: str | None = None
    observation = ""
    async for event in agent.stream(question):
        if isinstance(event, ToolCallStarted) and name is None:
            name = event.name
        elif isinstance(event, ToolCallFinished):
            observation = event.observation
            break  # the first round decides the tool; stop the run there
    return name, observation


async def final_answer(agent: Agent, question: str) -> tuple[list[str], str]:
    """The calculator's observations and the final answer of one whole run."""
    observations: list[str] = []
    answer = ""
    async for event in agent.stream(question):
        if isinstance(event, ToolCallFinished):
            observations.append(event.observation)
        elif isinstance(event, Finished):
            answer = event.result.text
    return observations, answer


def states(answer: str, value: float) -> bool:
    """Whether the answer contains the number (as the calculator writes it, or as an integer)."""
    forms = {f"{value:g}", str(value)}
    if float(value).is_integer():
        forms.add(str(int(value)))
    return any(re.search(rf"(?<![\d.]){re.escape(form)}(?![\d])", answer) for form in forms)


def arguments_valid(name: str, observation: str, expected: float | None) -> bool:
    if observation.startswith(("tool invoke error", "tool parameters validation error", "there is not")):
        return False
    if name == "calculator" and expected is not None:
        try:
            return math.isclose(float(observation), expected, rel_tol=1e-9)
        except ValueError:
            return False
    return True


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="a GGUF path (default: the embedded SmolLM2-135M)")
    parser.add_argument(
        "--free-thought", action="store_true", help="do not anchor the final thought to the observation"
    )
    parser.add_argument("--rank", type=int, default=0, help="offer only the K tools the ranker finds best")
    parser.add_argument(
        "--only", action="append", default=[], help="only the questions containing this text (repeatable)"
    )
    parser.add_argument("--selection-only", action="store_true", help="skip the final-answer part")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.only or any(o.lower() in c[0].lower() for o in args.only)]
    if args.free_thought:
        local_grammar.observation_fits = lambda _: False
    model = LocalModel(args.model)
    await model.load()
    selector = ToolRanker(threshold=args.rank, top_k=args.rank) if args.rank else None
    tools = [*builtin_tools(), get_weather]
    agent = Agent(model=model, tools=tools, max_iterations=2, tool_selector=selector)
    print(
        f"{len(tools)} tools; "
        + (f"the ranker offers {args.rank} per question" if args.rank else "all offered")
    )
    right_tool = valid = 0
    started = time.perf_counter()
    for question, expected, value in cases:
        name, observation = await first_call(agent, question)
        ok = name == expected
        good_args = ok and (name is None or arguments_valid(name, observation, value))
        right_tool += ok
        valid += good_args
        mark = "✓" if good_args else ("~" if ok else "✗")
        want, got = expected or "-", name or "-"
        print(f"{mark} {question[:60]:60s} expected {want:13s} got {got:13s} {observation[:40]!r}")
    n = len(cases)
    print(f"\ntool selection: {right_tool}/{n} = {right_tool / n:.0%}")
    print(f"right tool with valid arguments (right number for arithmetic): {valid}/{n} = {valid / n:.0%}")
    print(f"time: {time.perf_counter() - started:.1f} s for {n} questions")
    if args.selection_only:
        return
    calculating = Agent(model=model, tools=[t for t in builtin_tools() if t.name == "calculator"])
    right = stated = 0
    for question, _, value in cases:
        if value is None:
            continue
        observations, answer = await final_answer(calculating, question)
        if not any(arguments_valid("calculator", o, value) for o in observations):
            print(f"- {question[:60]:60s} (no right result from the calculator: {observations})")
            continue
        right += 1
        stated += states(answer, value)
        print(f"{'✓' if states(answer, value) else '✗'} {question[:60]:60s} {answer[:60]!r}")
    share = stated / max(right, 1)
    print(f"final answers stating the calculator's right result: {stated}/{right} = {share:.0%}")


if __name__ == "__main__":
    asyncio.run(main())
