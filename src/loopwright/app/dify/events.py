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
    "HumanInputFormFilled",
    "HumanInputFormTimeout",
    "HumanInputRequired",
    "MessageEnd",
    "MessageFile",
    "MessageReplace",
    "TextMessage",
    "ToolApprovalRequired",
    "TtsMessage",
    "TtsMessageEnd",
    "WireEvent",
    "WorkflowPaused",
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

    def workflow(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        """A Dify 1.13 workflow event's payload (the human-input pause and resume): the leading
        fields, the run's id (the task id: a loopwright message is its own run) and ``data``."""
        return {**self.fields(event), "workflow_run_id": self.task_id, "data": data}


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
class HumanInputRequired:
    """Dify 1.13's announcement of a run paused for a person (its Human Input node), sent after
    ``tool_approval_required``: ``form`` is the form's data (``app.dify.human_input``), its
    ``form_token`` the key to ``GET``/``POST /v1/form/human_input/{form_token}``. Dify's
    ``workflow_run_id`` is the task id here (a loopwright message is its own run)."""

    head: EventHead
    form: dict[str, Any]
    event: Literal["human_input_required"] = field(default="human_input_required", init=False)

    def payload(self) -> dict[str, Any]:
        return self.head.workflow(self.event, self.form)


@dataclass(frozen=True, slots=True)
class WorkflowPaused:
    """Dify 1.13's last event of a paused run's stream: the forms waiting, as ``reasons``."""

    head: EventHead
    reasons: list[dict[str, Any]]  # each {"type": "human_input_required", **form}
    elapsed_time: float
    total_tokens: int
    total_steps: int
    event: Literal["workflow_paused"] = field(default="workflow_paused", init=False)

    def payload(self) -> dict[str, Any]:
        data = {
            "workflow_run_id": self.head.task_id,
            "paused_nodes": [r["node_id"] for r in self.reasons],
            "outputs": {},
            "reasons": self.reasons,
            "status": "paused",
            "created_at": self.head.created_at,
            "elapsed_time": self.elapsed_time,
            "total_tokens": self.total_tokens,
            "total_steps": self.total_steps,
        }
        return self.head.workflow(self.event, data)


@dataclass(frozen=True, slots=True)
class HumanInputFormFilled:
    """Dify 1.13's first event of a run resumed by a decision (the form's action, or loopwright's
    approvals endpoint): which action, and the form's content as rendered."""

    head: EventHead
    node_id: str
    node_title: str
    rendered_content: str
    action_id: str
    action_text: str
    event: Literal["human_input_form_filled"] = field(default="human_input_form_filled", init=False)

    def payload(self) -> dict[str, Any]:
        fields = ("node_id", "node_title", "rendered_content", "action_id", "action_text")
        return self.head.workflow(self.event, {name: getattr(self, name) for name in fields})


@dataclass(frozen=True, slots=True)
class HumanInputFormTimeout:
    """Dify 1.13's first event of a run resumed because nobody decided in time."""

    head: EventHead
    node_id: str
    node_title: str
    expiration_time: int
    event: Literal["human_input_form_timeout"] = field(default="human_input_form_timeout", init=False)

    def payload(self) -> dict[str, Any]:
        fields = ("node_id", "node_title", "expiration_time")
        return self.head.workflow(self.event, {name: getattr(self, name) for name in fields})


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
    | HumanInputRequired
    | WorkflowPaused
    | HumanInputFormFilled
    | HumanInputFormTimeout
    | ErrorEvent
    | TtsMessage
    | TtsMessageEnd
)
