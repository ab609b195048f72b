"""Agent events → Dify's SSE events and thought rows (reference §7.6), with the scripted model."""

from __future__ import annotations

import gc
import json
import weakref
from typing import Any

from loopwright import Agent, tool
from loopwright.agent.events import TextDelta
from loopwright.app.dify.events import AgentMessage, EventHead
from loopwright.app.dify.stream import DifyStream, file_type
from loopwright.app.run.plan import tool_labels_of
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools import ImageMessage

FC = ["tool-call", "stream-tool-call"]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def draw() -> ImageMessage:
    """Draw."""
    return ImageMessage("https://files.example/p.png", "image/png")


def ctx() -> EventHead:
    return EventHead(task_id="t1", message_id="m1", conversation_id="c1", created_at=1700000000)


async def wire(agent: Agent, query: str, strategy: str) -> tuple[DifyStream, list[dict[str, Any]]]:
    stream = DifyStream(ctx(), strategy)  # type: ignore[arg-type]
    events: list[dict[str, Any]] = []
    async for event in agent.stream(query):
        events += [e.payload() for e in stream.feed(event)]  # type: ignore[union-attr]  # no errors here
    return stream, events


def shape(events: list[dict[str, Any]]) -> list[str]:
    """Event names with consecutive agent_message deltas folded, and thought positions."""
    out: list[str] = []
    for e in events:
        name = e["event"] if e["event"] != "agent_thought" else f"agent_thought{e['position']}"
        if out and out[-1] == name == "agent_message":
            continue
        out.append(name)
    return out


async def test_function_calling_stream_has_difys_order_and_fields() -> None:
    model = ScriptedModel(
        [Reply.tool_calls(("add", {"a": 2, "b": 3}), text="Adding."), Reply.text("It is 5.")], features=FC
    )
    stream, events = await wire(Agent(model=model, tools=[add]), "2+3?", "function-calling")
    assert shape(events) == [
        "agent_thought1",
        "agent_message",
        "agent_thought1",
        "agent_thought1",
        "agent_thought2",
        "agent_message",
        "agent_thought2",
        "message_end",
    ]
    for e in events:  # the wrapper fields of every data event
        assert (e["conversation_id"], e["message_id"], e["created_at"], e["task_id"]) == (
            "c1",
            "m1",
            1700000000,
            "t1",
        )
    thoughts = [e for e in events if e["event"] == "agent_thought"]
    assert len({t["id"] for t in thoughts[:3]}) == 1  # the same row, upserted
    called, observed = thoughts[1], thoughts[2]
    assert called["tool"] == "add" and json.loads(called["tool_input"]) == {"add": {"a": 2, "b": 3}}
    assert called["thought"] == "Adding." and called["observation"] == ""
    assert called["tool_labels"] == {"add": {"en_US": "add", "zh_Hans": "add"}}
    assert json.loads(observed["observation"]) == {"add": "5"}
    assert thoughts[-1]["thought"] == "It is 5." and thoughts[-1]["tool"] == ""
    assert "".join(e["answer"] for e in events if e["event"] == "agent_message") == "Adding.It is 5."
    end = events[-1]
    assert end["metadata"]["usage"]["total_tokens"] == stream.usage.total_tokens > 0
    assert end["metadata"]["retriever_resources"] == [] and end["files"] is None
    assert stream.answer == "Adding.\nIt is 5."  # every round's text, as Dify saves it
    assert stream.thoughts[0].usage is not None


async def test_tool_labels_come_from_the_tools_label() -> None:
    """Dify shows a tool's label; a tool without one shows its name."""
    from dataclasses import replace

    labelled = replace(add, label="Adder")
    model = ScriptedModel([Reply.tool_calls(("add", {"a": 1, "b": 1})), Reply.text("2.")], features=FC)
    agent = Agent(model=model, tools=[labelled, draw])
    stream = DifyStream(ctx(), "function-calling", labels=tool_labels_of(agent))
    assert stream.labels == {"add": {"en_US": "Adder", "zh_Hans": "Adder"}}
    events = [e.payload() for ev in [x async for x in agent.stream("1+1?")] for e in stream.feed(ev)]  # type: ignore[union-attr]
    called = next(e for e in events if e["event"] == "agent_thought" and e["tool"])
    assert called["tool_labels"] == {"add": {"en_US": "Adder", "zh_Hans": "Adder"}}


