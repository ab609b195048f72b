"""The agent loop: what a run reports when it ends."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.agent import ToolCallFinished
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


async def test_metrics_times_on_the_agents_clock() -> None:
    model = ScriptedModel([Reply.tool_calls(("add", {"a": 1, "b": 2})), Reply.text("3")], features=FC)
    result = await Agent(model=model, tools=[add], clock=Ticks()).run("go")
    m = result.metrics
    assert m is not None
    # Clock reads: start 1; round 1 sent 2, read 3; round 2 sent 4, first text 5, read 6; end 7.
    assert (m.model_time, m.time_to_first_token, m.total_time) == (1.0 + 2.0, 4.0, 6.0)
    assert result.usage.latency == 3.0  # the rounds' usage carries the same model time


class TimedModel(ScriptedModel):
    """A scripted model with a budget for a whole run (RunTimedModel): notes each round's time."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.elapsed: list[float] = []

    def stream_timed(self, messages: Any, *, elapsed: float, **rest: Any) -> Any:
        self.elapsed.append(elapsed)
        return self.stream(messages, **rest)


async def test_a_model_with_a_run_budget_is_told_the_run_time_of_each_round() -> None:
    """Function calling, as ReAct rounds are (ReactTurn.elapsed): the embedded model with a native
    tool-call format sizes each round from what the run has left."""
    model = TimedModel([Reply.tool_calls(("add", {"a": 1, "b": 2})), Reply.text("3")], features=FC)
    result = await Agent(model=model, tools=[add], clock=Ticks()).run("go")
    assert result.text == "3"
    # Clock reads: start 1; round 1 sent 2 (1 s in); round 2 sent 4 (3 s in)
    assert model.elapsed == [1.0, 3.0]


async def test_a_run_without_text_has_no_time_to_first_token() -> None:
    result = await Agent(model=ScriptedModel([""], features=FC)).run("go")
    assert result.metrics is not None
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
    assert result.metrics is not None and result.metrics.tool_errors == 1
    tool_message = result.messages[-2]
    assert "not in the sandbox" in str(tool_message.content)
