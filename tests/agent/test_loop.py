"""The agent loop: what a run reports when it ends."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.agent import ToolCallFinished
from loopwright.model.entities import Usage
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools import TextMessage
from loopwright.tools.base import Tool, ToolContext, ToolOutput
from loopwright.tools.engine import ToolCaller

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


@pytest.mark.parametrize("features", [FC, []], ids=["function-calling", "react"])
@pytest.mark.parametrize(
    ("model_reason", "reported"),
    [(None, "stop"), ("length", "length"), ("content_filter", "content_filter"), ("eos", "stop")],
)
async def test_the_run_reports_the_model_finish_reason(
    features: list[str], model_reason: str | None, reported: str
) -> None:
    model = ScriptedModel([Reply.text("cut sho", finish_reason=model_reason)], features=features)
    result = await Agent(model=model).run("go")
    assert result.text == "cut sho"
    assert result.finish_reason == reported


class Ticks:
    """A clock that moves one second each time it is read: every figure below is exact."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def broken(x: str) -> str:
    """Always fails."""
    raise RuntimeError("no")


async def test_metrics_of_a_run_with_tools() -> None:
    usage = Usage(prompt_tokens=10, completion_tokens=4, total_tokens=14, total_price=Decimal("0.002"))
    model = ScriptedModel(
        [
            Reply.tool_calls(("add", {"a": 1, "b": 2}), ("broken", {"x": "y"}), usage=usage),
            Reply.text("3", usage=usage),
        ],
        features=FC,
    )
    result = await Agent(model=model, tools=[add, broken], clock=Ticks()).run("go")
    m = result.metrics
    assert (m.rounds, m.tool_calls, m.tool_errors, m.tool_success_rate) == (2, 2, 1, 0.5)
    assert set(m.tool_time) == {"add", "broken"}
    assert (m.tokens_in, m.tokens_out, m.price) == (20, 8, Decimal("0.004"))
    # Clock reads: start 1; round 1 starts 2, ends 3; round 2 starts 4, first text 5, ends 6; close 7.
    assert m.model_time == 1.0 + 2.0
    assert m.time_to_first_token == 4.0
    assert m.duration == 6.0
    assert m.to_dict()["price"] == "0.004" and m.to_dict()["tool_success_rate"] == 0.5
    summary = m.summary()
    assert "2 rounds" in summary and "2 tool calls (1 failed)" in summary and "20 in / 8 out" in summary


async def test_metrics_count_recovered_malformed_replies() -> None:
    broken_reply = (
        'Thought: use add\nAction:\n```json\n{"action": "add", "action_input": {"a": 1, "b": }\n```\n'
    )
    final = 'Thought: ok\nAction:\n```json\n{"action": "Final Answer", "action_input": "2"}\n```\n'
    result = await Agent(model=ScriptedModel([broken_reply, final]), tools=[add]).run("go")
    assert result.text == "2"
    assert result.metrics.malformed_recovered == 1 and result.metrics.tool_calls == 0
    assert result.metrics.tool_success_rate is None


async def test_a_run_without_text_has_no_time_to_first_token() -> None:
    result = await Agent(model=ScriptedModel([""], features=FC)).run("go")
    assert result.metrics.time_to_first_token is None and result.metrics.rounds == 1


async def test_tool_hook_can_wrap_change_or_replace_a_call() -> None:
    seen: list[tuple[str, dict[str, Any], str]] = []

    async def hook(t: Tool, args: dict[str, Any], ctx: ToolContext, call: ToolCaller) -> list[ToolOutput]:
        seen.append((t.name, args, ctx.user_id))
        if t.name == "broken":
            return [TextMessage("mocked")]  # replaced: the real tool never runs
        return await call({**args, "b": 100})  # changed arguments

    model = ScriptedModel(
        [Reply.tool_calls(("add", {"a": 1, "b": 2}), ("broken", {"x": "y"})), Reply.text("done")],
        features=FC,
    )
    agent = Agent(model=model, tools=[add, broken], tool_hook=hook)
    events = [e async for e in agent.stream("go", context=ToolContext(user_id="ann"))]
    observations = {e.name: e.observation for e in events if isinstance(e, ToolCallFinished)}
    assert observations == {"add": "101", "broken": "mocked"}
    assert seen == [("add", {"a": 1, "b": 2}, "ann"), ("broken", {"x": "y"}, "ann")]


async def test_a_raising_tool_hook_is_the_tools_error() -> None:
    async def hook(t: Tool, args: dict[str, Any], ctx: ToolContext, call: ToolCaller) -> list[ToolOutput]:
        raise PermissionError("not in the sandbox")

    model = ScriptedModel([Reply.tool_calls(("add", {"a": 1, "b": 2})), Reply.text("no")], features=FC)
    result = await Agent(model=model, tools=[add], tool_hook=hook).run("go")
    assert result.metrics.tool_errors == 1
    tool_message = result.messages[-2]
    assert "not in the sandbox" in str(tool_message.content)
