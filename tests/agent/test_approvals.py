"""Human approval of tool calls in the library: a run pauses before a tool that needs approval and
returns an interruption (JSON); resuming it with the decisions runs, edits or denies the calls."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.agent import Finished, ToolCallFinished
from loopwright.agent.approvals import ApprovalDecision, Interruption
from loopwright.agent.events import ApprovalRequired
from loopwright.testing import Reply, ScriptedModel

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]
sent: list[dict[str, Any]] = []


@tool(requires_approval=True)
def send_money(to: str, amount: int) -> str:
    """Send money to someone."""
    sent.append({"to": to, "amount": amount})
    return f"sent {amount} to {to}"


@tool
def balance() -> str:
    """The account's balance."""
    return "100"


@pytest.fixture(autouse=True)
def _clear() -> None:
    sent.clear()


def react_call(name: str, args: dict[str, Any]) -> Reply:
    blob = json.dumps({"action": name, "action_input": args})
    return Reply.text(f"Thought: I will do it.\nAction:\n```\n{blob}\n```")


def fc_call(name: str, args: dict[str, Any]) -> Reply:
    return Reply.tool_calls((name, args, "call_1"), text="I will do it.")


@pytest.mark.parametrize(("features", "call"), [(FC, fc_call), ([], react_call)], ids=["fc", "react"])
async def test_a_run_pauses_before_the_call_and_resumes_approved(features: list[str], call: Any) -> None:
    model = ScriptedModel([call("send_money", {"to": "ann", "amount": 5}), "Done: sent."], features=features)
    agent = Agent(model=model, tools=[send_money, balance])
    events = [e async for e in agent.stream("pay ann 5")]
    paused = events[-1]
    assert isinstance(paused, Finished)
    result = paused.result
    assert result.finish_reason == "approval_required" and result.text == ""
    assert sent == []  # nothing ran
    waiting = [e for e in events if isinstance(e, ApprovalRequired)]
    assert len(waiting) == 1 and waiting[0].pending[0].tool == "send_money"
    interruption = result.interruption
    assert interruption is not None
    (pending,) = interruption.calls
    assert pending.arguments == {"to": "ann", "amount": 5}

    # The state travels as JSON (another process, later), and the decision resumes it.
    restored = Interruption.from_json(interruption.to_json())
    fresh = Agent(model=model, tools=[send_money, balance])
    resumed = [e async for e in fresh.resume_stream(restored, [ApprovalDecision.approve(pending.id)])]
    assert sent == [{"to": "ann", "amount": 5}]
    finished = [e for e in resumed if isinstance(e, ToolCallFinished)]
    assert finished[0].observation == "sent 5 to ann"
    final = resumed[-1]
    assert isinstance(final, Finished) and final.result.text == "Done: sent."
    assert final.result.rounds == 2
    # the model saw the observation of the approved call
    seen = json.dumps([str(getattr(m, "content", "")) for m in model.requests[1].messages])
    assert "sent 5 to ann" in seen


@pytest.mark.parametrize(("features", "call"), [(FC, fc_call), ([], react_call)], ids=["fc", "react"])
async def test_a_denied_call_gets_the_reason_as_its_observation(features: list[str], call: Any) -> None:
    model = ScriptedModel([call("send_money", {"to": "bob", "amount": 900}), "Not sent."], features=features)
    agent = Agent(model=model, tools=[send_money])
    result = await agent.run("pay bob 900")
    assert result.interruption is not None
    call_id = result.interruption.calls[0].id
    final = await agent.resume(result.interruption, [ApprovalDecision.deny(call_id, "too much")])
    assert sent == []
    assert final.text == "Not sent."
    seen = json.dumps([str(getattr(m, "content", "")) for m in model.requests[1].messages])
    assert "The user denied this tool call: too much" in seen


async def test_edited_arguments_are_what_runs() -> None:
    model = ScriptedModel([fc_call("send_money", {"to": "ann", "amount": 50}), "ok"], features=FC)
    agent = Agent(model=model, tools=[send_money])
    result = await agent.run("pay")
    assert result.interruption is not None
    decision = ApprovalDecision.approve("call_1", {"to": "ann", "amount": 5})
    final = await agent.resume(result.interruption, [decision])
    assert sent == [{"to": "ann", "amount": 5}] and final.text == "ok"


