"""AG-UI over an app's runs: a ``RunAgentInput`` mapped to a message, the run's events encoded as
AG-UI's events (``docs/protocols.md``, "AG-UI").

The request: ``threadId`` names the conversation — a UUID is the conversation's id (a Service API
conversation goes on over AG-UI and the reverse), any other string names the conversation
``uuid5(app, threadId)``; a thread not seen yet starts a new conversation under that id, whose
earlier ``messages`` are the history the agent sees (a known thread's history is the stored one).
The last message must be the user's: it is the query. ``forwardedProps`` may carry ``user`` (the end
user, default ``ag-ui-user``), ``inputs`` (the app's input form) and ``messagesSnapshot: true``
(a ``MESSAGES_SNAPSHOT`` before ``RUN_FINISHED``). ``state``, ``context`` and ``tools`` (tools the
client would run) are not used: the app's agent has its own tools and runs them.

The stream, from Dify's wire events (the journal keeps each event's Dify item, ``app.wires.encoding``):
each round of the agent is a step (``STEP_STARTED``/``STEP_FINISHED``, named ``round N``) whose text is
one assistant text message (``TEXT_MESSAGE_START/CONTENT/END``, id ``{message_id}-{N}``) and whose tool
calls are ``TOOL_CALL_START/ARGS/END`` (the call's parent is the round's message) then
``TOOL_CALL_RESULT`` when the tool answered — the agent ran them, the client only shows them. The run
ends with ``RUN_FINISHED`` (``result``: the conversation and message ids and the citations; ``usage``),
or ``RUN_FINISHED`` with an ``interrupt`` outcome when it waits for approvals of tool calls (given over
the Service API), or ``RUN_ERROR``. A file a tool made is a ``CUSTOM`` event ``message_file``; an
answer replaced by moderation is a new text message. A quiet stream gets SSE comments. A round's tool
calls are read as every wire reads them (``app.wires.tool_runs``).

Frames are JSON written here, not the ``ag-ui-protocol`` models dumped: building and dumping a model
per text delta costs several times the rest of the event's path. The tests parse every frame with
those models.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any

from loopwright.app.dify.errors import error_fields
from loopwright.app.dify.events import (
    AgentMessage,
    AgentThought,
    ErrorEvent,
    EventHead,
    MessageEnd,
    MessageFile,
    MessageReplace,
    TextMessage,
    ToolApprovalRequired,
    WireEvent,
)
from loopwright.app.wires.encoding import WireEncoder
from loopwright.app.wires.openai_chat import chat_query
from loopwright.app.wires.tool_runs import ToolRun, tool_runs
from loopwright.errors import UserInputError
from loopwright.model.entities import PromptMessage

__all__ = [
    "DEFAULT_USER",
    "AgUiEncoder",
    "AgUiRun",
    "ag_ui_run",
    "conversation_of_thread",
    "event_frame",
    "refusal",
    "run_error",
    "run_started",
]

DEFAULT_USER = "ag-ui-user"
# The namespace of the conversation ids named by threadIds that are not UUIDs.
THREADS = uuid.UUID("6f1c2a8e-5b7d-4c1e-9a3f-2d8b0e4c7a19")

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def event_frame(event: Mapping[str, Any]) -> str:
    """One AG-UI event as an SSE data frame."""
    return f"data: {_dumps(event)}\n\n"


def conversation_of_thread(app_id: str, thread_id: str) -> str:
    """The conversation a threadId names (see the module's docstring)."""
    try:
        return str(uuid.UUID(thread_id))
    except ValueError:
        return str(uuid.uuid5(THREADS, f"{app_id}\n{thread_id}"))


class AgUiRun:
    """What a ``RunAgentInput`` asks of an app's run."""

    __slots__ = ("history", "inputs", "messages", "query", "run_id", "snapshot", "thread_id", "user")

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        query: str,
        history: list[PromptMessage],
        *,
        user: str,
        inputs: Mapping[str, Any] | None,
        messages: list[dict[str, Any]] | None,
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.query = query
        self.history = history
        self.user = user
        self.inputs = inputs
        self.messages = messages  # the input's messages, when a snapshot is asked for
        self.snapshot = messages is not None


def ag_ui_run(thread_id: str, run_id: str, messages: Sequence[Mapping[str, Any]], forwarded: Any) -> AgUiRun:
    """The run a ``RunAgentInput`` (its messages dumped by alias) asks for; raises
    :class:`UserInputError` for messages that do not end with a user's text, or bad
    ``forwardedProps``."""
    if not thread_id.strip():
        raise UserInputError("threadId must name the conversation")
    asked = chat_query(messages)
    props: Mapping[str, Any] = forwarded if isinstance(forwarded, Mapping) else {}
    user, inputs, snapshot = props.get("user"), props.get("inputs"), props.get("messagesSnapshot", False)
    if user is not None and (not isinstance(user, str) or not user.strip()):
        raise UserInputError("forwardedProps.user must be a non-empty string")
    if inputs is not None and not isinstance(inputs, Mapping):
        raise UserInputError("forwardedProps.inputs must be an object")
    if not isinstance(snapshot, bool):
        raise UserInputError("forwardedProps.messagesSnapshot must be true or false")
    return AgUiRun(
        thread_id,
        run_id,
        asked.query,
        asked.history,
        user=user or DEFAULT_USER,
        inputs=inputs,
        messages=[dict(m) for m in messages] if snapshot else None,
    )


def run_started(asked: AgUiRun) -> str:
    """The stream's first frame, sent before the run's first event."""
    return event_frame({"type": "RUN_STARTED", "threadId": asked.thread_id, "runId": asked.run_id})


def run_error(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """The HTTP status and ``RUN_ERROR`` event of a request refused before its run started."""
    code, status, message = error_fields(exc)
    return status, refusal(code, message)


def refusal(code: str, message: str) -> dict[str, Any]:
    """The ``RUN_ERROR`` event that is the body of a refused request."""
    return {"type": "RUN_ERROR", "message": message, "code": code}


class _Round:
    """One round of the agent as the stream has shown it."""

    __slots__ = ("calls", "id", "message_id", "name", "results", "text", "texts")

    def __init__(self, thought_id: str, message_id: str, position: int) -> None:
        self.id = thought_id
        self.message_id = message_id
        self.name = f"round {position}"
        self.calls: list[tuple[str, str, str]] = []  # (call id, tool name, arguments as JSON)
        self.results: dict[str, str] = {}  # call id → what the tool answered
        self.text: list[str] = []  # the round's text (kept only for a snapshot)
        self.texts = 0  # the text messages opened in it


class AgUiEncoder(WireEncoder):
    """Encodes a run's events as AG-UI events (see the module's docstring)."""

    __slots__ = ("_content_prefix", "_open_text", "_round", "_rounds", "_run", "_snapshot")

    def __init__(self, asked: AgUiRun, seq: int = 0) -> None:
        super().__init__(seq)
        ids = _dumps({"threadId": asked.thread_id, "runId": asked.run_id})[1:-1]
        self._run = ids  # '"threadId":…,"runId":…' for RUN_FINISHED
        self._snapshot = asked.messages
        self._round: _Round | None = None
        self._rounds: list[_Round] = []
        self._open_text = ""  # the id of the text message open now
        self._content_prefix = ""

    def frames(self, event: WireEvent) -> str:
        if type(event) is AgentMessage or type(event) is TextMessage:
            return self._text(event.head, event.answer)
        if isinstance(event, AgentThought):
            return self._thought(event)
        if isinstance(event, MessageFile):
            value = {"id": event.id, "type": event.type, "url": event.url}
            return event_frame({"type": "CUSTOM", "name": "message_file", "value": value})
        if isinstance(event, MessageReplace):  # the answer so far is replaced: a new text message
            frames = self._close_text() + self._text(event.head, event.answer) + self._close_text()
            if self._round is not None and self._snapshot is not None:
                self._round.text = [event.answer]
            return frames
        if isinstance(event, MessageEnd):
            return self._close_round(settle=True) + self._snapshot_frame() + self._finished(event)
        if isinstance(event, ToolApprovalRequired):
            return self._close_round(settle=False) + self._interrupted(event)
        if isinstance(event, ErrorEvent):
            code, _, message = error_fields(event.error)
            error = event_frame({"type": "RUN_ERROR", "message": message, "code": code})
            return self._close_round(settle=False) + error
        return ""  # speech: not part of this wire

    # --- text ------------------------------------------------------------------------------------

    def _text(self, head: EventHead, text: str) -> str:
        if not text:
            return ""
        start = ""
        if not self._open_text:
            start = self._open(head)
        current = self._round
        if current is not None and self._snapshot is not None:
            current.text.append(text)
        return f"{start}{self._content_prefix}{encode_basestring(text)}}}\n\n"

    def _open(self, head: EventHead) -> str:
        current = self._round
        if current is None:  # an answer given without the agent (an annotation, a moderation)
            current = self._new_round(f"{head.message_id}-answer", head.message_id, 0)
        current.texts += 1  # the round's first text has the round's id; a later one (a replacement) its own
        message_id = current.message_id if current.texts == 1 else f"{current.message_id}-{current.texts}"
        self._open_text = message_id
        self._content_prefix = f'data: {{"type":"TEXT_MESSAGE_CONTENT","messageId":"{message_id}","delta":'
        return event_frame({"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"})

    def _close_text(self) -> str:
        if not self._open_text:
            return ""
        message_id, self._open_text = self._open_text, ""
        return event_frame({"type": "TEXT_MESSAGE_END", "messageId": message_id})

    # --- rounds and tool calls -------------------------------------------------------------------

    def _new_round(self, thought_id: str, message_id: str, position: int) -> _Round:
        self._round = _Round(thought_id, message_id, position)
        self._rounds.append(self._round)
        return self._round

    def _thought(self, thought: AgentThought) -> str:
        frames = ""
        current = self._round
        if current is None or current.id != thought.id:
            frames = self._close_round(settle=True)
            message_id = f"{thought.head.message_id}-{thought.position}"
            current = self._new_round(thought.id, message_id, thought.position)
            if thought.answered_by is not None:  # a handoff: the step names the app answering now
                current.name = f"handoff to {thought.answered_by}"
            frames += event_frame({"type": "STEP_STARTED", "stepName": current.name})
        if not thought.tool:
            return frames
        runs = tool_runs(thought.id, thought.tool, thought.tool_input, thought.observation)
        if len(runs) > len(current.calls):
            frames += self._close_text() + self._calls(current, runs[len(current.calls) :])
        if thought.observation:
            for run in runs:
                if run.output and run.id not in current.results:
                    frames += self._result(current, run.id, run.output)
        return frames

    def _calls(self, current: _Round, runs: list[ToolRun]) -> str:
        frames: list[str] = []
        for run in runs:
            current.calls.append((run.id, run.name, run.arguments))
            start = {"type": "TOOL_CALL_START", "toolCallId": run.id, "toolCallName": run.name}
            start["parentMessageId"] = current.message_id
            frames.append(event_frame(start))
            frames.append(
                event_frame({"type": "TOOL_CALL_ARGS", "toolCallId": run.id, "delta": run.arguments})
            )
            frames.append(event_frame({"type": "TOOL_CALL_END", "toolCallId": run.id}))
        return "".join(frames)

    def _result(self, current: _Round, call_id: str, content: str) -> str:
        current.results[call_id] = content
        result = {"type": "TOOL_CALL_RESULT", "messageId": f"{call_id}-result", "toolCallId": call_id}
        return event_frame({**result, "content": content, "role": "tool"})

    def _close_round(self, *, settle: bool) -> str:
        """The open text message and step closed; with ``settle``, calls the tools answered with
        nothing get their empty result (a round that paused for approvals leaves its calls open)."""
        frames = self._close_text()
        current = self._round
        if current is None or current.id.endswith("-answer"):
            return frames
        if settle:
            for call_id, _, _ in current.calls:
                if call_id not in current.results:
                    frames += self._result(current, call_id, "")
        self._round = None
        return frames + event_frame({"type": "STEP_FINISHED", "stepName": current.name})

    # --- the end ---------------------------------------------------------------------------------

    def _finished(self, end: MessageEnd) -> str:
        head, metadata = end.head, end.metadata
        result = {
            "conversationId": head.conversation_id,
            "messageId": head.message_id,
            "retrieverResources": metadata.get("retriever_resources") or [],
        }
        usage = metadata.get("usage") or {}
        tokens = {
            "inputTokens": int(usage.get("prompt_tokens") or 0),
            "outputTokens": int(usage.get("completion_tokens") or 0),
            "totalTokens": int(usage.get("total_tokens") or 0),
        }
        tail = _dumps({"result": result, "outcome": {"type": "success"}, "usage": [tokens]})[1:]
        return f'data: {{"type":"RUN_FINISHED",{self._run},{tail}\n\n'

    def _interrupted(self, event: ToolApprovalRequired) -> str:
        """``RUN_FINISHED`` with an ``interrupt`` outcome: one interrupt per call waiting, its id the
        one ``POST /v1/chat-messages/{task_id}/approvals`` takes, its ``toolCallId`` the call as this
        stream showed it."""
        shown = list(self._rounds[-1].calls) if self._rounds else []
        interrupts = []
        for call in event.calls:
            name = str(call.get("tool", ""))
            interrupt = {
                "id": str(call.get("id", "")),
                "reason": "tool_approval",
                "message": f"{name} waits for approval (task {event.head.task_id})",
            }
            match = next((c for c in shown if c[1] == name), None)
            if match is not None:
                shown.remove(match)
                interrupt["toolCallId"] = match[0]
            interrupts.append(interrupt)
        outcome = {"type": "interrupt", "interrupts": interrupts}
        result = {"conversationId": event.head.conversation_id, "taskId": event.head.task_id}
        tail = _dumps({"result": result, "outcome": outcome})[1:]
        return f'data: {{"type":"RUN_FINISHED",{self._run},{tail}\n\n'

    def _snapshot_frame(self) -> str:
        if self._snapshot is None:
            return ""
        messages = list(self._snapshot)
        for r in self._rounds:
            text = "".join(r.text)
            if not text and not r.calls:
                continue
            message: dict[str, Any] = {"id": r.message_id, "role": "assistant"}
            if text:
                message["content"] = text
            if r.calls:
                message["toolCalls"] = [
                    {"id": c, "type": "function", "function": {"name": n, "arguments": a}}
                    for c, n, a in r.calls
                ]
            messages.append(message)
            messages += [
                {"id": f"{c}-result", "role": "tool", "toolCallId": c, "content": r.results.get(c, "")}
                for c, _, _ in r.calls
            ]
        return event_frame({"type": "MESSAGES_SNAPSHOT", "messages": messages})
