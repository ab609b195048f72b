"""Dify's agent-chat stream events, typed: one small class per SSE payload (reference §7.6).

Each event has an ``event`` field with its Dify name and ``payload()``, the JSON object Dify sends,
field for field and in Dify's order. Every event of one message shares one :class:`EventHead` (task,
message, conversation, creation time). An :class:`ErrorEvent` carries the exception that ended the run:
which code, status and message a client sees is the exception's own (``app.dify.errors``).

Building an event never reads the database; :mod:`app.dify.encoder` renders each one once, as the
journal's item and the SSE frame, with a fast path for :class:`AgentMessage` (nearly every event).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from loopwright.app.dify.errors import error_fields

__all__ = [
    "AgentMessage",
    "AgentThought",
    "ErrorEvent",
    "EventHead",
    "MessageEnd",
    "MessageFile",
    "MessageReplace",
    "TextMessage",
    "ToolApprovalRequired",
    "TtsMessage",
    "TtsMessageEnd",
    "WireEvent",
]


@dataclass(frozen=True, slots=True)
class EventHead:
    """What every event of one message carries."""

    task_id: str
    message_id: str
    conversation_id: str
    created_at: int

    def fields(self, event: str, *, task: bool = True) -> dict[str, Any]:
        """The leading fields of an event's payload, in Dify's order."""
        head: dict[str, Any] = {
            "event": event,
            "conversation_id": self.conversation_id,
            "message_id": self.message_id,
            "created_at": self.created_at,
        }
        if task:
            head["task_id"] = self.task_id
        return head


@dataclass(frozen=True, slots=True)
class AgentMessage:
    """A piece of streamed text (the answer, or a thought on its way)."""

    head: EventHead
    answer: str
    event: Literal["agent_message"] = field(default="agent_message", init=False)

    def payload(self) -> dict[str, Any]:
        return {**self.head.fields(self.event), "id": self.head.message_id, "answer": self.answer}


@dataclass(frozen=True, slots=True)
class AgentThought:
    """One round's thought row as it stands now (sent again, same ``id``, each time it changes)."""

    head: EventHead
    id: str
    position: int
    thought: str
    observation: str
    tool: str
    tool_labels: dict[str, Any]
    tool_input: str
    message_files: list[str]
    # ours, beside Dify's fields: the keys of the calls whose observation is still a progress line
    # (the call runs); sent only while there is one, so a page can tell progress from a result
    tool_progress: list[str] = field(default_factory=list)
    event: Literal["agent_thought"] = field(default="agent_thought", init=False)
    answered_by: str | None = None  # a handoff's thought: the app answering from here on (ours)

    def payload(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            **self.head.fields(self.event),
            "id": self.id,
            "position": self.position,
            "thought": self.thought,
            "observation": self.observation,
            "tool": self.tool,
            "tool_labels": self.tool_labels,
            "tool_input": self.tool_input,
            "message_files": self.message_files,
        }
        # our own fields, only when set: a plain thought is Dify's, byte for byte
        if self.answered_by is not None:
            body["answered_by"] = self.answered_by  # a handoff's thought: the app answering from here on
        if self.tool_progress:
            body["tool_progress"] = self.tool_progress  # the calls whose observation is progress so far
        return body


@dataclass(frozen=True, slots=True)
class MessageFile:
    """A file a tool made (``belongs_to`` ``assistant``)."""

    head: EventHead
    id: str
    type: str
    url: str
    belongs_to: str = "assistant"
    event: Literal["message_file"] = field(default="message_file", init=False)

    def payload(self) -> dict[str, Any]:
        return {
            **self.head.fields(self.event),
            "id": self.id,
            "type": self.type,
            "belongs_to": self.belongs_to,
            "url": self.url,
        }


@dataclass(frozen=True, slots=True)
class MessageEnd:
    """The message is done: usage, citations, annotation reply."""

    head: EventHead
    metadata: dict[str, Any]
    event: Literal["message_end"] = field(default="message_end", init=False)

    def payload(self) -> dict[str, Any]:
        return {
            **self.head.fields(self.event),
            "id": self.head.message_id,
            "metadata": self.metadata,
            "files": None,
        }


@dataclass(frozen=True, slots=True)
class MessageReplace:
    """The answer streamed so far is replaced (output moderation)."""

    head: EventHead
    answer: str
    reason: str = ""
    event: Literal["message_replace"] = field(default="message_replace", init=False)

    def payload(self) -> dict[str, Any]:
        return {**self.head.fields(self.event), "answer": self.answer, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class TextMessage:
    """A piece of an answer given directly, without the agent: a moderation's preset response or an
    annotation (Dify's ``message`` event, which its direct output streams a character at a time)."""

    head: EventHead
    answer: str
    event: Literal["message"] = field(default="message", init=False)

    def payload(self) -> dict[str, Any]:
        return {
            **self.head.fields(self.event),
            "id": self.head.message_id,
            "answer": self.answer,
            "from_variable_selector": None,
        }


@dataclass(frozen=True, slots=True)
class ToolApprovalRequired:
    """loopwright's own event (not Dify's): the run paused before tool calls that need a person's
    approval; ``POST /v1/chat-messages/{task_id}/approvals`` resumes it. The stream ends after it."""

    head: EventHead
    thought_id: str
    calls: list[dict[str, Any]]  # {"id", "tool", "arguments"} of each call waiting
    expires_at: int  # unix seconds: after this the calls count as denied
    event: Literal["tool_approval_required"] = field(default="tool_approval_required", init=False)

    def payload(self) -> dict[str, Any]:
        return {
            **self.head.fields(self.event),
            "id": self.head.message_id,
            "thought_id": self.thought_id,
            "tool_calls": self.calls,
            "expires_at": self.expires_at,
        }


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The run ended with ``error``; its Dify ``code``, ``status`` and ``message`` are the exception's
    (``app.dify.errors``). Dify's error event has no ``task_id``."""

    head: EventHead
    error: BaseException
    event: Literal["error"] = field(default="error", init=False)

    def payload(self) -> dict[str, Any]:
        return self.payload_with(*error_fields(self.error))

    def payload_with(self, code: str, status: int, message: str) -> dict[str, Any]:
        return {
            **self.head.fields(self.event, task=False),
            "code": code,
            "message": message,
            "status": status,
        }


@dataclass(frozen=True, slots=True)
class TtsMessage:
    """A piece of the answer's speech (base64 MP3), when the app's text to speech plays by itself."""

    head: EventHead
    audio: str
    event: Literal["tts_message"] = field(default="tts_message", init=False)

    def payload(self) -> dict[str, Any]:
        return {**self.head.fields(self.event), "audio": self.audio}


@dataclass(frozen=True, slots=True)
class TtsMessageEnd:
    """The answer's speech is over (Dify sends it with an empty ``audio``)."""

    head: EventHead
    event: Literal["tts_message_end"] = field(default="tts_message_end", init=False)

    def payload(self) -> dict[str, Any]:
        return {**self.head.fields(self.event), "audio": ""}


WireEvent = (
    AgentMessage
    | AgentThought
    | MessageFile
    | MessageEnd
    | MessageReplace
    | TextMessage
    | ToolApprovalRequired
    | ErrorEvent
    | TtsMessage
    | TtsMessageEnd
)
