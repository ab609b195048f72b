"""Agent callbacks: the events of a run in order, sync and async, and a failing callback changes nothing."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from loopwright import Agent, AgentMaxIterationError, tool
from loopwright.agent.callbacks import AgentCallback, RunInfo, load_callback
from loopwright.agent.events import AgentResult, RoundFinished, TextDelta, ToolCallFinished, ToolCallStarted
from loopwright.model.entities import PromptMessage, ToolSchema, Usage
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools.base import ToolContext

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def broken(x: str) -> str:
    """Always fails."""
    raise RuntimeError(f"disk on fire ({x})")


class Recorder(AgentCallback):
    """Every event as a short tuple, chunks joined per round."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.runs: set[str] = set()

    def _add(self, run: RunInfo, *item: Any) -> None:
        self.runs.add(run.id)
        self.events.append(item)

    def on_agent_start(self, run: RunInfo) -> None:
        self._add(run, "agent_start", run.query, run.strategy)

    def on_agent_finish(self, run: RunInfo, result: AgentResult) -> None:
        self._add(run, "agent_finish", result.text)

    def on_agent_error(self, run: RunInfo, error: BaseException) -> None:
        self._add(run, "agent_error", type(error).__name__)

    def on_round_start(self, run: RunInfo, round: int) -> None:
        self._add(run, "round_start", round)

    def on_round_end(self, run: RunInfo, event: RoundFinished) -> None:
        self._add(run, "round_end", event.round, [c.name for c in event.calls])

    def on_llm_start(
        self, run: RunInfo, round: int, messages: Sequence[PromptMessage], tools: Sequence[ToolSchema]
    ) -> None:
        self._add(run, "llm_start", round, [t.name for t in tools])

    def on_llm_chunk(self, run: RunInfo, delta: TextDelta) -> None:
        last = self.events[-1] if self.events else None
        if last is not None and last[0] == "llm_chunk" and last[1] == delta.channel:
            self.events[-1] = ("llm_chunk", delta.channel, last[2] + delta.text)
        else:
            self._add(run, "llm_chunk", delta.channel, delta.text)

    def on_llm_end(self, run: RunInfo, round: int, usage: Usage) -> None:
        assert usage.latency > 0
        self._add(run, "llm_end", round)

    def on_tool_start(self, run: RunInfo, event: ToolCallStarted) -> None:
        self._add(run, "tool_start", event.name, event.arguments)

    def on_tool_end(self, run: RunInfo, event: ToolCallFinished) -> None:
        self._add(run, "tool_end", event.name, event.observation)

    def on_tool_error(self, run: RunInfo, event: ToolCallFinished) -> None:
        self._add(run, "tool_error", event.name, event.meta.error)


async def test_function_calling_run_reports_every_event_in_order() -> None:
    rec = Recorder()
    model = ScriptedModel(
        [Reply.tool_calls(("add", {"a": 2, "b": 3}), text="Adding."), Reply.text("It is 5.")], features=FC
    )
    result = await Agent(model=model, tools=[add], callbacks=[rec]).run("2+3?")
    assert result.text == "It is 5."
    assert rec.events == [
        ("agent_start", "2+3?", "function-calling"),
        ("round_start", 1),
        ("llm_start", 1, ["add"]),
        ("llm_chunk", "thought", "Adding."),
        ("llm_end", 1),
        ("tool_start", "add", {"a": 2, "b": 3}),
        ("tool_end", "add", "5"),
        ("round_end", 1, ["add"]),
        ("round_start", 2),
        ("llm_start", 2, ["add"]),
        ("llm_chunk", "thought", "It is 5."),
        ("llm_end", 2),
        ("round_end", 2, []),
        ("agent_finish", "It is 5."),
    ]
    assert len(rec.runs) == 1


def react_action(name: str, action_input: object, thought: str) -> str:
    blob = json.dumps({"action": name, "action_input": action_input})
    return f"Thought: {thought}\nAction:\n```json\n{blob}\n```\n"


async def test_react_run_reports_thoughts_tools_and_the_answer() -> None:
    rec = Recorder()
    model = ScriptedModel(
        [react_action("add", {"a": 1, "b": 1}, "Use add."), react_action("Final Answer", "2", "Done.")]
    )
    await Agent(model=model, tools=[add], callbacks=[rec]).run("1+1?")
    names = [e[0] for e in rec.events]
    assert names == [
        "agent_start",
        "round_start",
        "llm_start",
        "llm_chunk",
        "llm_end",
        "tool_start",
        "tool_end",
        "round_end",
        "round_start",
        "llm_start",
        "llm_chunk",
        "llm_end",
        "llm_chunk",
        "round_end",
        "agent_finish",
    ]
    assert rec.events[0][2] == "react"
    assert rec.events[2] == ("llm_start", 1, ["add"])  # ReAct offers its tools in the prompt
    assert "Use add." in rec.events[3][2]
    assert rec.events[12] == ("llm_chunk", "answer", "2")


