"""The A2A wire (Agent2Agent protocol 1.0, JSON-RPC binding) over an app's runs: what a message asks, the
run's events as ``SendStreamingMessage`` frames, a task's JSON.

An A2A **task** is a message of the app (its id is the message's id) and its **context** the message's
conversation (``contextId`` = the conversation id): a task started over A2A is in the Service API's
history and the web app like any other message. A task's state is the message's status: ``running`` →
``TASK_STATE_WORKING``, ``normal`` → ``COMPLETED``, ``error`` → ``FAILED``, ``stopped`` → ``CANCELED``,
``waiting`` (paused for a tool approval) → ``INPUT_REQUIRED``. The answer is the task's one artifact,
``answer``.

Streaming: the route sends the task first (working); then this encoder (or, for ``SubscribeToTask``,
its :meth:`A2AEncoder.replayed` over the run's stored stream) turns the answer's text into
``artifactUpdate`` frames (the first one starts the artifact, the next ones append to it; a
``message_replace`` starts it again) and each tool round into a ``statusUpdate`` (working) whose message
carries the tool's name, input and output as a data part (a handoff's: the text naming the app that
answers from here on and ``{"answered_by": APP_ID}``); the route ends with the final
``statusUpdate`` from the run's outcome. Frames are JSON-RPC responses to the request's id, as SSE
``data:`` lines; a quiet stream gets SSE comments. The journal keeps each event's Dify item, as for
every wire (``app.dify.encoder``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Any

from loopwright.app.dify.encoder import Item
from loopwright.app.dify.events import (
    AgentMessage,
    AgentThought,
    EventHead,
    MessageReplace,
    TextMessage,
    WireEvent,
)
from loopwright.app.wires.encoding import WireEncoder

__all__ = [
    "PROTOCOL_VERSION",
    "A2AEncoder",
    "A2AError",
    "Asked",
    "TaskState",
    "asked_of",
    "key_user",
    "rpc_error",
    "rpc_result",
    "status_update",
    "task_body",
]

PROTOCOL_VERSION = "1.0"
ANSWER_ARTIFACT = "answer"

# JSON-RPC's codes and A2A's own (A2A 1.0, section 5.4)
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000  # not A2A's: authentication and an unknown app (the HTTP status says which)
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
PUSH_NOT_SUPPORTED = -32003
UNSUPPORTED_OPERATION = -32004
CONTENT_TYPE_NOT_SUPPORTED = -32005
VERSION_NOT_SUPPORTED = -32009


class TaskState:
    WORKING = "TASK_STATE_WORKING"
    COMPLETED = "TASK_STATE_COMPLETED"
    FAILED = "TASK_STATE_FAILED"
    CANCELED = "TASK_STATE_CANCELED"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"


# A message's status (and a run's outcome) → its task's state
STATES = {
    "running": TaskState.WORKING,
    "normal": TaskState.COMPLETED,
    "error": TaskState.FAILED,
    "stopped": TaskState.CANCELED,
    "waiting": TaskState.INPUT_REQUIRED,
}
TERMINAL = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED})

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class A2AError(Exception):
    """A request this wire refuses: a JSON-RPC error ``code`` and a message that says why."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def key_user(token: str) -> str:
    """The end user of every task of an app key: a name made from the key (not the key), so that a key
    sees only its own tasks and the Service API finds them under ``user``."""
    return "a2a-" + hashlib.sha256(token.encode()).hexdigest()[:16]


# --- what a message asks ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Asked:
    """The fields of an A2A ``Message`` a run uses: its text, its data parts, the task and context it
    names (empty when it names none), the app's input form values (``metadata.inputs``) and how deep
    in agents calling agents it was sent (``metadata.loopwright.call_depth``)."""

    text: str
    data: list[Mapping[str, Any]] = field(default_factory=list)
    task_id: str = ""
    context_id: str = ""
    inputs: Mapping[str, Any] | None = None
    call_depth: int = 0


