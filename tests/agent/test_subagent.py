"""An Agent as a tool: its rounds stream into the caller's run before its answer (event gates), its
usage comes back with the result, the caller's stop cancels it, and depth and fan-out are bounded."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

from loopwright import Agent, tool
from loopwright.agent import ToolCallFinished, ToolCallStarted, ToolProgress, agent_tool
from loopwright.model.entities import ToolMessage, Usage
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools import VariableMessage
from loopwright.tools.base import LLM_USAGE, ToolContext

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]
USAGE = Usage(prompt_tokens=7, completion_tokens=3, total_tokens=10)


def researcher(gate: asyncio.Event, cancelled: list[str] | None = None) -> Agent:
    @tool
    async def lookup(topic: str) -> str:
        """Look a topic up."""
        try:
            await gate.wait()
        except asyncio.CancelledError:
            if cancelled is not None:
                cancelled.append(topic)
            raise
        return f"{topic} is blue"

    model = ScriptedModel(
        [
            Reply.tool_calls(("lookup", {"topic": "sky"}), usage=USAGE),
            Reply.text("The sky is blue.", usage=USAGE),
        ],
        features=FC,
    )
    return Agent(model=model, tools=[lookup], tool_timeout=10)


async def test_the_sub_agents_rounds_stream_before_its_answer() -> None:
    gate = asyncio.Event()
    sub = agent_tool(researcher(gate), name="researcher", description="Researches a topic.")
    model = ScriptedModel(
        [Reply.tool_calls(("researcher", {"query": "sky colour?"})), Reply.text("Blue.")], features=FC
    )
    lines: list[str] = []
    result_outputs = []
    async for event in Agent(model=model, tools=[sub], tool_timeout=10).stream("what colour is the sky?"):
        if isinstance(event, ToolProgress):
            assert event.name == "researcher"  # attributed to the call that runs the sub-agent
            lines.append(event.text)
            if isinstance(event.detail, ToolCallStarted):  # the sub-agent's own tool call, as it starts
                gate.set()  # only now may it finish: its round reached us before its result
        elif isinstance(event, ToolCallFinished):
            assert event.observation == "The sky is blue."
            result_outputs = event.outputs
    assert lines[:2] == ["round 1", "calling lookup"]
    assert "lookup: sky is blue" in lines and lines[-1] == "answer: The sky is blue."
    usage = [o.value for o in result_outputs if isinstance(o, VariableMessage) and o.name == LLM_USAGE]
    assert usage and usage[0].total_tokens == 20  # both of the sub-agent's model calls


async def test_stopping_the_caller_cancels_the_sub_agent() -> None:
    gate = asyncio.Event()  # never set: the sub-agent's tool waits until it is cancelled
    cancelled: list[str] = []
    sub = agent_tool(researcher(gate, cancelled), name="researcher", description="Researches.")
    model = ScriptedModel([Reply.tool_calls(("researcher", {"query": "sky?"})), Reply.text("-")], features=FC)
    events = Agent(model=model, tools=[sub], tool_timeout=10).stream("go")
    async with aclosing(events):
        async for event in events:
            if isinstance(event, ToolProgress) and isinstance(event.detail, ToolCallStarted):
                break  # the caller stops listening: a stopped run
    assert cancelled == ["sky"]


async def test_depth_is_bounded() -> None:
    sub = agent_tool(researcher(asyncio.Event()), name="researcher", description="R.", max_depth=2)
    outputs = sub.invoke({"query": "x"}, ToolContext(call_depth=2))
    try:
        await anext(outputs)
        raise AssertionError("a call past the depth limit ran")
    except Exception as e:
        assert "2 deep" in str(e)


async def test_fan_out_is_bounded() -> None:
    running = 0
    most = 0
    release = asyncio.Event()

    @tool
    async def work(n: int) -> str:
        """Work."""
        nonlocal running, most
        running += 1
        most = max(most, running)
        if running == 2:
            release.set()  # two run at once: the bound lets no third in
        await release.wait()
        running -= 1
        return "done"

    ask = ScriptedModel([Reply.tool_calls(("work", {"n": 1}))], features=FC, cycle=True)
    answer = ScriptedModel(["ok"], features=FC, cycle=True)

    class Worker(ScriptedModel):
        """Every run calls ``work`` once, then answers (runs at once share this model)."""

        def stream(self, messages, **kwargs):  # type: ignore[no-untyped-def]
            done = any(isinstance(m, ToolMessage) for m in messages)
            return (answer if done else ask).stream(messages, **kwargs)

    def worker() -> Agent:
        return Agent(model=Worker(["-"], features=FC), tools=[work], tool_timeout=10)

    sub = agent_tool(worker(), name="worker", description="W.", max_concurrent=2)
    calls = [("worker", {"query": f"job {i}"}) for i in range(4)]
    model = ScriptedModel([Reply.tool_calls(*calls), Reply.text("all done")], features=FC)
    result = await Agent(model=model, tools=[sub], tool_timeout=10).run("go")
    assert result.text == "all done" and most == 2
    assert len(ask.requests) == 4  # every sub-run did its work
