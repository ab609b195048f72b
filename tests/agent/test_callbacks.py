"""Callbacks (agent.callbacks) and per-run metrics (agent.metrics), over scripted runs."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from loopwright import Agent, AgentCallback, AgentMaxIterationError, tool
from loopwright.agent import (
    LoggingCallback,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from loopwright.agent.events import AgentResult
from loopwright.model.entities import Usage
from loopwright.testing import Reply, ScriptedModel
from tests.agent.test_react import action, final

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
    """Writes down every hook it is given, in order, with the detail that identifies it."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_agent_start(self, query: str) -> None:
        self.seen.append(f"agent_start {query}")

    def on_agent_finish(self, result: AgentResult) -> None:
        self.seen.append(f"agent_finish {result.text}")

    def on_agent_error(self, error: BaseException) -> None:
        self.seen.append(f"agent_error {type(error).__name__}")

    def on_agent_stop(self) -> None:
        self.seen.append("agent_stop")

    def on_round_start(self, event: RoundStarted) -> None:
        self.seen.append(f"round_start {event.round}")

    def on_round_end(self, event: RoundFinished) -> None:
        self.seen.append(f"round_end {event.round}")

    def on_llm_start(self, round: int) -> None:
        self.seen.append(f"llm_start {round}")

    def on_llm_chunk(self, event: TextDelta) -> None:
        if not self.seen[-1].startswith("llm_chunk"):  # one entry per run of chunks
            self.seen.append(f"llm_chunk {event.round}")

    def on_llm_end(self, round: int) -> None:
        self.seen.append(f"llm_end {round}")

    def on_tool_start(self, event: ToolCallStarted) -> None:
        self.seen.append(f"tool_start {event.name}")

    def on_tool_end(self, event: ToolCallFinished) -> None:
        self.seen.append(f"tool_end {event.name} {event.observation}")

    def on_tool_error(self, event: ToolCallFinished) -> None:
        self.seen.append(f"tool_error {event.name} {event.meta.error}")


def fc_agent(*replies: Reply | str, **kw: Any) -> Agent:
    return Agent(model=ScriptedModel(list(replies), features=FC, chunk_size=3), **kw)  # type: ignore[arg-type]


async def test_a_function_calling_run_tells_every_event_in_order() -> None:
    rec = Recorder()
    agent = fc_agent(
        Reply("Adding.", calls=(("add", {"a": 2, "b": 3}),)), "It is 5.", tools=[add], callbacks=[rec]
    )
    assert (await agent.run("2+3?")).text == "It is 5."
    assert rec.seen == [
        "agent_start 2+3?",
        "round_start 1",
        "llm_start 1",
        "llm_chunk 1",
        "llm_end 1",
        "tool_start add",
        "tool_end add 5",
        "round_end 1",
        "round_start 2",
        "llm_start 2",
        "llm_chunk 2",
        "llm_end 2",
        "round_end 2",
        "agent_finish It is 5.",
    ]


async def test_a_react_run_tells_every_event_in_order() -> None:
    rec = Recorder()
    model = ScriptedModel([action("add", {"a": 1, "b": 1}), final("2")])
    assert (await Agent(model=model, tools=[add]).run("1+1", callbacks=[rec])).text == "2"
    assert rec.seen[:8] == [
        "agent_start 1+1",
        "round_start 1",
        "llm_start 1",
        "llm_chunk 1",
        "llm_end 1",
        "tool_start add",
        "tool_end add 2",
        "round_end 1",
    ]
    assert rec.seen[8:11] == ["round_start 2", "llm_start 2", "llm_chunk 2"]
    assert rec.seen[-3:] == ["llm_end 2", "round_end 2", "agent_finish 2"]


async def test_a_failing_tool_is_a_tool_error_and_the_run_goes_on() -> None:
    rec = Recorder()
    agent = fc_agent(Reply.tool_calls(("broken", {"x": "1"})), "sorry", tools=[broken], callbacks=[rec])
    assert (await agent.run("go")).text == "sorry"
    assert "tool_error broken disk on fire (1)" in rec.seen
    assert not [s for s in rec.seen if s.startswith("tool_end")]
    assert rec.seen[-1] == "agent_finish sorry"


async def test_a_run_that_raises_ends_with_agent_error() -> None:
    rec = Recorder()
    agent = fc_agent(Reply.tool_calls(("add", {"a": 1, "b": 1})), Reply.tool_calls(("add", {"a": 1, "b": 2})))
    agent.tools = [add]
    agent.max_iterations = 1
    with pytest.raises(AgentMaxIterationError):
        await agent.run("loop", callbacks=[rec])
    assert rec.seen[-1] == "agent_error AgentMaxIterationError"
    assert not [s for s in rec.seen if s.startswith("agent_finish")]


async def test_a_stopped_run_ends_with_agent_stop() -> None:
    rec = Recorder()
    agent = fc_agent(Reply.tool_calls(("add", {"a": 1, "b": 1})), "2", tools=[add], callbacks=[rec])
    events = agent.stream("stop me")
    async for event in events:
        if isinstance(event, ToolCallFinished):
            break
    await events.aclose()
    assert rec.seen[-1] == "agent_stop"
    assert "round_start 2" not in rec.seen


