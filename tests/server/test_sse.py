"""SSE frames of wire events: the encoder's fast path for deltas, pings, and errors from the table."""

from __future__ import annotations

import json

import pytest

from loopwright import AgentMaxIterationError
from loopwright.app.dify.events import AgentMessage, ErrorEvent, EventHead, MessageReplace
from loopwright.app.run.journal import Replayed
from loopwright.app.run.runs import PING
from loopwright.errors import NotFoundError, UserInputError
from loopwright.model.base import ModelError
from loopwright.server.errors import error_fields
from loopwright.server.sse import FrameEncoder

HEAD = EventHead("task", "msg", "conv", 1700000000)


def data(frame: str) -> object:
    """The JSON of a numbered frame (``id: N`` then ``data: …``)."""
    id_line, data_line = frame.removesuffix("\n\n").split("\n")
    assert id_line.startswith("id: ") and data_line.startswith("data: ")
    return json.loads(data_line[6:])


@pytest.mark.parametrize("text", ["plain", 'quo"te, back\\slash', "line\nbreak\ttab", "é😀", "\x00\x1f", ""])
def test_a_delta_frame_is_exactly_the_compact_json_dump_of_its_event(text: str) -> None:
    event = AgentMessage(HEAD, text)
    # Dify's frames: compact JSON, non-ASCII kept as is
    expected = f"data: {json.dumps(event.payload(), ensure_ascii=False, separators=(',', ':'))}\n\n"
    encoder = FrameEncoder()
    assert encoder.encode(event) == f"id: 1\n{expected}"
    assert encoder.encode(event) == f"id: 2\n{expected}"  # from the cached prefix
    assert data(encoder.encode(event)) == event.payload()


def test_a_new_message_gets_its_own_prefix() -> None:
    encoder = FrameEncoder()
    encoder.encode(AgentMessage(HEAD, "a"))
    other = EventHead("task2", "msg2", "conv2", 1)
    assert data(encoder.encode(AgentMessage(other, "b"))) == AgentMessage(other, "b").payload()


def test_ping_and_other_events() -> None:
    encoder = FrameEncoder()
    assert encoder.encode(PING) == "event: ping\n\n"
    frame = encoder.encode(MessageReplace(HEAD, "safe answer", "moderation"))
    assert frame.startswith("id: 1\n")  # a ping has no number
    assert data(frame) == {
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
    assert data(frame) == {
        "event": "error",
        "conversation_id": "conv",
        "message_id": "msg",
        "created_at": 1700000000,
        "code": "invalid_param",
        "message": "bad input",
        "status": 400,
    }


def test_a_replayed_event_is_the_frame_first_sent() -> None:
    live = FrameEncoder()
    events = [AgentMessage(HEAD, "a\u00e9"), MessageReplace(HEAD, "x", "y"), AgentMessage(HEAD, "b")]
    sent = [live.encode(e) for e in events]
    replay = FrameEncoder()
    items = ["a\u00e9", MessageReplace(HEAD, "x", "y").payload(), "b"]
    assert [replay.replayed(HEAD, Replayed(i + 1, item)) for i, item in enumerate(items)] == sent


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
