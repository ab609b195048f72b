"""A Dify-style agent log tree derived from the events of a run."""

from __future__ import annotations

from loopwright import Agent, tool
from loopwright.agent.agent_log import AgentLogBuilder
from loopwright.testing import Reply, ScriptedModel


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_round_thought_and_tool_call_logs() -> None:
    model = ScriptedModel(
        [
            Reply.tool_calls(("add", {"a": 2, "b": 3}, "c1"), ("nope", {}, "c2"), text="Adding."),
            Reply.text("5"),
        ],
        features=["tool-call"],
    )
    builder = AgentLogBuilder("scripted")
    changed = []
    async for event in Agent(model=model, tools=[add]).stream("2+3?"):
        changed.append([log.label for log in builder.add(event)])

    logs = builder.logs
    assert [(log.label, log.log_type) for log in logs] == [
        ("ROUND 1", "round"),
        ("scripted Thought", "thought"),
        ("CALL add", "tool_call"),
        ("CALL nope", "tool_call"),
        ("ROUND 2", "round"),
        ("scripted Thought", "thought"),
    ]
    round1, thought1, call_add, call_nope, round2, thought2 = logs
    assert thought1.parent_id == call_add.parent_id == call_nope.parent_id == round1.id
    assert round1.parent_id is None and thought2.parent_id == round2.id
    assert thought1.data["text"] == "Adding."
    assert call_add.status == "success" and call_add.data["output"] == "5"
    assert call_add.data["tool_args"] == {"a": 2, "b": 3} and call_add.data["tool_call_id"] == "c1"
    assert call_nope.status == "error" and call_nope.error == "there is not a tool named nope"
    assert round1.data["tool_calls"][0] == {"name": "add", "args": {"a": 2, "b": 3}, "output": "5"}
    assert round2.data["final_answer"] == "5"
    assert all(log.status != "start" for log in logs)
    assert all(log.metadata["elapsed_time"] >= 0 for log in logs)
    assert round1.metadata["total_tokens"] > 0
    # Logs stream: the round's logs change when it starts and again when it ends.
    assert changed[0] == ["ROUND 1", "scripted Thought"]