class Raising(AgentCallback):
    def on_llm_chunk(self, event: TextDelta) -> None:
        raise RuntimeError("callback bug")

    async def on_tool_start(self, event: ToolCallStarted) -> None:
        raise RuntimeError("async callback bug")


async def test_a_raising_callback_changes_nothing_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    def run_with(callbacks: list[object]) -> Agent:
        return fc_agent(
            Reply("Adding.", calls=(("add", {"a": 2, "b": 3}),)), "It is 5.", tools=[add], callbacks=callbacks
        )

    plain = [e async for e in run_with([]).stream("2+3?")]
    agent = run_with([Raising()])
    with caplog.at_level(logging.ERROR, logger="loopwright.agent.callbacks"):
        wrapped = [e async for e in agent.stream("2+3?")]
        await agent.flush_callbacks()
    assert [type(e).__name__ for e in wrapped] == [type(e).__name__ for e in plain]
    assert wrapped[-1].result.text == "It is 5."  # type: ignore[union-attr]
    messages = [r.getMessage() for r in caplog.records]
    assert "callback Raising.on_llm_chunk raised; ignored" in messages
    assert "callback Raising.on_tool_start raised; ignored" in messages


async def test_a_slow_async_callback_never_holds_the_stream() -> None:
    release = asyncio.Event()
    seen: list[str] = []

    class Slow(AgentCallback):
        async def on_llm_chunk(self, event: TextDelta) -> None:
            await release.wait()  # held until the run is over
            seen.append(event.text)

        async def on_agent_finish(self, result: AgentResult) -> None:
            seen.append(f"finish {result.text}")

    agent = fc_agent("one two three four", callbacks=[Slow()])
    result = await agent.run("go")  # returns while every chunk hook still waits
    assert result.text == "one two three four" and seen == []
    release.set()
    await agent.flush_callbacks()
    assert "".join(seen[:-1]) == "one two three four"  # in order
    assert seen[-1] == "finish one two three four"


def test_no_callbacks_means_the_loops_own_stream() -> None:
    agent = fc_agent("hi")
    assert agent.stream("x").__name__ == "run_loop"  # type: ignore[attr-defined]
    assert Agent(model=agent.model, callbacks=[Recorder()]).stream("x").__name__ == "with_callbacks"  # type: ignore[attr-defined]


async def test_run_metrics() -> None:
    usage = Usage(prompt_tokens=10, completion_tokens=4, total_tokens=14)
    agent = fc_agent(
        Reply("Adding.", calls=(("add", {"a": 2, "b": 3}), ("broken", {"x": "2"})), usage=usage),
        Reply.tool_calls(("add", '{"a": 1, "b": ')),  # unreadable arguments: asked to resend
        Reply("It is 5.", usage=usage),
        tools=[add, broken],
    )
    result = await agent.run("2+3?")
    m = result.metrics
    assert m is not None
    assert (m.rounds, m.tool_calls, m.tool_errors) == (3, 3, 2)
    assert m.tool_success_rate == pytest.approx(1 / 3)
    assert set(m.tool_time) == {"add", "broken"}
    assert (m.prompt_tokens, m.completion_tokens) == (
        result.usage.prompt_tokens,
        result.usage.completion_tokens,
    )
    assert m.prompt_tokens > 20  # the two scripted usages and the estimate of the unreadable reply
    assert m.time_to_first_token is not None and 0 <= m.time_to_first_token <= m.total_time
    assert 0 <= m.model_time <= m.total_time
    assert m.to_dict()["tool_calls"] == 3 and "3 rounds" in m.summary()


async def test_the_logging_callback_masks_secrets_and_truncates(caplog: pytest.LogCaptureFixture) -> None:
    @tool
    def fetch(url: str, api_key: str) -> str:
        """Fetch a page."""
        return "x" * 500

    agent = fc_agent(
        Reply.tool_calls(("fetch", {"url": "https://example.org", "api_key": "sk-very-secret"})),
        "done",
        tools=[fetch],
        callbacks=[LoggingCallback()],
    )
    with caplog.at_level(logging.INFO, logger="loopwright.agent.run"):
        await agent.run("go")
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "sk-very-secret" not in text and "'api_key': '***'" in text
    assert "tool_end tool=fetch" in text and "(500 chars)" in text
    assert text.splitlines()[0] == "agent_start query_chars=2"


async def test_run_metrics_count_the_unreadable_replies_recovered() -> None:
    model = ScriptedModel(['{"action": "calc", "action_input": 3}', final("ok")])
    result = await Agent(model=model, tools=[add], parser_mode="dify").run("?")
    assert result.text == "ok" and result.metrics is not None
    assert (result.metrics.rounds, result.metrics.malformed_recovered, result.metrics.tool_calls) == (2, 1, 0)
    assert result.metrics.tool_success_rate is None