async def test_react_stream_has_no_thought_event_for_the_final_answer() -> None:
    step = 'Thought: add them\nAction:\n```json\n{"action": "add", "action_input": {"a": 1, "b": 1}}\n```'
    final = 'Thought: done\nAction:\n```json\n{"action": "Final Answer", "action_input": "2"}\n```'
    stream, events = await wire(Agent(model=ScriptedModel([step, final]), tools=[add]), "1+1", "react")
    assert shape(events) == [
        "agent_thought1",
        "agent_message",
        "agent_thought1",
        "agent_thought1",
        "agent_thought2",
        "agent_message",
        "message_end",
    ]
    assert events[-2]["answer"] == "2"  # the whole final answer as one agent_message
    last = stream.thoughts[-1]
    assert last.answer == "2" and last.thought.endswith("2")  # appended, as Dify saves it


async def test_duplicate_tool_names_keep_every_call() -> None:
    model = ScriptedModel(
        [
            Reply.tool_calls(("add", {"a": 1, "b": 1}, "x"), ("add", {"a": 2, "b": 2}, "y")),
            Reply.text("2, 4"),
        ],
        features=FC,
    )
    _, events = await wire(Agent(model=model, tools=[add]), "sums", "function-calling")
    last_round1 = [e for e in events if e["event"] == "agent_thought" and e["position"] == 1][-1]
    assert last_round1["tool"] == "add;add"
    assert json.loads(last_round1["tool_input"]) == {"add": {"a": 1, "b": 1}, "add_1": {"a": 2, "b": 2}}
    assert json.loads(last_round1["observation"]) == {"add": "2", "add_1": "4"}


async def test_tool_files_become_message_file_events_recorded_on_the_thought() -> None:
    model = ScriptedModel([Reply.tool_calls(("draw", {})), Reply.text("here")], features=FC)
    stream, events = await wire(Agent(model=model, tools=[draw]), "draw", "function-calling")
    files = [e for e in events if e["event"] == "message_file"]
    assert len(files) == 1 and files[0]["type"] == "image" and files[0]["belongs_to"] == "assistant"
    after = events[events.index(files[0]) + 1]
    assert after["event"] == "agent_thought" and after["message_files"] == [files[0]["id"]]
    assert stream.files[0][0] == files[0]["id"]


def test_file_types() -> None:
    assert [
        file_type(m) for m in ("image/png", "audio/mpeg", "video/mp4", "application/pdf", "text/plain")
    ] == [
        "image",
        "audio",
        "video",
        "document",
        "document",
    ]
    assert file_type("application/zip") == "custom"


def test_every_event_of_a_message_shares_its_head() -> None:
    stream = DifyStream(ctx(), "function-calling")
    (event,) = stream.feed(TextDelta(0, "hi"))
    assert isinstance(event, AgentMessage) and event.head is stream.head
    assert event.payload() == {
        "event": "agent_message",
        "conversation_id": "c1",
        "message_id": "m1",
        "created_at": 1700000000,
        "task_id": "t1",
        "id": "m1",
        "answer": "hi",
    }


async def test_a_finished_stream_is_freed_without_the_cycle_collector() -> None:
    """A stream keeps no reference to itself: once its run lets go of it, it is freed at once (a
    server under load collects its oldest generation rarely, and every run's stream would wait
    there with its thoughts and text)."""
    model = ScriptedModel(
        [Reply.tool_calls(("add", {"a": 2, "b": 3}), text="Adding."), Reply.text("It is 5.")], features=FC
    )
    stream, events = await wire(Agent(model=model, tools=[add]), "2+3?", "function-calling")
    assert events[-1]["event"] == "message_end"
    gone = weakref.ref(stream)
    gc.disable()
    try:
        del stream
        assert gone() is None
    finally:
        gc.enable()
