"""MCP over an app's runs: the app as one MCP tool, a call mapped to a message, the run's outcome as the
tool's result (``docs/protocols.md``, "MCP"; the server's side of the protocol is ``server.routes_mcp``).

The tool is the app as apps calling apps see it (``tools.app_tool``): named from the app's name, its
description the app's, its input ``query`` and the app's input form (required fields required). A
call is a new conversation of the end user ``mcp-user``; its result is the answer as text content,
and as structured content the answer, the conversation and message ids, the run's citations
(``retriever_resources``) and the files its tools made. A run that fails, an input the form refuses,
a run that waits for approvals of tool calls: a tool error (``isError``) saying why.

Progress: the run's rounds and tool calls, as they happen, for a client that asked for it (a
``progressToken``); such a call runs as a stream (:class:`ProgressEncoder` gives its events and
writes no frame), any other call as a blocking run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopwright.app.config import InputField
from loopwright.app.dify.errors import error_fields
from loopwright.app.dify.events import AgentThought, WireEvent
from loopwright.app.dify.stream import file_type
from loopwright.app.run.runs import RunOutcome
from loopwright.app.toolsets import form_parameter
from loopwright.app.wires.encoding import WireEncoder
from loopwright.model.entities import ToolSchema
from loopwright.store.codec import split_tool_names
from loopwright.tools.app_tool import AppAnswer, app_tool
from loopwright.tools.base import BlobMessage, FileMessage, ImageMessage, ToolContext, ToolOutput

__all__ = [
    "DEFAULT_USER",
    "OUTPUT_SCHEMA",
    "ProgressEncoder",
    "RunProgress",
    "ToolResult",
    "app_tool_schema",
    "tool_error",
    "tool_result",
]

DEFAULT_USER = "mcp-user"

# The structured content of a call's result.
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "conversation_id": {"type": "string"},
        "message_id": {"type": "string"},
        "retriever_resources": {"type": "array", "items": {"type": "object"}},
        "files": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"type": "string"},
                    "url": {"type": "string"},
                    "mime_type": {"type": "string"},
                },
            },
        },
    },
    "required": ["answer", "conversation_id", "message_id", "retriever_resources", "files"],
}


async def _not_run(app_id: str, query: str, inputs: Mapping[str, Any], ctx: ToolContext) -> AppAnswer:
    raise AssertionError("the MCP tool's schema is read, the tool is never run")  # pragma: no cover


def app_tool_schema(app_id: str, name: str, description: str, form: Sequence[InputField]) -> ToolSchema:
    """The app as a tool: its name, description and JSON Schema input (see the module's docstring)."""
    inputs = [form_parameter(f) for f in form]
    return app_tool(app_id, _not_run, name=name, description=description, inputs=inputs).schema


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What an MCP tool call gives back: its text, its structured content (None for an error)."""

    text: str
    structured: dict[str, Any] | None
    is_error: bool


def tool_error(exc: BaseException) -> ToolResult:
    """A tool error for what refused or ended a run (the message a client of any wire sees)."""
    _, _, message = error_fields(exc)
    return ToolResult(message, None, True)


def tool_result(outcome: RunOutcome) -> ToolResult:
    """The result of a call whose run ended (see the module's docstring)."""
    if outcome.error is not None:
        return tool_error(outcome.error)
    if outcome.approval is not None:
        task = outcome.approval.head.task_id
        tools = ", ".join(str(c.get("tool", "")) for c in outcome.approval.calls)
        text = (
            f"the app waits for a person to approve its tool calls ({tools}); "
            f"POST /v1/chat-messages/{task}/approvals takes the decisions"
        )
        return ToolResult(text, None, True)
    end = outcome.end
    if outcome.status == "stopped" or end is None:  # stopped (a person, the server shutting down)
        so_far = f": {outcome.answer}" if outcome.answer else ""
        return ToolResult(f"the run was stopped before it finished{so_far}", None, True)
    structured = {
        "answer": outcome.answer,
        "conversation_id": end.head.conversation_id,
        "message_id": end.head.message_id,
        "retriever_resources": end.metadata.get("retriever_resources") or [],
        "files": [_file(f) for f in outcome.files],
    }
    return ToolResult(outcome.answer, structured, False)


def _file(output: ToolOutput) -> dict[str, str]:
    """A file a tool made, as ``message_file`` shows it (``app.dify.stream``)."""
    url = output.url if isinstance(output, ImageMessage | FileMessage) else ""
    if isinstance(output, ImageMessage):
        mime = output.mime_type or "image/png"
    elif isinstance(output, FileMessage | BlobMessage):
        mime = output.mime_type
    else:
        mime = "application/octet-stream"
    return {"type": file_type(mime), "url": url, "mime_type": mime}


class ProgressEncoder(WireEncoder):
    """A run's events for the MCP call that waits for it: each event and its journal item, no frame —
    the call's reader takes the events themselves (``Run.events``)."""

    __slots__ = ()

    def frames(self, event: WireEvent) -> str:
        return ""


class RunProgress:
    """The progress messages of a run's events: ``round N`` when a round starts, ``calling T`` when
    it calls a tool."""

    __slots__ = ("_calls", "_round")

    def __init__(self) -> None:
        self._round = ""
        self._calls = 0

    def said(self, event: WireEvent) -> list[str]:
        """What ``event`` tells of the run's progress (nothing, mostly)."""
        if type(event) is not AgentThought:
            return []
        said: list[str] = []
        if event.id != self._round:
            self._round, self._calls = event.id, 0
            said.append(f"round {event.position}")
        names = split_tool_names(event.tool)
        said += [f"calling {name}" for name in names[self._calls :]]
        self._calls = max(self._calls, len(names))
        return said
