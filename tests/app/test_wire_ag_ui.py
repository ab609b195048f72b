"""The AG-UI encoder on event sequences the server tests do not reach easily: an answer replaced by
moderation, an answer given without the agent, a run that fails mid-round. Every frame parses with
``ag-ui-protocol``'s models."""

from __future__ import annotations

import json
from typing import Any

import pydantic
from ag_ui.core import Event, EventType

from loopwright.app.dify.events import (
    AgentMessage,
    AgentThought,
    ErrorEvent,
    EventHead,
    MessageEnd,
    MessageReplace,
    TextMessage,
    WireEvent,
)
from loopwright.app.wires.ag_ui import AgUiEncoder, ag_ui_run
from loopwright.errors import ModelError

EVENTS: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(Event)
HEAD = EventHead("task", "message", "conversation", 0)
QUESTION = [{"id": "u1", "role": "user", "content": "hi"}]


def encoded(events: list[WireEvent], *, snapshot: bool = False) -> list[Any]:
    asked = ag_ui_run("thread", "run", QUESTION, {"messagesSnapshot": snapshot})
    encoder = AgUiEncoder(asked)
    frames = "".join(encoder.encode(e).frame for e in events)
    return [EVENTS.validate_python(json.loads(f[len("data: ") :])) for f in frames.split("\n\n") if f]


def thought(position: int = 1) -> AgentThought:
    return AgentThought(HEAD, f"t{position}", position, "", "", "", {}, "", [])


def test_a_replaced_answer_is_a_new_text_message_and_the_snapshot_keeps_only_it() -> None:
    events = encoded(
        [
            thought(),
            AgentMessage(HEAD, "something rude"),
            MessageReplace(HEAD, "I cannot say that.", "output_moderation"),
            MessageEnd(HEAD, {"usage": {}}),
        ],
        snapshot=True,
    )
    starts = [e.message_id for e in events if e.type == EventType.TEXT_MESSAGE_START]
    ends = [e.message_id for e in events if e.type == EventType.TEXT_MESSAGE_END]
    assert starts == ends and len(set(starts)) == 2
    (snapshot,) = [e for e in events if e.type == EventType.MESSAGES_SNAPSHOT]
    assert [m.content for m in snapshot.messages] == ["hi", "I cannot say that."]
    assert events[-1].type == EventType.RUN_FINISHED


def test_an_answer_without_the_agent_is_a_text_message_without_steps() -> None:
    events = encoded([TextMessage(HEAD, "From "), TextMessage(HEAD, "the notes."), MessageEnd(HEAD, {})])
    kinds = [e.type for e in events]
    assert kinds == [
        EventType.TEXT_MESSAGE_START,
        EventType.TEXT_MESSAGE_CONTENT,
        EventType.TEXT_MESSAGE_CONTENT,
        EventType.TEXT_MESSAGE_END,
        EventType.RUN_FINISHED,
    ]


def test_a_run_failing_mid_round_closes_its_text_and_step_then_errs() -> None:
    events = encoded(
        [thought(), AgentMessage(HEAD, "Let me"), ErrorEvent(HEAD, ModelError("the model is down"))]
    )
    kinds = [e.type for e in events]
    assert kinds[-3:] == [EventType.TEXT_MESSAGE_END, EventType.STEP_FINISHED, EventType.RUN_ERROR]
    assert events[-1].message
