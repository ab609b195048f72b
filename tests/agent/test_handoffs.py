"""Handoffs: an agent hands a turn to another, which answers with its own model and tools and may hand
it back; the conversation is carried, hand-overs are bounded."""

from __future__ import annotations

from loopwright import Agent, tool
from loopwright.agent import Finished, ToolCallFinished
from loopwright.agent.handoffs import HandoffStarted, handoff_tool, stream_with_handoffs, tool_name
from loopwright.model.entities import AssistantMessage, SystemMessage, ToolMessage, UserMessage
from loopwright.testing import Reply, ScriptedModel

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


@tool
def invoice(number: str) -> str:
    """Look an invoice up."""
    return f"invoice {number}: paid"


def desk(
    front_replies: list[Reply | str], billing_replies: list[Reply | str]
) -> tuple[dict[str, Agent], ScriptedModel, ScriptedModel]:
    front_model = ScriptedModel(front_replies, features=FC)
    billing_model = ScriptedModel(billing_replies, features=FC)
    front = Agent(
        model=front_model,
        instruction="You are the front desk.",
        tools=[handoff_tool("billing", "questions about invoices")],
    )
    billing = Agent(
        model=billing_model,
        instruction="You are billing.",
        tools=[invoice, handoff_tool("front", "anything that is not billing")],
    )
    return {"front": front, "billing": billing}, front_model, billing_model


async def test_a_handoff_and_a_hand_back_in_one_conversation() -> None:
    agents, front_model, billing_model = desk(
        [
            Reply.tool_calls((tool_name("billing"), {"reason": "an invoice question"})),
            "Anything else?",  # after billing hands back (turn 1), and turn 2's answer
        ],
        [
            Reply.tool_calls(("invoice", {"number": "42"})),
            Reply.tool_calls((tool_name("front"), {"reason": "done with billing"})),
        ],
    )
    events = [e async for e in stream_with_handoffs(agents, "front", "Is invoice 42 paid?")]
    handoffs = [(e.source, e.target, e.reason) for e in events if isinstance(e, HandoffStarted)]
    assert handoffs == [
        ("front", "billing", "an invoice question"),
        ("billing", "front", "done with billing"),
    ]
    final = events[-1]
    assert isinstance(final, Finished) and final.result.text == "Anything else?"
    # billing answered with its own instruction and tools, and saw what the front desk did
    billing_first = billing_model.requests[0]
    assert billing_first.messages[0] == SystemMessage("You are billing.")
    assert {t.name for t in billing_first.tools} == {"invoice", tool_name("front")}
    assert any(isinstance(m, AssistantMessage) and m.tool_calls for m in billing_first.messages)
    # the front desk, handed back to, sees billing's invoice lookup
    back = front_model.requests[1]
    assert back.messages[0] == SystemMessage("You are the front desk.")
    assert any(isinstance(m, ToolMessage) and m.content == "invoice 42: paid" for m in back.messages)
    assert isinstance(back.messages[-1], UserMessage) and back.messages[-1].content == "Is invoice 42 paid?"
    # each agent's run was closed at its handoff: no model call after it
    assert len(billing_model.requests) == 2 and len(front_model.requests) == 2

    # the conversation goes on (replayed from the stored messages) with whoever answered
    history = final.result.messages
    agents2, front2, _ = desk(["Glad to help."], [])
    events2 = [e async for e in stream_with_handoffs(agents2, "front", "Thanks!", history=history)]
    assert events2[-1].result.text == "Glad to help."  # type: ignore[union-attr]
    assert any(
        isinstance(m, ToolMessage) and m.content == "invoice 42: paid" for m in front2.requests[0].messages
    )


async def test_hand_overs_are_bounded() -> None:
    ping = Reply.tool_calls((tool_name("billing"), {"reason": "ping"}))
    pong = Reply.tool_calls((tool_name("front"), {"reason": "pong"}))
    agents, front_model, _ = desk([ping, ping, "I will answer myself."], [pong, pong])
    events = [e async for e in stream_with_handoffs(agents, "front", "loop?", max_handoffs=2)]
    assert len([e for e in events if isinstance(e, HandoffStarted)]) == 2
    refused = [e for e in events if isinstance(e, ToolCallFinished) and e.meta.error]
    assert refused and "answer it yourself" in refused[-1].observation
    assert events[-1].result.text == "I will answer myself."  # type: ignore[union-attr]


async def test_carry_history_leaves_out_the_turn_so_far() -> None:
    agents, _, billing_model = desk(
        [Reply.tool_calls((tool_name("billing"), {"reason": "x"}))], ["It is paid."]
    )
    events = [e async for e in stream_with_handoffs(agents, "front", "Invoice 42?", carry="history")]
    assert events[-1].result.text == "It is paid."  # type: ignore[union-attr]
    assert [type(m).__name__ for m in billing_model.requests[0].messages] == ["SystemMessage", "UserMessage"]