async def test_a_failing_tool_is_reported_as_tool_error() -> None:
    rec = Recorder()
    model = ScriptedModel([Reply.tool_calls(("broken", {"x": "a"})), Reply.text("sorry")], features=FC)
    await Agent(model=model, tools=[broken], callbacks=[rec]).run("go")
    errors = [e for e in rec.events if e[0].startswith("tool_")]
    assert errors == [("tool_start", "broken", {"x": "a"}), ("tool_error", "broken", "disk on fire (a)")]


async def test_a_run_that_errors_ends_with_agent_error() -> None:
    rec = Recorder()
    model = ScriptedModel([Reply.tool_calls(("add", {"a": 1, "b": 1}))] * 2, features=FC)
    with pytest.raises(AgentMaxIterationError):
        await Agent(model=model, tools=[add], max_iterations=1, callbacks=[rec]).run("go")
    assert rec.events[-1] == ("agent_error", "AgentMaxIterationError")
    assert [e[0] for e in rec.events].count("agent_finish") == 0


async def test_a_stopped_run_ends_with_agent_error() -> None:
    rec = Recorder()
    model = ScriptedModel([Reply.text("a long answer that streams")], features=FC, chunk_size=2)
    stream = Agent(model=model, callbacks=[rec]).stream("go")
    async for event in stream:
        if type(event) is TextDelta:
            break
    await stream.aclose()
    assert rec.events[-1] == ("agent_error", "GeneratorExit")


async def test_closing_the_stream_at_finished_is_not_an_error() -> None:
    rec = Recorder()
    stream = Agent(model=ScriptedModel(["hi"], features=FC), callbacks=[rec]).stream("go")
    async for event in stream:
        if event.type == "finished":
            break
    await stream.aclose()
    assert rec.events[-1] == ("agent_finish", "hi")


async def test_a_raising_callback_is_logged_and_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    class Raising(AgentCallback):
        def on_llm_chunk(self, run: RunInfo, delta: TextDelta) -> None:
            raise ValueError("callback bug")

        async def on_tool_start(self, run: RunInfo, event: ToolCallStarted) -> None:
            raise ValueError("async callback bug")

    def script() -> ScriptedModel:
        return ScriptedModel(
            [Reply.tool_calls(("add", {"a": 2, "b": 3}), text="Adding."), Reply.text("5")], features=FC
        )

    plain = [e async for e in Agent(model=script(), tools=[add]).stream("go")]
    agent = Agent(model=script(), tools=[add], callbacks=[Raising()])
    with caplog.at_level(logging.ERROR, logger="loopwright.agent.callbacks"):
        watched = [e async for e in agent.stream("go")]
        await asyncio.sleep(0)  # let the async callback's worker run
    assert [e.type for e in watched] == [e.type for e in plain]
    assert watched[-1].result.text == "5"  # type: ignore[union-attr]
    messages = [r.getMessage() + str(r.exc_info[1] if r.exc_info else "") for r in caplog.records]
    assert any("callback bug" in m for m in messages)
    assert any("async callback bug" in m for m in messages)


async def test_a_slow_async_callback_does_not_hold_the_stream() -> None:
    gate = asyncio.Event()
    seen: list[str] = []
    done = asyncio.Event()

    class Slow(AgentCallback):
        async def on_llm_chunk(self, run: RunInfo, delta: TextDelta) -> None:
            await gate.wait()  # held until the run is over
            seen.append(delta.text)

        async def on_agent_finish(self, run: RunInfo, result: AgentResult) -> None:
            done.set()

    model = ScriptedModel(["abcdefgh"], features=FC, chunk_size=2)
    result = await Agent(model=model, callbacks=[Slow()]).run("go")
    assert result.text == "abcdefgh" and seen == []  # the run ended while the callback waited
    gate.set()
    await asyncio.wait_for(done.wait(), 5)
    assert seen == ["ab", "cd", "ef", "gh"]  # late, but in order


async def test_per_run_callbacks_join_the_agents_own() -> None:
    mine, theirs = Recorder(), Recorder()
    agent = Agent(model=ScriptedModel(["hi", "again"], features=FC), callbacks=[mine])
    await agent.run("one", callbacks=[theirs])
    await agent.run("two", context=ToolContext(user_id="u", message_id="msg-2"))
    assert [e for e in mine.events if e[0] == "agent_start"] == [
        ("agent_start", "one", "function-calling"),
        ("agent_start", "two", "function-calling"),
    ]
    assert [e for e in theirs.events if e[0] == "agent_start"] == [("agent_start", "one", "function-calling")]
    assert "msg-2" in mine.runs  # a run is named by its message when it has one


async def test_a_duck_typed_callback_needs_only_the_methods_it_wants() -> None:
    class Starts:
        def __init__(self) -> None:
            self.n = 0

        def on_round_start(self, run: RunInfo, round: int) -> None:
            self.n += 1

    starts = Starts()
    await Agent(model=ScriptedModel(["hi"], features=FC), callbacks=[starts]).run("go")
    assert starts.n == 1


class Counted(AgentCallback):
    """Made by import path in the test below."""


def test_load_callback_by_import_path() -> None:
    made = load_callback(f"{__name__}:Counted")
    assert isinstance(made, Counted)
    instance = Counted()
    globals()["ready_made"] = instance
    assert load_callback(f"{__name__}:ready_made") is instance
    with pytest.raises(ValueError, match="package.module:name"):
        load_callback("no_colon")
