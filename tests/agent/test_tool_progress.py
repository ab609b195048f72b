"""Tools that stream progress: ProgressMessages before the result reach the run's stream as they come
(checked with event gates: the tool goes on only once its progress was seen), and Dify's wire shows
them as the call's observation until its result."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from loopwright import Agent, tool
from loopwright.agent import AgentCallback, ToolCallFinished, ToolCallStarted, ToolProgress
from loopwright.app.dify.events import EventHead
from loopwright.app.dify.stream import DifyStream
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools import ProgressMessage, TextMessage

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


def gated_tool(gate: asyncio.Event):  # type: ignore[no-untyped-def]
    @tool
    async def download(name: str) -> AsyncIterator[ProgressMessage | TextMessage]:
        """Download a file."""
        yield ProgressMessage(f"fetching {name}", 0.25)
        await gate.wait()  # released by the test once it saw the progress: it must arrive before the result
        yield ProgressMessage("almost", 0.9)
        yield TextMessage(f"{name}: 3 MB")

    return download


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_progress_arrives_before_the_result_and_stays_out_of_it() -> None:
    gate = asyncio.Event()
    download = gated_tool(gate)
    model = ScriptedModel(
        [Reply.tool_calls(("download", {"name": "a.zip"})), Reply.text("Got it.")], features=FC
    )
    # a tool timeout, so that a progress event that never came fails the call instead of hanging
    agent = Agent(model=model, tools=[download], tool_timeout=10)
    kinds: list[str] = []
    observation = ""
    async for event in agent.stream("get a.zip"):
        if isinstance(event, ToolProgress):
            kinds.append(f"progress {event.text} {event.fraction}")
            gate.set()
        elif isinstance(event, ToolCallStarted):
            kinds.append("started")
        elif isinstance(event, ToolCallFinished):
            kinds.append("finished")
            observation = event.observation
            assert not any(isinstance(o, ProgressMessage) for o in event.outputs)
    assert kinds == ["started", "progress fetching a.zip 0.25", "progress almost 0.9", "finished"]
    assert observation == "a.zip: 3 MB"


async def test_progress_of_calls_at_once_is_attributed_to_each() -> None:
    gate = asyncio.Event()
    download = gated_tool(gate)
    model = ScriptedModel(
        [
            Reply.tool_calls(
                ("download", {"name": "a"}), ("download", {"name": "b"}), ("add", {"a": 1, "b": 2})
            ),
            Reply.text("ok"),
        ],
        features=FC,
    )
    seen: dict[str, list[str]] = {}
    calls: dict[str, str] = {}
    async for event in Agent(model=model, tools=[download, add], tool_timeout=10).stream("go"):
        if isinstance(event, ToolCallStarted):
            calls[event.id] = str(event.arguments)
        if isinstance(event, ToolProgress):
            seen.setdefault(calls[event.id], []).append(event.text)
            if len(seen) == 2:
                gate.set()
    assert sorted(seen) == ["{'name': 'a'}", "{'name': 'b'}"]
    assert seen["{'name': 'a'}"] == ["fetching a", "almost"]


def test_only_tools_that_yield_stream_progress() -> None:
    download = gated_tool(asyncio.Event())
    assert download.streams_progress and not add.streams_progress
    agent = Agent(model=ScriptedModel(["hi"]), tools=[download, add])
    assert agent.prepare().tools.engine.progress_names == {"download"}


async def test_callbacks_and_difys_wire_see_the_progress() -> None:
    gate = asyncio.Event()
    gate.set()
    download = gated_tool(gate)
    heard: list[float | None] = []

    class Listener(AgentCallback):
        def on_tool_progress(self, event: ToolProgress) -> None:
            heard.append(event.fraction)

    model = ScriptedModel([Reply.tool_calls(("download", {"name": "a"})), Reply.text("ok")], features=FC)
    agent = Agent(model=model, tools=[download], callbacks=[Listener()])
    stream = DifyStream(EventHead("t", "m", "c", 0), "function-calling")
    observations = []
    async for event in agent.stream("go"):
        for wire in stream.feed(event):
            payload = wire.payload()
            if payload["event"] == "agent_thought" and payload["tool"]:
                observations.append(payload["observation"])
    assert heard == [0.25, 0.9]
    # the tool's input, then its progress lines, then its result, each in the same thought row
    assert observations[1:] == [
        '{"download": "fetching a (25%)"}',
        '{"download": "almost (90%)"}',
        '{"download": "a: 3 MB"}',
    ]