def asked_of(params: Any) -> Asked:
    """The message of ``SendMessage``'s params; raises :class:`A2AError` (invalid params) for one that
    is not a user's message with text or data, and for file parts (not supported)."""
    if not isinstance(params, dict) or not isinstance(params.get("message"), dict):
        raise A2AError(INVALID_PARAMS, "params.message must be an object (a Message)")
    message = params["message"]
    role = message.get("role", "ROLE_USER")
    if role not in ("ROLE_USER", "user"):
        raise A2AError(INVALID_PARAMS, f"message.role must be ROLE_USER, not {role!r}")
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        raise A2AError(INVALID_PARAMS, "message.parts must be a non-empty list of parts")
    texts: list[str] = []
    data: list[Mapping[str, Any]] = []
    for part in parts:
        if not isinstance(part, dict):
            raise A2AError(INVALID_PARAMS, "each of message.parts must be an object (a Part)")
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif "data" in part:
            data.append(part["data"] if isinstance(part["data"], dict) else {"value": part["data"]})
        elif "url" in part or "raw" in part:
            raise A2AError(CONTENT_TYPE_NOT_SUPPORTED, "file parts are not supported: send text or data")
        else:
            raise A2AError(INVALID_PARAMS, "a part must hold text or data")
    text = "\n".join(texts).replace("\x00", "")
    if not text.strip() and not data:
        raise A2AError(INVALID_PARAMS, "the message holds no text")
    metadata = message.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    inputs = metadata.get("inputs")
    if inputs is not None and not isinstance(inputs, dict):
        raise A2AError(INVALID_PARAMS, "message.metadata.inputs must be an object (the app's input form)")
    ids = _id_field(message, "taskId"), _id_field(message, "contextId")
    return Asked(text, data, *ids, inputs=inputs, call_depth=_call_depth(metadata))


def _call_depth(metadata: Mapping[str, Any]) -> int:
    """How deep in agents calling agents the message is, as a loopwright caller says it
    (``metadata.loopwright.call_depth``; ``tools.a2a`` sends it): 0 when not said. A caller can only
    make its own calls shallower, never skip another's limit."""
    ours = metadata.get("loopwright")
    depth = ours.get("call_depth") if isinstance(ours, dict) else None
    return depth if isinstance(depth, int) and not isinstance(depth, bool) and 0 <= depth <= 100 else 0


def _id_field(message: Mapping[str, Any], name: str) -> str:
    value = message.get(name) or ""
    if not isinstance(value, str):
        raise A2AError(INVALID_PARAMS, f"message.{name} must be a string")
    return value


# --- the JSON of tasks and their updates ------------------------------------------------------------


def text_part(text: str) -> dict[str, Any]:
    return {"text": text}


def agent_message(
    message_id: str, task_id: str, context_id: str, parts: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "taskId": task_id,
        "contextId": context_id,
        "role": "ROLE_AGENT",
        "parts": parts,
    }


def answer_artifact(text: str) -> dict[str, Any]:
    return {"artifactId": ANSWER_ARTIFACT, "name": ANSWER_ARTIFACT, "parts": [text_part(text)]}


def status(state: str, message: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"state": state, "message": message} if message is not None else {"state": state}


