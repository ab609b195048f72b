"""What one LocalModel call asks llama.cpp for — prompt, stops, sampling, the ReAct options and the
calibration prompts — read off the request before generation. No weights are loaded: the loaded
model is a stand-in whose chat template prints the messages, and generation only records."""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent
from loopwright.model import local
from loopwright.model._local_budget import OUT_OF_TIME, Pace
from loopwright.model._local_prompt import TOOL_EXAMPLES, question_context
from loopwright.model.base import ReactTurn
from loopwright.model.entities import LLMChunk, ModelMode, SystemMessage, ToolSchema, UserMessage
from loopwright.model.local import NEUTRAL_QUESTION, LocalModel
from loopwright.tools.builtin import builtin_tools

CALC = ToolSchema(name="calc", description="Arithmetic.", parameters={"type": "object", "properties": {}})
CLOCK = ToolSchema(name="clock", description="The time.", parameters={"type": "object", "properties": {}})
KEY = ("stand-in.gguf", 1, 1)


def template(messages: list[dict[str, str]]) -> tuple[str, list[str]]:
    return json.dumps(messages), ["<|end|>"]


@pytest.fixture
def requests(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []

    async def generate(loaded: Any, request: Any) -> AsyncGenerator[LLMChunk, None]:
        seen.append(request)
        yield LLMChunk(text="a")
        yield LLMChunk(text="b", finish_reason="stop")

    monkeypatch.setattr(local, "_generate", generate)
    monkeypatch.setattr(LocalModel, "_key", lambda self: KEY)
    monkeypatch.setitem(local._cache, KEY, local._Loaded(None, template, None, 0.0, Pace(10.0)))  # type: ignore[arg-type]
    return seen


def small() -> LocalModel:
    return LocalModel(temperature=0.3, max_tokens=50)


def own() -> LocalModel:  # a model of the user's choosing: the standard prompt
    return LocalModel(Path("/models/x.gguf"))


async def run(model: LocalModel, messages: list[Any], turn: ReactTurn | None = None, **kw: Any) -> list[str]:
    stream = model.stream(messages, **kw) if turn is None else model.stream_react(messages, turn, **kw)
    return [c.text async for c in stream]


def fields(request: Any) -> dict[str, Any]:
    return dict(vars(request))


async def test_a_plain_call(requests: list[Any]) -> None:
    messages = [UserMessage("hi")]
    assert await run(small(), messages, stop=["X"], params={"top_k": 5, "n": 2, "seed": 1}) == ["a", "b"]
    assert fields(requests[0]) == {
        "prompt": json.dumps([{"role": "user", "content": "hi"}]),
        "stop": ["X", "<|end|>"],
        "max_tokens": 50,
        "sampling": {"top_k": 5, "seed": 1, "temperature": 0.3, "repeat_penalty": 1.1},
        "react_tools": None,
        "tool_choice": "auto",
        "prefix": "Thought: ",
        "neutral_prompt": None,
        "observation": None,
        "output_schema": None,
        "question": None,
        "question_contexts": None,
        "cached": None,
        "chosen": None,
        "round_seconds": 12.0,
        "run_deadline": math.inf,
        "clock": time.perf_counter,
        "out_of_time": None,
        "tool_format": None,
        "subjects": [],
        "units": [],
    }
    # The caller's sampling wins over the defaults; tool_choice is passed as a string.
    await run(
        small(),
        messages,
        params={"temperature": 0, "repeat_penalty": 1.0, "max_tokens": "7", "tool_choice": 3},
    )
    r = requests[1]
    assert (
        r.sampling == {"temperature": 0, "repeat_penalty": 1.0} and r.max_tokens == 7 and r.tool_choice == "3"
    )


async def test_completion_mode_continues_the_text_as_is(requests: list[Any]) -> None:
    model = small()
    model.mode = ModelMode.COMPLETION
    await run(model, [SystemMessage("Q: 1+1\n"), UserMessage("Thought:")], ReactTurn(tools=[]))
    r = requests[0]
    assert r.prompt == "Q: 1+1\nThought:" and r.stop == [] and r.prefix == " "
    assert r.react_tools == [] and r.neutral_prompt is None  # a last round: nothing to calibrate


async def test_the_question_round_of_the_small_model(requests: list[Any]) -> None:
    messages = [SystemMessage(f"tools {TOOL_EXAMPLES}"), UserMessage("  what is 2+2?  ")]
    schema = {"type": "object"}
    await run(small(), messages, ReactTurn(tools=[CALC, CLOCK], output_schema=schema))
    r = requests[0]
    assert TOOL_EXAMPLES not in r.prompt and "what is 2+2?" in r.prompt
    assert r.react_tools == [CALC, CLOCK] and r.tool_choice == "auto" and r.observation is None
    assert r.output_schema is schema
    assert NEUTRAL_QUESTION in r.neutral_prompt and "2+2" not in r.neutral_prompt
    assert r.question == "what is 2+2?"
    assert r.question_contexts == [
        ("calc", question_context(CALC)),
        ("clock", question_context(CLOCK)),
        ("none", question_context(None)),
    ]


async def test_a_blank_question_or_another_model_is_calibrated_by_the_neutral_prompt_only(
    requests: list[Any],
) -> None:
    await run(small(), [UserMessage("   ")], ReactTurn(tools=[CALC]))
    await run(own(), [UserMessage("what is 2+2?")], ReactTurn(tools=[CALC]))
    for r in requests:
        assert r.neutral_prompt is not None and r.question is None and r.question_contexts is None
    assert requests[1].observation is None  # another model's prompt does not repeat the observation
    await run(small(), [], ReactTurn(tools=[CALC]))  # no messages: no question to replace
    assert requests[2].neutral_prompt is None


@pytest.mark.parametrize(
    ("model", "choice", "failed", "expected"),
    [
        (small, "auto", False, "none"),  # after a tool round that worked, the small model answers
        (small, "required", False, "required"),
        (small, "calc", False, "calc"),
        (small, "auto", True, "auto"),  # it failed: the model may try again
        (own, "auto", False, "auto"),
    ],
)
async def test_the_round_after_a_tool_call(
    requests: list[Any], model: Any, choice: str, failed: bool, expected: str
) -> None:
    m = model()
    await run(
        m,
        [UserMessage("q")],
        ReactTurn(tools=[CALC], observation="4", failed=failed),
        params={"tool_choice": choice},
    )
    r = requests[0]
    assert r.tool_choice == expected
    assert r.observation == ("4" if m.react_continue else None)
    assert r.neutral_prompt is None and r.question is None  # no question is asked on this round


class FakeClock:
    """A clock that reads ``now``; a test moves it on (no sleeping)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_each_round_gets_what_the_run_has_left(requests: list[Any]) -> None:
    clock = FakeClock()
    model = LocalModel(clock=clock)  # the stand-in's pace: 10 tokens/s, a short answer takes 4 s
    question = [SystemMessage("tools"), UserMessage("what is 2+2?")]
    await run(model, question, ReactTurn(tools=[CALC], elapsed=1.0))
    first = requests[0]
    assert first.round_seconds == 12.0 and first.tool_choice == "auto"  # the round's own cap
    assert first.run_deadline == clock.now + 29.0
    await run(model, question, ReactTurn(tools=[CALC], elapsed=20.0))
    assert requests[1].round_seconds == 6.0  # 10 s left, less a short answer's 4 s for the next round
    await run(model, question, ReactTurn(tools=[CALC], elapsed=24.0))
    late = requests[2]  # 6 s left: no room for a tool call and the answer after it
    assert late.tool_choice == "none" and late.round_seconds == 6.0


async def test_a_run_whose_time_is_spent_ends_with_an_honest_answer_without_the_model(
    requests: list[Any],
) -> None:
    model = LocalModel(clock=FakeClock())
    texts = await run(model, [UserMessage("what is 2+2?")], ReactTurn(tools=[CALC], elapsed=29.9))
    assert not requests  # llama.cpp is not asked
    assert json.loads("".join(texts).removeprefix("Action: "))["action_input"] == OUT_OF_TIME
    after_tool = await run(model, [UserMessage("q")], ReactTurn(tools=[], observation="391", elapsed=31.0))
    assert "391" in "".join(after_tool) and not requests


async def test_the_agent_tells_the_model_how_long_its_run_has_taken(
    requests: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    seen: list[ReactTurn] = []

    async def generate(loaded: Any, request: Any) -> AsyncGenerator[LLMChunk, None]:
        seen.append(request)
        clock.now += 40.0  # the round takes 40 s of the run's clock (a very busy machine)
        action = {"action": "calculator", "action_input": {"expression": "2 + 2"}}
        yield LLMChunk(text=f"Thought: Tool needed: calculator.\n\nAction: {json.dumps(action)}")
        yield LLMChunk(finish_reason="stop")

    monkeypatch.setattr(local, "_generate", generate)
    model = LocalModel(clock=clock)
    agent = Agent(model=model, tools=[t for t in builtin_tools() if t.name == "calculator"], clock=clock)
    result = await agent.run("What is 2 + 2?")
    # The tool round began at 0 s and called the calculator; the next round began 40 s in, past
    # the run's 30 s: the run ended there, honestly, with the calculator's result, and no model call.
    assert len(seen) == 1 and seen[0].run_deadline == 1030.0
    assert result.text == "I ran out of time; the last result was: 4"
    assert result.rounds == 2
