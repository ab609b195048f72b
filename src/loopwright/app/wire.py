"""Agent events → Dify's agent-chat stream: thought rows and SSE events, built in memory.

One :class:`DifyStream` per message. ``feed(event)`` updates the in-memory mirror of the message's
``MessageAgentThought`` rows (the same values the store persists) and returns the wire events to send,
field for field as Dify's Service API (reference §7.6). Building an event never reads the database:
the rows here are the source, and the store writes them (``DifyStream.dirty``) when it likes.

Order, as Dify's (one tool round, then the answer):
function calling — ``agent_thought``(empty) → ``agent_message``… → ``agent_thought``(tool, input) →
[``message_file``…] → ``agent_thought``(+observation) → ``agent_thought``(2, empty) →
``agent_message``… → ``agent_thought``(2, thought) → ``message_end``;
ReAct — the same, except that the final round emits no ``agent_thought``: its answer arrives as one
``agent_message`` before ``message_end``.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Any, Literal

from loopwright.agent.errors import AgentError
from loopwright.agent.events import (
    AgentEvent,
    Finished,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from loopwright.model.base import ModelError
from loopwright.model.entities import Usage
from loopwright.store.codec import encode_per_tool, join_tool_names, tool_labels
from loopwright.tools.base import (
    LLM_USAGE,
    RETRIEVER_RESOURCES,
    BlobMessage,
    FileMessage,
    ImageMessage,
    ToolOutput,
    VariableMessage,
)

WireEvent = dict[str, Any]
PING = "event: ping\n\n"


def sse(event: WireEvent) -> str:
    """One SSE frame, as Dify writes it."""
    if type(event) is Delta:
        return event.frame
    return f"data: {json.dumps(event, ensure_ascii=False)}\n\n"


class Delta(dict[str, Any]):
    """An ``agent_message`` event that carries its SSE frame, rendered from a prefix made once per
    message: deltas are nearly every event of a stream, and dumping each whole dict to JSON cost more
    than everything else the server does for it."""

    __slots__ = ("frame",)
    frame: str


@dataclass(slots=True)
class ThoughtRow:
    """The in-memory mirror of one ``MessageAgentThought`` row (one round)."""

    id: str
    position: int
    thought: str = ""
    names: list[str] = field(default_factory=list)
    inputs: list[Any] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    metas: list[dict[str, Any]] = field(default_factory=list)
    call_ids: list[str] = field(default_factory=list)
    message_files: list[str] = field(default_factory=list)
    answer: str = ""
    usage: Usage | None = None

    @property
    def tool(self) -> str:
        return join_tool_names(self.names)

    @property
    def tool_input(self) -> str:
        return encode_per_tool(self.names, self.inputs) if self.names else ""

    @property
    def observation(self) -> str:
        return encode_per_tool(self.names, self.observations) if any(self.observations) else ""

    @property
    def tool_meta(self) -> str:
        return encode_per_tool(self.names, self.metas) if any(self.metas) else "{}"


@dataclass(slots=True)
class MessageContext:
    task_id: str
    message_id: str
    conversation_id: str
    created_at: int
    first_position: int = 1  # thoughts continue after any the message already has


class DifyStream:
    """Translates one run's events; ``answer`` and ``usage`` are the message's when it ends."""

    def __init__(self, ctx: MessageContext, strategy: Literal["function-calling", "react"]) -> None:
        self.ctx = ctx
        self.react = strategy == "react"
        self.thoughts: list[ThoughtRow] = []
        self.dirty: set[str] = set()  # thought ids changed since the store last saved them
        self.answer = ""
        self.usage = Usage()
        self.files: list[tuple[str, ToolOutput]] = []
        self._resources: list[list[dict[str, Any]]] = []  # retriever_resources of each tool call
        self._inner_usage = Usage()  # what apps called as tools spent
        self._text: list[str] = []  # the round's thought text
        self._delta_head = self._wrap("agent_message", id=ctx.message_id, answer="")
        # json.dumps of the head with "answer" last, cut before the answer's value: '…"answer": '
        self._delta_prefix = sse(self._delta_head)[: -len('""}\n\n')]
        self._streamed: list[str] = []  # every text delta of the round, whatever its channel

    @property
    def partial_answer(self) -> str:
        """What a run that ended early had produced: the text streamed in its last round, else the
        last round's thought."""
        streamed = "".join(self._streamed).strip()
        return streamed or (self.thoughts[-1].thought if self.thoughts else "")

    def feed(self, event: AgentEvent) -> list[WireEvent]:
        if isinstance(event, TextDelta):
            self._streamed.append(event.text)
            if event.channel == "thought":
                self._text.append(event.text)
            return [self._delta(event.text)]
        if isinstance(event, RoundStarted):
            row = ThoughtRow(str(uuid.uuid4()), self.ctx.first_position + len(self.thoughts))
            self.thoughts.append(row)
            self._text = []
            self._streamed = []
            return [self._thought(row)]
        if isinstance(event, ToolCallStarted):
            row = self.thoughts[-1]
            row.thought = "".join(self._text).strip()
            row.names.append(event.name)
            row.inputs.append(event.arguments)
            row.observations.append("")
            row.metas.append({})
            row.call_ids.append(event.id)
            return [self._thought(row)]
        if isinstance(event, ToolCallFinished):
            return self._call_finished(event)
        if isinstance(event, RoundFinished):
            return self._round_finished(event)
        if isinstance(event, Finished):
            self.answer = event.result.text
            self.usage = event.result.usage
            return [self.message_end()]
        return []

    @property
    def total_usage(self) -> Usage:
        """The message's usage: its own rounds and the runs of apps it called as tools."""
        return self.usage.plus(self._inner_usage) if self._inner_usage.total_tokens else self.usage

    @property
    def retriever_resources(self) -> list[dict[str, Any]]:
        """The citations of every retriever call so far, deduplicated and numbered as Dify does."""
        if not self._resources:
            return []
        from loopwright.knowledge.citations import merge_retriever_resources  # numpy: only when used

        return merge_retriever_resources(self._resources)

    def _call_finished(self, event: ToolCallFinished) -> list[WireEvent]:
        for item in event.outputs:
            if isinstance(item, VariableMessage) and item.internal:
                if item.name == RETRIEVER_RESOURCES and isinstance(item.value, list):
                    self._resources.append(item.value)
                elif item.name == LLM_USAGE and isinstance(item.value, Usage):
                    self._inner_usage = self._inner_usage.plus(item.value)
        row = self.thoughts[-1]
        i = row.call_ids.index(event.id)
        row.observations[i] = event.observation
        row.metas[i] = event.meta.to_dict()
        out: list[WireEvent] = []
        for output in event.files:
            file_id = str(uuid.uuid4())
            row.message_files.append(file_id)
            self.files.append((file_id, output))
            out.append(self._message_file(file_id, output))
        out.append(self._thought(row))
        return out

    def _round_finished(self, event: RoundFinished) -> list[WireEvent]:
        row = self.thoughts[-1]
        row.usage = event.usage
        self.usage = self.usage.plus(event.usage)  # the total so far; a stopped run ends with it
        row.thought = event.thought.strip()
        self.dirty.add(row.id)
        if event.answer is None:
            return []  # the tool events already showed this round's state
        row.answer = event.answer
        if self.react:
            # Dify appends a ReAct final answer to the last thought and shows no event for it (unless
            # the answer is the thought itself: a plain-text reply).
            if row.thought != event.answer:
                row.thought += event.answer
            return []
        return [self._thought(row)]

    def _delta(self, text: str) -> Delta:
        delta = Delta(self._delta_head)
        delta["answer"] = text
        delta.frame = f"{self._delta_prefix}{encode_basestring(text)}}}\n\n"
        return delta

    def message_end(self) -> WireEvent:
        metadata: dict[str, Any] = {
            "annotation_reply": None,
            "retriever_resources": self.retriever_resources,
            "usage": self.total_usage.to_dict(),
        }
        return self._wrap("message_end", id=self.ctx.message_id, metadata=metadata, files=None)

    def error(self, exc: BaseException) -> WireEvent:
        """Dify's ``error`` event (no ``task_id``) for what ended a run."""
        code, status, message = error_fields(exc)
        return {**self._head("error"), "code": code, "message": message, "status": status}

    def _thought(self, row: ThoughtRow) -> WireEvent:
        self.dirty.add(row.id)
        return self._wrap(
            "agent_thought",
            id=row.id,
            position=row.position,
            thought=row.thought,
            observation=row.observation,
            tool=row.tool,
            tool_labels=tool_labels(row.tool),
            tool_input=row.tool_input,
            message_files=list(row.message_files),
        )

    def _message_file(self, file_id: str, output: ToolOutput) -> WireEvent:
        url = output.url if isinstance(output, ImageMessage | FileMessage) else ""
        if isinstance(output, ImageMessage):
            kind = file_type(output.mime_type or "image/png")
        elif isinstance(output, FileMessage | BlobMessage):
            kind = file_type(output.mime_type)
        else:
            kind = "custom"
        return self._wrap("message_file", id=file_id, type=kind, belongs_to="assistant", url=url)

    def _head(self, name: str) -> WireEvent:
        ctx = self.ctx
        return {
            "event": name,
            "conversation_id": ctx.conversation_id,
            "message_id": ctx.message_id,
            "created_at": ctx.created_at,
        }

    def _wrap(self, name: str, **fields: Any) -> WireEvent:
        return {**self._head(name), "task_id": self.ctx.task_id, **fields}


DOCUMENT_EXTENSIONS = frozenset({"pdf", "txt", "md", "markdown"})


def file_type(mime: str, extension: str = "") -> str:
    """Dify's file type — image, audio, video, document or custom — from a MIME type (and a file
    name's extension, for a generic type): of an upload, and of a message file."""
    major = mime.split("/", 1)[0]
    if major in ("image", "video", "audio"):
        return major
    if major == "text" or mime == "application/pdf" or extension in DOCUMENT_EXTENSIONS:
        return "document"
    return "custom"


def error_fields(exc: BaseException) -> tuple[str, int, str]:
    """``(code, status, message)`` as Dify maps errors to its ``error`` event. Agent errors keep their
    own message (Dify hides them behind "Internal Server Error, please contact support.")."""
    if isinstance(exc, ModelError):
        return "completion_request_error", 400, str(exc)
    if isinstance(exc, AgentError):
        return "internal_server_error", 500, str(exc)
    if isinstance(exc, ValueError):
        return "invalid_param", 400, str(exc)
    return "internal_server_error", 500, "Internal Server Error, please contact support."