def approval_message(task_id: str, context_id: str, calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The message of an input-required task: what waits for approval, and how to answer."""
    names = ", ".join(f"{c.get('tool')}({_dumps(c.get('arguments') or {})})" for c in calls)
    text = (
        f"Approve the tool calls {names}? Answer in this task with 'approve' or 'deny', or with a data "
        'part {"decisions": [{"call_id": ..., "action": "approve" | "deny", "reason": ...}]}.'
    )
    waiting = [
        {"call_id": c.get("id"), "tool": c.get("tool"), "arguments": c.get("arguments")} for c in calls
    ]
    parts = [text_part(text), {"data": {"tool_calls": waiting}}]
    return agent_message(f"{task_id}-approval", task_id, context_id, parts)


def task_body(
    task_id: str,
    context_id: str,
    state: str,
    *,
    query: str = "",
    answer: str = "",
    error: str | None = None,
    calls: Sequence[Mapping[str, Any]] = (),
    history_length: int | None = None,
    user: str = "",
) -> dict[str, Any]:
    """A ``Task``: its state (with a message saying why it failed or what it waits for), the answer as
    its artifact, the query and answer as its history (the last ``history_length`` of them)."""
    message = None
    if state == TaskState.FAILED and error:
        message = agent_message(f"{task_id}-error", task_id, context_id, [text_part(error)])
    elif state == TaskState.INPUT_REQUIRED:
        message = approval_message(task_id, context_id, calls)
    body: dict[str, Any] = {"id": task_id, "contextId": context_id, "status": status(state, message)}
    if answer:
        body["artifacts"] = [answer_artifact(answer)]
    history: list[dict[str, Any]] = []
    if query:
        history.append(
            {
                "messageId": f"{task_id}-query",
                "taskId": task_id,
                "contextId": context_id,
                "role": "ROLE_USER",
                "parts": [text_part(query)],
            }
        )
    if answer and state in TERMINAL:
        history.append(agent_message(f"{task_id}-answer", task_id, context_id, [text_part(answer)]))
    if history_length is not None:
        history = history[len(history) - history_length :] if history_length > 0 else []
    if history:
        body["history"] = history
    if user:
        body["metadata"] = {"user": user}
    return body


def status_update(
    task_id: str, context_id: str, state: str, message: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"statusUpdate": {"taskId": task_id, "contextId": context_id, "status": status(state, message)}}


def rpc_result(rpc_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "result": result}


def rpc_error(rpc_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message}}


def sse_frame(payload: Mapping[str, Any]) -> str:
    return f"data: {_dumps(payload)}\n\n"


# --- the stream's encoder ---------------------------------------------------------------------------


class A2AEncoder(WireEncoder):
    """Encodes a run's events as ``SendStreamingMessage`` frames answering the request ``rpc_id`` (see
    the module's docstring); the journal's item of each event is Dify's."""

    __slots__ = ("_artifact_frame", "_rpc_id", "_started")

    def __init__(self, rpc_id: Any, seq: int = 0) -> None:
        super().__init__(seq)
        self._rpc_id = rpc_id
        self._artifact_frame: dict[bool, tuple[str, str]] = {}  # by append: the frame around the text
        self._started = False

    def frames(self, event: WireEvent) -> str:
        if isinstance(event, AgentMessage | TextMessage):
            text = event.answer
            return self._text(event.head, text, append=self._started) if text else ""
        if isinstance(event, MessageReplace):
            return self._text(event.head, event.answer, append=False)
        if isinstance(event, AgentThought) and event.tool:
            return self._tool_round(event.head, event.id, event.payload())
        if isinstance(event, AgentThought) and event.answered_by is not None:
            return self._handoff(event)
        # message_end, an error, a pause: the route ends the stream with the outcome's status
        return ""

    def _text(self, head: EventHead, text: str, *, append: bool) -> str:
        """An ``artifactUpdate`` of the answer (``append``: more of it; else it starts again)."""
        self._started = True
        around = self._artifact_frame.get(append)
        if around is None:
            update = {
                "taskId": head.message_id,
                "contextId": head.conversation_id,
                "append": append,
                "artifact": {"artifactId": ANSWER_ARTIFACT, "name": ANSWER_ARTIFACT, "parts": [{"text": ""}]},
            }
            whole = sse_frame(rpc_result(self._rpc_id, {"artifactUpdate": update}))
            cut = whole.rindex('""')  # the text's value: dumped once, the rest made here once
            around = self._artifact_frame[append] = (whole[:cut], whole[cut + 2 :])
        return f"{around[0]}{encode_basestring(text)}{around[1]}"

    def replayed(self, head: EventHead, seq: int, item: Item) -> str:
        """A stored event of the run's stream (``app.run.journal``: Dify's item) as the frame it was
        sent as on this wire — for ``SubscribeToTask``."""
        self.seq = seq
        if isinstance(item, str):
            return self._text(head, item, append=self._started) if item else ""
        kind = item.get("event")
        if kind == "message":  # a text reply's (Dify's chat apps): journalled as its payload
            return self._text(head, str(item.get("answer") or ""), append=self._started)
        if kind == "message_replace":
            return self._text(head, str(item.get("answer") or ""), append=False)
        if kind == "agent_thought" and item.get("tool"):
            return self._tool_round(head, str(item.get("id") or ""), item)
        return ""

    def _handoff(self, thought: AgentThought) -> str:
        """A ``statusUpdate`` (working) saying which app answers from here on (handoffs)."""
        head = thought.head
        parts: list[dict[str, Any]] = [
            {"text": thought.thought},
            {"data": {"answered_by": thought.answered_by}},
        ]
        message = agent_message(f"{thought.id}-{self.seq}", head.message_id, head.conversation_id, parts)
        update = status_update(head.message_id, head.conversation_id, TaskState.WORKING, message)
        return sse_frame(rpc_result(self._rpc_id, update))

    def _tool_round(self, head: EventHead, thought_id: str, payload: Mapping[str, Any]) -> str:
        """A ``statusUpdate`` (working) for a tool round, from its ``agent_thought`` payload."""
        data = {k: payload.get(k) for k in ("tool", "tool_input", "observation")}
        message = agent_message(
            f"{thought_id}-{self.seq}", head.message_id, head.conversation_id, [{"data": data}]
        )
        update = status_update(head.message_id, head.conversation_id, TaskState.WORKING, message)
        return sse_frame(rpc_result(self._rpc_id, update))
