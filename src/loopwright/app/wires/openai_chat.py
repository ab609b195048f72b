"""OpenAI's Chat Completions wire over an app's runs: the request mapped to a message, the run's events
encoded as ``chat.completion.chunk`` frames, the outcome as a ``chat.completion``.

A request is stateless, as OpenAI's API is: its ``messages`` are the conversation so far — the last
``user`` message is the query, the earlier user and assistant messages the history the agent sees —
and each request is a new conversation of the app, stored like any other. ``system`` messages are not
used: the app's instruction is the system prompt. The ``model`` field is echoed back: the key names the
app. ``user`` is the end user (default ``openai-user``).

Streaming: the answer's text as ``delta.content`` (the first chunk carries the role), a last chunk with
``finish_reason`` (and ``usage``, when the request asks ``stream_options.include_usage``), an error as
``{"error": {...}}``, then ``data: [DONE]``. A quiet stream gets SSE comments (``: ping``), which
OpenAI's clients skip. The journal still keeps each event's Dify item (``app.dify.encoder``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any

from loopwright.app.dify.encoder import DifyEncoder, Encoded
from loopwright.app.dify.errors import error_fields
from loopwright.app.dify.events import (
    AgentMessage,
    ErrorEvent,
    MessageEnd,
    TextMessage,
    ToolApprovalRequired,
    WireEvent,
)
from loopwright.errors import UserInputError
from loopwright.model.entities import AssistantMessage, PromptMessage, UserMessage

__all__ = ["DONE_FRAME", "ChatQuery", "OpenAIChatEncoder", "chat_completion", "chat_query", "error_body"]

DONE_FRAME = "data: [DONE]\n\n"
DEFAULT_USER = "openai-user"

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class ChatQuery:
    """What a Chat Completions request asks of an app's run."""

    __slots__ = ("history", "query")

    def __init__(self, query: str, history: list[PromptMessage]) -> None:
        self.query = query
        self.history = history


def chat_query(messages: Sequence[Mapping[str, Any]]) -> ChatQuery:
    """The query (the last ``user`` message) and the history before it; raises
    :class:`UserInputError` for messages that hold no user message."""
    turns: list[PromptMessage] = []
    for m in messages:
        role, text = m.get("role"), _text(m.get("content"))
        if role == "user":
            turns.append(UserMessage(text))
        elif role == "assistant" and text:
            turns.append(AssistantMessage(text))
    last = turns.pop() if turns else None
    if not isinstance(last, UserMessage) or not last.text.strip():
        raise UserInputError("messages must end with a user message that has text")
    return ChatQuery(last.text, turns)


def _text(content: Any) -> str:
    """A message's text: a string, or the ``text`` parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def completion_id(message_id: str) -> str:
    return f"chatcmpl-{message_id}"


class OpenAIChatEncoder(DifyEncoder):
    """Encodes a run's events as Chat Completions chunks (see the module's docstring); the journal's
    item of each event is Dify's, numbered as Dify's encoder numbers it."""

    __slots__ = ("_chunk_head", "_model", "_role_sent", "_usage")

    def __init__(self, model: str, include_usage: bool = False, seq: int = 0) -> None:
        super().__init__(seq)
        self._model = model
        self._usage = include_usage
        self._chunk_head = ""
        self._role_sent = False

    @property
    def ping(self) -> Encoded:
        return OPENAI_PING

    def encode(self, event: WireEvent) -> Encoded:
        self.seq += 1
        if isinstance(event, AgentMessage | TextMessage):
            return Encoded(event, event.answer, self._delta(event, event.answer))
        payload = event.payload()
        if isinstance(event, MessageEnd | ToolApprovalRequired):
            # a run that waits for a person ends here too: this wire cannot wait with it
            return Encoded(event, payload, self._end(event))
        if isinstance(event, ErrorEvent):
            return Encoded(event, payload, f"data: {_dumps(error_body(event.error))}\n\n")
        return Encoded(event, payload, "")  # thoughts, files, speech: not part of this wire

    def _chunk_prefix(self, event: WireEvent) -> str:
        if not self._chunk_head:
            head = event.head
            fields = {
                "id": completion_id(head.message_id),
                "object": "chat.completion.chunk",
                "created": head.created_at,
                "model": self._model,
            }
            self._chunk_head = _dumps(fields)[:-1]  # without the closing brace: choices follow
        return self._chunk_head

    def _delta(self, event: WireEvent, text: str) -> str:
        if not text:
            return ""
        role = "" if self._role_sent else '"role":"assistant",'
        self._role_sent = True
        delta = f'{{{role}"content":{encode_basestring(text)}}}'
        choice = f'{{"index":0,"delta":{delta},"finish_reason":null}}'
        return f'data: {self._chunk_prefix(event)},"choices":[{choice}]}}\n\n'

    def _end(self, event: WireEvent) -> str:
        head = self._chunk_prefix(event)
        frames = f'data: {head},"choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}]}}\n\n'
        if self._usage and isinstance(event, MessageEnd):
            usage = _dumps(openai_usage(event.metadata.get("usage") or {}))
            frames += f'data: {head},"choices":[],"usage":{usage}}}\n\n'
        return frames


OPENAI_PING = Encoded(None, None, ": ping\n\n")  # an SSE comment: OpenAI's clients skip it


def openai_usage(usage: Mapping[str, Any]) -> dict[str, int]:
    """OpenAI's usage object from Dify's."""
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def chat_completion(
    model: str, message_id: str, created: int, answer: str, usage: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``chat.completion`` body of a run that answered."""
    return {
        "id": completion_id(message_id),
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}
        ],
        "usage": openai_usage(usage),
    }


def error_body(exc: BaseException) -> dict[str, Any]:
    """OpenAI's error object for what ended a run (the message and status as Dify's body has them)."""
    code, status, message = error_fields(exc)
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}
