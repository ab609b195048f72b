"""Dify's wire events encoded once: SSE frames (the fast path for deltas, pings), journal items, and
the error fields every exception answers with."""

from __future__ import annotations

import json

import pytest

from loopwright import AgentMaxIterationError
from loopwright.app.admin.dataset_edits import InvalidActionError
from loopwright.app.dify.encoder import PING, DifyEncoder
from loopwright.app.dify.errors import error_fields
from loopwright.app.dify.events import AgentMessage, ErrorEvent, EventHead, MessageReplace
from loopwright.app.errors import AppForbiddenError, AppUnavailableError, ProviderNotInitializedError
from loopwright.app.files import speech
from loopwright.app.run.limits import AppInvokeQuotaExceededError
from loopwright.errors import NotFoundError, UserInputError
from loopwright.knowledge.kb import DatasetExistsError
from loopwright.model.base import ModelError

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
    encoder = DifyEncoder()
    first = encoder.encode(event)
    assert first.frame == f"id: 1\n{expected}"
    assert first.item == text and first.event is event  # the journal keeps a delta as its text
    assert encoder.encode(event).frame == f"id: 2\n{expected}"  # from the cached prefix
    assert data(encoder.encode(event).frame) == event.payload()


def test_a_new_message_gets_its_own_prefix() -> None:
    encoder = DifyEncoder()
    encoder.encode(AgentMessage(HEAD, "a"))
    other = EventHead("task2", "msg2", "conv2", 1)
    assert data(encoder.encode(AgentMessage(other, "b")).frame) == AgentMessage(other, "b").payload()


def test_a_stream_that_goes_on_is_numbered_on_from_its_last_stored_event() -> None:
    assert DifyEncoder(41).encode(AgentMessage(HEAD, "a")).frame.startswith("id: 42\n")


def test_ping_and_other_events() -> None:
    encoder = DifyEncoder()
    assert PING.frame == "event: ping\n\n" and PING.event is None  # a ping has no number
    encoded = encoder.encode(MessageReplace(HEAD, "safe answer", "moderation"))
    assert encoded.frame.startswith("id: 1\n")
    assert (
        data(encoded.frame)
        == encoded.item
        == {
            "event": "message_replace",
            "conversation_id": "conv",
            "message_id": "msg",
            "created_at": 1700000000,
            "task_id": "task",
            "answer": "safe answer",
            "reason": "moderation",
        }
    )


def test_an_error_frame_has_difys_fields_and_no_task_id() -> None:
    encoded = DifyEncoder().encode(ErrorEvent(HEAD, UserInputError("bad input")))
    assert (
        data(encoded.frame)
        == encoded.item
        == {
            "event": "error",
            "conversation_id": "conv",
            "message_id": "msg",
            "created_at": 1700000000,
            "code": "invalid_param",
            "message": "bad input",
            "status": 400,
        }
    )


def test_a_replayed_event_is_the_frame_first_sent() -> None:
    live = DifyEncoder()
    events = [AgentMessage(HEAD, "a\u00e9"), MessageReplace(HEAD, "x", "y"), AgentMessage(HEAD, "b")]
    sent = [live.encode(e) for e in events]
    replay = DifyEncoder()
    frames = [replay.replayed(HEAD, i + 1, encoded.item) for i, encoded in enumerate(sent)]  # type: ignore[arg-type]
    assert frames == [e.frame for e in sent]


@pytest.mark.parametrize(
    ("error", "fields"),
    [
        (
            DatasetExistsError("x"),
            (
                "dataset_name_duplicate",
                409,
                "The dataset name already exists. Please modify your dataset name.",
            ),
        ),
        (speech.NoAudioUploadedError(), ("no_audio_uploaded", 400, "Please upload your audio.")),
        (speech.AudioTooLargeError(), ("audio_too_large", 413, None)),
        (speech.UnsupportedAudioTypeError(), ("unsupported_audio_type", 415, "Audio type not allowed.")),
        (speech.NoSpeechModelError(), ("provider_not_support_speech_to_text", 400, None)),
        (speech.NoVoiceModelError(), ("provider_not_support_text_to_speech", 400, None)),
        (AppInvokeQuotaExceededError("busy"), ("too_many_requests", 429, "busy")),
        (InvalidActionError("no"), ("invalid_action", 400, "no")),
        (AppUnavailableError(), ("app_unavailable", 400, None)),
        (AppForbiddenError("off"), ("forbidden", 403, "off")),
        (ProviderNotInitializedError("no key"), ("provider_not_initialize", 400, "no key")),
    ],
)
def test_each_error_says_its_difys_code_and_status(
    error: Exception, fields: tuple[str, int, str | None]
) -> None:
    code, status, message = error_fields(error)
    assert (code, status) == fields[:2]
    assert message == (fields[2] if fields[2] is not None else str(error))


def test_the_branches_errors() -> None:
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
