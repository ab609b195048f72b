"""OpenAI's Chat Completions wire over an app's runs: the request mapped to a message, the run's events
encoded as ``chat.completion.chunk`` frames, the outcome as a ``chat.completion``.

A request is stateless, as OpenAI's API is: its ``messages`` are the conversation so far — the last
``user`` message is the query, the earlier user and assistant messages the history the agent sees —
and each request is a new conversation of the app, stored like any other. ``system`` messages are not
used: the app's instruction is the system prompt. The ``model`` field is echoed back: the key names the
app. ``user`` is the end user (default ``openai-user``).

A request may go on with a stored conversation instead (``conversation_id`` in the body or the
``X-Conversation-Id`` header): then only its last user message is read, and the agent sees the stored
history. Every answer names its conversation (``conversation_id`` in the body and each chunk, and the
``X-Conversation-Id`` header).

The agent ran its tools itself, so they are never ``tool_calls`` for the client to run: each round's
calls are in the extension field ``agent_tool_calls`` (a chunk's ``delta``, or the message), shaped as
OpenAI's tool calls plus their ``output``; with ``include_reasoning: true`` they are also told as
``reasoning_content`` (as reasoning models' servers stream it; OpenWebUI shows it folded).

Streaming: the answer's text as ``delta.content`` (the first chunk carries the role), a last chunk with
``finish_reason`` (and ``usage``, when the request asks ``stream_options.include_usage``), an error as
``{"error": {...}}``, then ``data: [DONE]``. A quiet stream gets SSE comments (``: ping``), which
OpenAI's clients skip. The journal still keeps each event's Dify item (``app.wires.encoding``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any

from loopwright.app.dify.errors import error_fields
from loopwright.app.dify.events import (
    AgentMessage,
    ErrorEvent,
    EventHead,
    MessageEnd,
    TextMessage,
    ToolApprovalRequired,
    WireEvent,
)
from loopwright.app.wires.encoding import WireEncoder
from loopwright.app.wires.tool_runs import ToolRun, finished_tool_runs
from loopwright.errors import UserInputError
from loopwright.model.entities import AssistantMessage, PromptMessage, UserMessage

__all__ = [
    "CONVERSATION_HEADER",
    "DONE_FRAME",
    "ChatQuery",
    "OpenAIChatEncoder",
    "chat_completion",
    "chat_query",
    "error_body",
    "openai_error",
]

DONE_FRAME = "data: [DONE]\n\n"
DEFAULT_USER = "openai-user"
CONVERSATION_HEADER = "X-Conversation-Id"
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})  # Chat Completions' and Responses' names

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
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") in _TEXT_PARTS
        )
    return ""


def completion_id(message_id: str) -> str:
    return f"chatcmpl-{message_id}"


class OpenAIChatEncoder(WireEncoder):
    """Encodes a run's events as Chat Completions chunks (see the module's docstring)."""

    __slots__ = ("_chunk_head", "_model", "_reasoning", "_role_sent", "_usage")

    def __init__(
        self, model: str, include_usage: bool = False, include_reasoning: bool = False, seq: int = 0
    ) -> None:
        super().__init__(seq)
        self._model = model
        self._usage = include_usage
        self._reasoning = include_reasoning
        self._chunk_head = ""
        self._role_sent = False

    def frames(self, event: WireEvent) -> str:
        if isinstance(event, AgentMessage | TextMessage):
            return self._delta(event, f'"content":{encode_basestring(event.answer)}') if event.answer else ""
        if isinstance(event, MessageEnd | ToolApprovalRequired):
            # a run that waits for a person ends here too: this wire cannot wait with it
            return self._end(event)
        if isinstance(event, ErrorEvent):
            return f"data: {_dumps(error_body(event.error))}\n\n"
        runs = finished_tool_runs(event)
        if runs:
            return self._delta(event, self._told(runs))
        return ""  # thoughts, files, speech: not part of this wire

    def _told(self, runs: list[ToolRun]) -> str:
        """The delta's fields for a round's tool calls."""
        fields = f'"agent_tool_calls":{_dumps([agent_tool_call(r) for r in runs])}'
        if self._reasoning:
            fields += f',"reasoning_content":{encode_basestring(reasoning_text(runs))}'
        return fields

    def _chunk_prefix(self, event: WireEvent) -> str:
        if not self._chunk_head:
            head = event.head
            fields = {
                "id": completion_id(head.message_id),
                "object": "chat.completion.chunk",
                "created": head.created_at,
                "model": self._model,
                "conversation_id": head.conversation_id,
            }
            self._chunk_head = _dumps(fields)[:-1]  # without the closing brace: choices follow
        return self._chunk_head

    def _delta(self, event: WireEvent, fields: str) -> str:
        role = "" if self._role_sent else '"role":"assistant",'
        self._role_sent = True
        choice = f'{{"index":0,"delta":{{{role}{fields}}},"finish_reason":null}}'
        return f'data: {self._chunk_prefix(event)},"choices":[{choice}]}}\n\n'

    def _end(self, event: WireEvent) -> str:
        head = self._chunk_prefix(event)
        frames = f'data: {head},"choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}]}}\n\n'
        if self._usage and isinstance(event, MessageEnd):
            usage = _dumps(openai_usage(event.metadata.get("usage") or {}))
            frames += f'data: {head},"choices":[],"usage":{usage}}}\n\n'
        return frames


def agent_tool_call(run: ToolRun) -> dict[str, Any]:
    """A tool call the agent ran, as OpenAI's tool call plus its ``output``."""
    return {
        "id": run.id,
        "type": "function",
        "function": {"name": run.name, "arguments": run.arguments},
        "output": run.output,
    }


def reasoning_text(runs: list[ToolRun]) -> str:
    """A round's tool calls told as reasoning: one line each."""
    return "".join(f"{r.name}({r.arguments}) → {r.output}\n" for r in runs)


def openai_usage(usage: Mapping[str, Any]) -> dict[str, int]:
    """OpenAI's usage object from Dify's."""
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def chat_completion(
    model: str,
    head: EventHead,
    answer: str,
    usage: Mapping[str, Any],
    runs: list[ToolRun],
    include_reasoning: bool = False,
) -> dict[str, Any]:
    """The ``chat.completion`` body of a run that answered, with the tool calls it ran."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": answer,
        "agent_tool_calls": [agent_tool_call(r) for r in runs],
    }
    if include_reasoning:
        message["reasoning_content"] = reasoning_text(runs)
    return {
        "id": completion_id(head.message_id),
        "object": "chat.completion",
        "created": head.created_at,
        "model": model,
        "conversation_id": head.conversation_id,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": openai_usage(usage),
    }


def error_body(exc: BaseException) -> dict[str, Any]:
    """OpenAI's error object for what ended a run (the message and status as Dify's body has them)."""
    code, status, message = error_fields(exc)
    return openai_error(code, status, message)


def openai_error(code: str, status: int, message: str) -> dict[str, Any]:
    """OpenAI's error object: Dify's code, and OpenAI's type for the status."""
    kind = _ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}


_ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}
