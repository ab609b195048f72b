"""SSE frames of wire events: the encoder's fast path for deltas, pings, and errors from the table."""

from __future__ import annotations

import json

import pytest

from loopwright import AgentMaxIterationError
from loopwright.app.runs import PING
from loopwright.app.wire_events import AgentMessage, ErrorEvent, EventHead, MessageReplace
from loopwright.errors import NotFoundError, UserInputError
from loopwright.model.base import ModelError
from loopwright.server.errors import error_fields
from loopwright.server.sse import FrameEncoder

HEAD = EventHead("task", "msg", "conv", 1700000000)


@pytest.mark.parametrize("text", ["plain", 'quo"te, back\\slash', "line\nbreak\ttab", "é😀", "\x00\x1f", ""])
def test_a_delta_frame_is_exactly_the_compact_json_dump_of_its_event(text: str) -> None:
    event = AgentMessage(HEAD, text)
    # Dify's frames: compact JSON, non-ASCII kept as is
    expected = f"data: {json.dumps(event.payload(), ensure_ascii=False, separators=(',', ':'))}\n\n"
    encoder = FrameEncoder()
    assert encoder.encode(event) == expected
    assert encoder.encode(event) == expected  # from the cached prefix
    assert json.loads(encoder.encode(event)[6:])["answer"] == text


def test_a_new_message_gets_its_own_prefix() -> None:
    encoder = FrameEncoder()
    encoder.encode(AgentMessage(HEAD, "a"))
    other = EventHead("task2", "msg2", "conv2", 1)
    assert json.loads(encoder.encode(AgentMessage(other, "b"))[6:])["message_id"] == "msg2"


def test_ping_and_other_events() -> None:
    encoder = FrameEncoder()
    assert encoder.encode(PING) == "event: ping\n\n"
    frame = encoder.encode(MessageReplace(HEAD, "safe answer", "moderation"))
    assert json.loads(frame[6:]) == {
        "event": "message_replace",
        "conversation_id": "conv",
        "message_id": "msg",
        "created_at": 1700000000,
        "task_id": "task",
        "answer": "safe answer",
        "reason": "moderation",
    }


def test_an_error_frame_has_difys_fields_and_no_task_id() -> None:
    frame = FrameEncoder().encode(ErrorEvent(HEAD, UserInputError("bad input")))
    assert json.loads(frame[6:]) == {
        "event": "error",
        "conversation_id": "conv",
        "message_id": "msg",
        "created_at": 1700000000,
        "code": "invalid_param",
        "message": "bad input",
        "status": 400,
    }


def test_the_error_table() -> None:
    assert error_fields(ModelError("rate limited")) == ("completion_request_error", 400, "rate limited")
    assert error_fields(NotFoundError("gone")) == ("not_found", 404, "gone")
    code, status, message = error_fields(AgentMaxIterationError(3))
    assert (code, status) == ("internal_server_error", 500) and "maximum iteration limit of 3" in message
    # A built-in error is a bug, never the client's fault, and its text is not shown.
    for exc in (ValueError("internal detail"), RuntimeError("secret detail")):
        assert error_fields(exc) == (
            "internal_server_error",
            500,
            "Internal Server Error, please contact support.",
        )
