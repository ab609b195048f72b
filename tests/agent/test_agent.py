"""Agent: what it keeps between runs (the tool engine and its cache) and how it takes model settings."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from loopwright import Agent, tool
from loopwright.agent import ToolCallFinished
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools.base import Tool

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


class CountingToolset:
    """A toolset whose tool list grows by one tool from the second run on."""

    def __init__(self, first: Tool, second: Tool) -> None:
        self.first, self.second, self.asked = first, second, 0

    async def get_tools(self) -> Sequence[Tool]:
        self.asked += 1
        return [self.first] if self.asked == 1 else [self.first, self.second]


async def test_a_toolset_keeps_the_tool_cache_across_runs_and_is_asked_again_each_run() -> None:
    runs: list[str] = []

    @tool(cache_ttl=600)
    def lookup(key: str) -> str:
        """Look a key up."""
        runs.append(key)
        return f"value of {key}"

    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    toolset = CountingToolset(lookup, echo)
    model = ScriptedModel(
        [
            Reply.tool_calls(("lookup", {"key": "k"})),
            Reply.text("one"),
            Reply.tool_calls(("lookup", {"key": "k"}), ("echo", {"text": "hi"})),
            Reply.text("two"),
        ],
        features=FC,
    )
    agent = Agent(model=model, tools=[toolset])
    await agent.run("first")
    events = [e async for e in agent.stream("second")]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert runs == ["k"]  # the second run's lookup came from the cache
    assert [(f.name, f.meta.cached) for f in finished] == [("lookup", True), ("echo", False)]
    assert toolset.asked == 2
    assert [t.name for t in model.requests[2].tools] == ["lookup", "echo"]


async def test_plain_model_params_are_checked() -> None:
    model = ScriptedModel([Reply.text("ok")], features=FC)
    assert (await Agent(model=model, model_params={"temperature": 0, "custom": 1}).run("hi")).text == "ok"
    assert model.requests[0].params == {"temperature": 0, "custom": 1}
    with pytest.raises(TypeError, match="temperature"):
        await Agent(model=ScriptedModel(["ok"]), model_params={"temperature": "warm"}).run("hi")
