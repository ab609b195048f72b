"""OpenAI's Responses API (the Open Responses shape) over an app's runs: the request mapped to a message,
the run's events encoded as Responses' semantic stream events, a stored message read back as a response.

A response is one message of the app: its id is ``resp_`` and the message's id. ``input`` is the query
(a string, or message items: the last user message is the query, earlier user and assistant messages a
new conversation's history); ``previous_response_id`` goes on with that response's conversation (the
agent then sees the stored history). ``instructions`` is not used: the app's instruction is the system
prompt. Every response is stored (``store`` is accepted and left alone): ``GET /v1/responses/{id}``
reads it back.

Output items: each tool call the agent ran is an item of the extension type ``loopwright:tool_call``
(``name``, ``arguments``, ``output``, ``status``) — the Open Responses way of naming an
implementation's own item, and not ``function_call``, which asks the client to run the tool; the
answer is ``message`` items of ``output_text``. While streaming, the text of each round is its own
message item, closed when the round's tools have answered; a stored response has the tool calls of
every round, then the answer as one message.

Streaming events: ``response.created``, ``response.in_progress``, then per item
``response.output_item.added`` / ``.done`` (and for a message ``response.content_part.added``,
``response.output_text.delta`` …, ``response.output_text.done``, ``response.content_part.done``),
and at the end ``response.completed`` (with usage), ``response.failed`` (with the error) or
``response.incomplete`` (a run paused for a tool approval: resume it with the approvals endpoint).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from loopwright.app.admin.agent_log import find_message
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
from loopwright.app.lookup import AppLookup
from loopwright.app.wires.encoding import WireEncoder
from loopwright.app.wires.openai_chat import ChatQuery, chat_query
from loopwright.app.wires.tool_runs import ToolRun, finished_tool_runs, stored_tool_runs
from loopwright.errors import NotFoundError, UserInputError
from loopwright.store.db import Database
from loopwright.store.models import unix_seconds

__all__ = [
    "RESPONSE_PREFIX",
    "OpenAIResponsesEncoder",
    "ResponseView",
    "conversation_of",
    "message_id_of",
    "read_response",
    "responses_query",
    "stored_response",
]

RESPONSE_PREFIX = "resp_"
TOOL_CALL_ITEM = "loopwright:tool_call"
NO_SUCH_RESPONSE = "Response not found."

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def responses_query(input_: str | Sequence[Mapping[str, Any]]) -> ChatQuery:
    """The query and history of a request's ``input``; :class:`UserInputError` when it has no user text."""
    if isinstance(input_, str):
        if not input_.strip():
            raise UserInputError("input must have text")
        return ChatQuery(input_, [])
    # message items: {"role", "content"} with or without "type": "message"; other items (a client's
    # function_call_output, …) have no place in a run whose agent runs its own tools
    return chat_query([m for m in input_ if m.get("type", "message") == "message"])


def message_id_of(response_id: str) -> str:
    """The message a response id names; :class:`NotFoundError` for an id that is not a response's."""
    if not response_id.startswith(RESPONSE_PREFIX) or len(response_id) == len(RESPONSE_PREFIX):
        raise NotFoundError(NO_SUCH_RESPONSE)
    return response_id[len(RESPONSE_PREFIX) :]


class ResponseView:
    """What a response object says, built up as the run goes (or at once from a stored message)."""

    __slots__ = ("created_at", "error", "id", "incomplete", "model", "output", "previous", "status", "usage")

    def __init__(self, head: EventHead, model: str, previous: str | None) -> None:
        self.id = RESPONSE_PREFIX + head.message_id
        self.created_at = head.created_at
        self.model = model
        self.previous = previous
        self.status = "in_progress"
        self.output: list[dict[str, Any]] = []
        self.usage: Mapping[str, Any] = {}
        self.error: dict[str, Any] | None = None
        self.incomplete: dict[str, Any] | None = None

    def body(self) -> dict[str, Any]:
        prompt, completion = (
            int(self.usage.get("prompt_tokens") or 0),
            int(self.usage.get("completion_tokens") or 0),
        )
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": self.status,
            "model": self.model,
            "output": self.output,
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            },
            "error": self.error,
            "incomplete_details": self.incomplete,
            "previous_response_id": self.previous,
            "instructions": None,
            "metadata": {},
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "store": True,
        }

    def end(self, event: WireEvent) -> None:
        """The status (and usage, error or reason) of the run's last event."""
        if isinstance(event, MessageEnd):
            self.status, self.usage = "completed", event.metadata.get("usage") or {}
        elif isinstance(event, ToolApprovalRequired):
            self.status, self.incomplete = "incomplete", {"reason": "tool_approval_required"}
        elif isinstance(event, ErrorEvent):
            code, _, message = error_fields(event.error)
            self.status, self.error = "failed", {"code": code, "message": message}


def tool_call_item(run: ToolRun) -> dict[str, Any]:
    return {
        "type": TOOL_CALL_ITEM,
        "id": f"tc_{run.id}",
        "status": "completed",
        "name": run.name,
        "arguments": run.arguments,
        "output": run.output,
    }


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]
        if status == "completed"
        else [],
    }