async def test_a_call_left_without_a_decision_is_denied_and_other_calls_of_the_round_run() -> None:
    model = ScriptedModel(
        [Reply.tool_calls(("balance", {}, "c1"), ("send_money", {"to": "x", "amount": 1}, "c2")), "fine"],
        features=FC,
    )
    agent = Agent(model=model, tools=[send_money, balance])
    result = await agent.run("q")
    assert result.interruption is not None
    assert [c.id for c in result.interruption.calls] == ["c2"]  # balance needs no approval
    events = [e async for e in agent.resume_stream(result.interruption, [])]
    observations = {e.id: e.observation for e in events if isinstance(e, ToolCallFinished)}
    assert observations["c1"] == "100"
    assert "denied" in observations["c2"] and sent == []


async def test_tools_named_on_the_agent_need_approval_too() -> None:
    model = ScriptedModel([fc_call("balance", {}), "100"], features=FC)
    agent = Agent(model=model, tools=[balance], approval_required=["balance"])
    result = await agent.run("q")
    assert result.finish_reason == "approval_required"


def test_an_interruption_from_elsewhere_is_refused() -> None:
    with pytest.raises(ValueError, match="interruption"):
        Interruption.from_json('{"calls": [], "state": {"version": 999}}')


def test_an_openapi_operation_marked_x_requires_approval_needs_approval() -> None:
    from loopwright.tools.openapi.operations import extract_operations
    from loopwright.tools.openapi.request import CallSettings
    from loopwright.tools.openapi.toolset import operation_tool

    document = {
        "openapi": "3.0.0",
        "servers": [{"url": "https://bank.example"}],
        "paths": {
            "/transfers": {"post": {"operationId": "transfer", "x-requires-approval": True}},
            "/balance": {"get": {"operationId": "balance"}},
        },
    }
    tools = {op.name: operation_tool(op, CallSettings()) for op in extract_operations(document)}
    assert tools["transfer"].requires_approval and not tools["balance"].requires_approval


async def test_a_resumed_run_may_pause_again_and_keeps_its_structured_output() -> None:
    from loopwright.agent.output import OUTPUT_TOOL

    model = ScriptedModel(
        [
            Reply.tool_calls(("send_money", {"to": "ann", "amount": 1}, "c1")),
            Reply.tool_calls(("send_money", {"to": "bob", "amount": 2}, "c2")),
            Reply.tool_calls((OUTPUT_TOOL, {"paid": ["ann"]})),
        ],
        features=FC,
    )
    schema = {"type": "object", "properties": {"paid": {"type": "array"}}, "required": ["paid"]}
    agent = Agent(model=model, tools=[send_money], output_type=schema)
    first = await agent.run("pay ann then bob")
    assert first.interruption is not None
    second = await agent.resume(
        Interruption.from_json(first.interruption.to_json()), [ApprovalDecision.approve("c1")]
    )
    assert second.finish_reason == "approval_required" and second.interruption is not None
    assert [c.id for c in second.interruption.calls] == ["c2"]
    final = await agent.resume(second.interruption, [ApprovalDecision.deny("c2", "one is enough")])
    assert sent == [{"to": "ann", "amount": 1}]
    assert final.output == {"paid": ["ann"]} and final.rounds == 3
    assert final.metrics is not None and final.metrics.tool_calls == 2


async def test_an_answered_call_does_not_run_and_its_answer_is_the_observation() -> None:
    from loopwright.tools.builtin import ask_user_tool

    question = {"question": "How much?"}
    model = ScriptedModel([fc_call("ask_user", question), "I will send 7."], features=FC)
    agent = Agent(model=model, tools=[ask_user_tool(), send_money])
    result = await agent.run("pay ann")
    assert result.finish_reason == "approval_required" and result.interruption is not None
    (pending,) = result.interruption.calls
    assert pending.tool == "ask_user"
    restored = Interruption.from_json(result.interruption.to_json())
    events = [
        e async for e in agent.resume_stream(restored, [ApprovalDecision.answered(pending.id, "7 euros")])
    ]
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.observation == "7 euros"
    final = events[-1]
    assert isinstance(final, Finished) and final.result.text == "I will send 7."
    seen = json.dumps([str(getattr(m, "content", "")) for m in model.requests[1].messages])
    assert "7 euros" in seen
