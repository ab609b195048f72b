"""RunState as the one serializable unit of a paused or taken-up run: versioned JSON, the version-1
snapshots earlier loopwright stored still taken up, and PreparedAgent sharing one configuration
between runs without any run changing it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.agent import Finished, ToolCallFinished
from loopwright.agent.approvals import ApprovalDecision, Interruption
from loopwright.agent.durability import INTERRUPTED_OBSERVATION
from loopwright.agent.run_state import RUN_STATE_VERSION, RunState, RunStateVersionError
from loopwright.testing import Reply, ScriptedModel

FIXTURES = Path(__file__).parent / "fixtures"
FC = ["tool-call", "multi-tool-call", "stream-tool-call"]
ran: list[str] = []


@tool(requires_approval=True)
def send_money(to: str, amount: int) -> str:
    """Send money to someone."""
    ran.append(f"send_money {to} {amount}")
    return f"sent {amount} to {to}"


@tool
def balance() -> str:
    """The account's balance."""
    ran.append("balance")
    return "100"


@tool
def lookup() -> int:
    """Look the value up."""
    ran.append("lookup")
    return 42


@tool
def wait() -> str:
    """Wait a while."""
    ran.append("wait")
    return "waited"


@tool(idempotent=False)
def charge(amount: int) -> str:
    """Charge an amount."""
    ran.append(f"charge {amount}")
    return f"charged {amount}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


async def paused_state() -> Interruption:
    model = ScriptedModel(
        [
            Reply.tool_calls(
                ("balance", {}, "c1"), ("send_money", {"to": "ann", "amount": 5}, "c2"), text="Ok."
            )
        ],
        features=FC,
    )
    result = await Agent(model=model, tools=[send_money, balance]).run("pay ann 5")
    assert result.interruption is not None
    return result.interruption


async def test_a_paused_state_goes_through_json_unchanged() -> None:
    interruption = await paused_state()
    state = interruption.state
    data = json.loads(state.to_json())
    assert data["version"] == RUN_STATE_VERSION
    again = RunState.from_json(state.to_json())
    assert again.to_dict() == state.to_dict()
    assert again.pending is not None and again.pending.awaiting == {"c2"}
    assert again.query == "pay ann 5" and again.round == 1
    assert Interruption.from_json(interruption.to_json()).state.to_dict() == state.to_dict()


@pytest.mark.parametrize("data", [{"version": RUN_STATE_VERSION + 1}, {"version": "x"}, {}, [], None])
def test_a_newer_or_unknown_version_is_refused(data: Any) -> None:
    with pytest.raises(RunStateVersionError, match="cannot be read here"):
        RunState.from_dict(data)
    with pytest.raises(ValueError, match="interruption"):
        Interruption.from_json(json.dumps({"calls": [], "state": data}))


async def test_an_interruption_resumed_twice_resumes_the_same_state() -> None:
    interruption = await paused_state()
    before = interruption.state.to_dict()
    for _ in range(2):
        model = ScriptedModel(["Done."], features=FC)
        agent = Agent(model=model, tools=[send_money, balance])
        result = await agent.resume(interruption, [ApprovalDecision.approve("c2")])
        assert result.text == "Done." and result.rounds == 2
    assert ran == ["balance", "send_money ann 5"] * 2
    assert interruption.state.to_dict() == before  # resuming runs a copy


async def test_a_version_1_interruption_stored_by_an_earlier_loopwright_resumes() -> None:
    # made by loopwright at cec4f38: a ReAct run paused in round 2, after a balance call
    text = (FIXTURES / "run_state_v1_interruption.json").read_text()
    assert json.loads(text)["state"]["version"] == 1
    interruption = Interruption.from_json(text)
    assert [c.tool for c in interruption.calls] == ["send_money"]
    state = interruption.state
    assert state.round == 2 and len(state.scratchpad) == 1 and state.elapsed >= 0
    final = 'Thought: done.\nAction:\n```\n{"action": "Final Answer", "action_input": "Paid."}\n```'
    model = ScriptedModel([final])
    agent = Agent(model=model, tools=[send_money, balance], instruction="You are a bank clerk.")
    call_id = interruption.calls[0].id
    result = await agent.resume(interruption, [ApprovalDecision.approve(call_id)])
    assert result.text == "Paid." and result.rounds == 3
    assert ran == ["send_money ann 5"]
    assert result.metrics is not None and result.metrics.tool_calls == 2
    prompt = json.dumps([str(getattr(m, "content", "")) for m in model.requests[0].messages])
    assert "hello" in prompt and "sent 5 to ann" in prompt and "100" in prompt
    assert [type(m).__name__ for m in result.messages[:3]] == [
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
    ]


async def test_a_version_1_durable_checkpoint_is_taken_up() -> None:
    # made by loopwright at cec4f38: round 2's "wait" finished, the non-idempotent "charge" not started
    data = json.loads((FIXTURES / "run_state_v1_checkpoint.json").read_text())
    assert data["version"] == 1
    state = RunState.from_dict(data)
    agent = Agent(model=ScriptedModel([Reply.text("Done.")], features=FC), tools=[lookup, wait, charge])
    events = [e async for e in agent.resume_stream(Interruption([], state), [])]
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.result.text == "Done."
    assert ran == ["charge 5"]  # the finished call is not run again
    observations = [e.observation for e in events if isinstance(e, ToolCallFinished)]
    assert observations == ["waited", "charged 5"]


async def test_a_started_non_idempotent_call_is_not_run_again_from_a_version_1_checkpoint() -> None:
    data = json.loads((FIXTURES / "run_state_v1_checkpoint.json").read_text())
    data["pending"]["started"] = ["c3"]
    agent = Agent(model=ScriptedModel([Reply.text("Done.")], features=FC), tools=[lookup, wait, charge])
    events = [e async for e in agent.resume_stream(Interruption([], RunState.from_dict(data)), [])]
    assert ran == []
    assert [e.observation for e in events if isinstance(e, ToolCallFinished)][-1] == INTERRUPTED_OBSERVATION


async def test_one_prepared_agent_serves_concurrent_runs_and_no_run_changes_it() -> None:
    model = ScriptedModel(
        [Reply.tool_calls(("lookup", {}, "c1")), Reply.text("42.")], features=FC, cycle=True
    )
    agent = Agent(model=model, tools=[lookup, send_money], approval_required=["wait"])
    prepared = agent.prepare()
    assert agent.prepare() is prepared
    settings = prepared.settings
    results = await asyncio.gather(*(prepared.run("q") for _ in range(3)))
    assert [r.text for r in results] == ["42."] * 3
    assert agent.prepare() is prepared and prepared.settings is settings
    # the tools' own approval names are the run's, not written into the shared settings
    assert settings.approval_names == frozenset({"wait"})


async def test_a_field_set_after_the_agent_was_built_takes_effect() -> None:
    model = ScriptedModel([Reply.text("a"), Reply.text("b")], features=FC)
    agent = Agent(model=model, instruction="one")
    first = agent.prepare()
    await agent.run("q")
    agent.instruction = "two"
    assert agent.prepare() is not first
    await agent.run("q")
    assert [r.messages[0].content for r in model.requests] == ["one", "two"]