class OpenAIResponsesEncoder(WireEncoder):
    """Encodes a run's events as Responses stream events (see the module's docstring); its
    :attr:`view` is the response so far, which a blocking request answers with."""

    __slots__ = ("_model", "_n", "_previous", "_text", "_text_id", "view")

    def __init__(self, model: str, previous: str | None = None, seq: int = 0) -> None:
        super().__init__(seq)
        self._model = model
        self._previous = previous
        self._n = 0  # the stream's sequence_number
        self._text: list[str] | None = None  # the open message item's text, if one is open
        self._text_id = ""
        self.view: ResponseView | None = None

    def frames(self, event: WireEvent) -> str:
        out: list[str] = []
        view = self.view
        if view is None:
            self.view = view = ResponseView(event.head, self._model, self._previous)
            out += [self._sse("response.created", response=view.body())]
            out += [self._sse("response.in_progress", response=view.body())]
        if isinstance(event, AgentMessage | TextMessage):
            if event.answer:
                self._say(event.answer, out)
            return "".join(out)
        runs = finished_tool_runs(event)
        if runs or isinstance(event, MessageEnd | ToolApprovalRequired | ErrorEvent):
            self._close_text(out)
        for run in runs:
            self._add_item(tool_call_item(run), out)
        if isinstance(event, MessageEnd | ToolApprovalRequired | ErrorEvent):
            view.end(event)
            kind = {"completed": "response.completed", "failed": "response.failed"}.get(view.status)
            out += [self._sse(kind or "response.incomplete", response=view.body())]
        return "".join(out)

    def _sse(self, kind: str, **fields: Any) -> str:
        self._n += 1
        return f"event: {kind}\ndata: {_dumps({'type': kind, 'sequence_number': self._n, **fields})}\n\n"

    def _say(self, text: str, out: list[str]) -> None:
        view = self.view
        assert view is not None
        if self._text is None:
            self._text, self._text_id = [], f"msg_{view.id[len(RESPONSE_PREFIX) :]}_{len(view.output)}"
            index = len(view.output)
            out += [
                self._sse(
                    "response.output_item.added",
                    output_index=index,
                    item=message_item(self._text_id, "", "in_progress"),
                )
            ]
            part = {"type": "output_text", "text": "", "annotations": []}
            out += [
                self._sse(
                    "response.content_part.added",
                    item_id=self._text_id,
                    output_index=index,
                    content_index=0,
                    part=part,
                )
            ]
        self._text.append(text)
        where = {"item_id": self._text_id, "output_index": len(view.output), "content_index": 0}
        out += [self._sse("response.output_text.delta", **where, delta=text, logprobs=[])]

    def _close_text(self, out: list[str]) -> None:
        view = self.view
        if self._text is None or view is None:
            return
        text, self._text = "".join(self._text), None
        index = len(view.output)
        where = {"item_id": self._text_id, "output_index": index, "content_index": 0}
        out += [self._sse("response.output_text.done", **where, text=text, logprobs=[])]
        part = {"type": "output_text", "text": text, "annotations": []}
        out += [self._sse("response.content_part.done", **where, part=part)]
        item = message_item(self._text_id, text)
        view.output.append(item)
        out += [self._sse("response.output_item.done", output_index=index, item=item)]

    def _add_item(self, item: dict[str, Any], out: list[str]) -> None:
        view = self.view
        assert view is not None
        index = len(view.output)
        view.output.append(item)
        out += [self._sse("response.output_item.added", output_index=index, item=item)]
        out += [self._sse("response.output_item.done", output_index=index, item=item)]


_STORED_STATUS = {"normal": "completed", "error": "failed", "running": "in_progress"}


def stored_response(
    head: EventHead,
    *,
    status: str,
    answer: str,
    error: str | None,
    usage: Mapping[str, Any],
    runs: Sequence[ToolRun],
    model: str,
    previous: str | None = None,
) -> dict[str, Any]:
    """A stored message as a response object: the tool calls of its rounds, then its answer."""
    view = ResponseView(head, model, previous)
    view.status = _STORED_STATUS.get(status, "incomplete")  # stopped, interrupted, paused
    view.usage = usage
    if view.status == "failed":
        view.error = {"code": "server_error", "message": error or ""}
    view.output = [tool_call_item(r) for r in runs]
    if answer:
        view.output.append(message_item(f"msg_{head.message_id}", answer))
    return view.body()


async def conversation_of(db: Database, lookup: AppLookup, app_id: str, user: str, response_id: str) -> str:
    """The conversation a ``previous_response_id`` goes on with: that response's, if it is this end
    user's in this app (else :class:`NotFoundError`)."""
    message, _, _ = await find_message(db, lookup, app_id, user, message_id_of(response_id))
    return message.conversation_id


async def read_response(
    db: Database,
    lookup: AppLookup,
    app_id: str,
    user: str,
    response_id: str,
    *,
    model: str = "",
    previous: str | None = None,
) -> dict[str, Any]:
    """A stored response of this end user in this app (else :class:`NotFoundError`); ``model`` is
    the name the client used (default: the app's id)."""
    message, thoughts, _ = await find_message(db, lookup, app_id, user, message_id_of(response_id))
    head = EventHead("", message.id, message.conversation_id, unix_seconds(message.created_at))
    usage = {"prompt_tokens": message.message_tokens, "completion_tokens": message.answer_tokens}
    return stored_response(
        head,
        status=message.status,
        answer=message.answer,
        error=message.error,
        usage=usage,
        runs=stored_tool_runs(thoughts),
        model=model or app_id,
        previous=previous,
    )
