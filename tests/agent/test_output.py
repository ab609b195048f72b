"""Structured output: the answer checked against the output type, sent back on a mismatch, and a
plain-text fall-back when it never follows (with the scripted model, both strategies)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pydantic
import pytest
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

from loopwright import Agent
from loopwright.agent.output import OUTPUT_TOOL, output_spec
from loopwright.testing import Reply, ScriptedModel

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


class City(pydantic.BaseModel):
    name: str
    population: int


@dataclasses.dataclass
class CityDC:
    name: str
    population: int


class CityTD(TypedDict):
    name: str
    population: int


RAW_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name", "population"],
}

GOOD = {"name": "Lyon", "population": 513000}
BAD = {"name": "Lyon", "population": "many"}


def fc_answer(value: Any) -> Reply:
    return Reply.tool_calls((OUTPUT_TOOL, value))


def react_answer(value: Any) -> Reply:
    blob = json.dumps({"action": "Final Answer", "action_input": value})
    return Reply.text(f"Thought: I know it.\nAction:\n```\n{blob}\n```")


@pytest.mark.parametrize("output_type", [City, CityDC, CityTD, RAW_SCHEMA], ids=["model", "dc", "td", "raw"])
@pytest.mark.parametrize(("features", "answer"), [(FC, fc_answer), ([], react_answer)], ids=["fc", "react"])
async def test_a_valid_answer_is_the_typed_output(features: list[str], answer: Any, output_type: Any) -> None:
    model = ScriptedModel([answer(GOOD)], features=features)
    result = await Agent(model=model, output_type=output_type).run("Biggest city near the Rhône?")
    assert json.loads(result.text) == GOOD
    assert not result.output_fallback and result.output_errors == []
    value = result.output
    if output_type is City:
        assert value == City(**GOOD)
    elif output_type is CityDC:
        assert value == CityDC(**GOOD)
    else:
        assert value == GOOD
    if features:  # function calling: the output tool is offered, and the prompt says to use it
        assert OUTPUT_TOOL in [t.name for t in model.requests[0].tools]
    else:  # ReAct: the schema travels in the prompt and in the turn (for grammar-constrained models)
        assert model.requests[0].react is not None
        assert model.requests[0].react.output_schema == output_spec(output_type).schema
        assert '"population"' in model.requests[0].messages[0].content  # type: ignore[operator]


@pytest.mark.parametrize(("features", "answer"), [(FC, fc_answer), ([], react_answer)], ids=["fc", "react"])
async def test_an_invalid_answer_goes_back_with_the_errors_then_is_fixed(
    features: list[str], answer: Any
) -> None:
    model = ScriptedModel([answer(BAD), answer(GOOD)], features=features)
    result = await Agent(model=model, output_type=City).run("q")
    assert result.output == City(**GOOD)
    assert not result.output_fallback
    second = model.requests[1].messages
    told = " ".join(str(getattr(m, "content", "")) for m in second)
    assert "population" in told and "does not follow the required JSON Schema" in told


@pytest.mark.parametrize(("features", "answer"), [(FC, fc_answer), ([], react_answer)], ids=["fc", "react"])
async def test_an_answer_invalid_to_the_end_falls_back_to_plain_text(
    features: list[str], answer: Any
) -> None:
    model = ScriptedModel([answer(BAD)] * 3, features=features)
    result = await Agent(model=model, output_type=City, output_retries=2).run("q")
    assert len(model.requests) == 3  # the first answer and two retries
    assert result.output is None
    assert result.output_fallback
    assert any("population" in e for e in result.output_errors)
    assert json.loads(result.text) == BAD  # the model's last answer, as text


async def test_a_plain_text_answer_from_a_function_calling_model_is_checked_too() -> None:
    replies = [Reply.text("Lyon, about half a million"), Reply.text(json.dumps(GOOD))]
    model = ScriptedModel(replies, features=FC)
    result = await Agent(model=model, output_type=City).run("q")
    assert result.output == City(**GOOD)
    assert "not valid JSON" in str(model.requests[1].messages[-1].content)


async def test_the_time_budget_stops_the_retries() -> None:
    now = [0.0]

    def clock() -> float:
        return now[0]

    class Slow(ScriptedModel):
        def stream(self, *args: Any, **kwargs: Any) -> Any:
            now[0] += 10.0  # every model call takes ten seconds on the injected clock
            return super().stream(*args, **kwargs)

    model = Slow([fc_answer(BAD)] * 3, features=FC)
    agent = Agent(model=model, output_type=City, output_retries=5, output_time_budget=15.0, clock=clock)
    result = await agent.run("q")
    assert len(model.requests) == 2  # 10 s: one retry; 20 s: over the budget, no more
    assert result.output_fallback and result.output is None


async def test_a_scalar_schema_travels_wrapped_in_the_output_tool() -> None:
    model = ScriptedModel([Reply.tool_calls((OUTPUT_TOOL, {"response": 42}))], features=FC)
    result = await Agent(model=model, output_type=int).run("q")
    assert result.output == 42 and result.text == "42"


def test_a_bad_output_type_is_refused_when_the_agent_is_made() -> None:
    with pytest.raises(ValueError, match="JSON Schema"):
        Agent(model=ScriptedModel([]), output_type={"type": "no-such-type"})
