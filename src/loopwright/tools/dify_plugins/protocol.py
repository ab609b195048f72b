"""The Dify plugin SDK's local (stdio) protocol, without I/O: the lines the host writes and the events
the lines a plugin writes decode to.

Host → plugin, one JSON object per line: ``{"session_id", "event": "request", "data": {...}}`` and, to
answer a plugin's call back into the host, ``{"session_id", "event": "backwards_response", "data":
{"backwards_request_id", "event": "response" | "error" | "end", "message", "data"}}``.

Plugin → host, JSON objects each followed by a blank line: first its declaration (objects with no
``event``: the manifest and the providers it registered), then ``session`` events (``stream`` /
``invoke`` / ``error`` / ``end``), ``log``, ``heartbeat`` and ``error`` events.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Declaration:
    """A line of the plugin's declaration (its manifest, a provider it registered)."""

    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Stream:
    """One message of a session (a tool message, a validation result)."""

    session_id: str
    message: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Invoke:
    """A call of the plugin back into the host (``storage``, ``llm``, ``upload_file``, …)."""

    session_id: str
    kind: str
    request_id: str
    request: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SessionError:
    session_id: str
    error_type: str
    message: str


@dataclass(frozen=True, slots=True)
class End:
    session_id: str


@dataclass(frozen=True, slots=True)
class Log:
    level: str
    message: str


@dataclass(frozen=True, slots=True)
class Heartbeat:
    pass


@dataclass(frozen=True, slots=True)
class PluginFailure:
    """An ``error`` event outside any session (a line the plugin could not parse, …)."""

    message: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Exited:
    """Not a line: the plugin's process ended (the reader puts it in every open session)."""

    returncode: int | None
    stderr: str


Event = Declaration | Stream | Invoke | SessionError | End | Log | Heartbeat | PluginFailure | Exited
SessionEvent = Stream | Invoke | SessionError | End | Exited


def request_line(session_id: str, data: Mapping[str, Any]) -> bytes:
    return _line({"session_id": session_id, "event": "request", "data": data})


def backwards_line(
    session_id: str,
    request_id: str,
    event: str,
    *,
    message: str = "",
    data: Mapping[str, Any] | None = None,
) -> bytes:
    body = {"backwards_request_id": request_id, "event": event, "message": message, "data": data}
    return _line({"session_id": session_id, "event": "backwards_response", "data": body})


def invoke_tool(
    provider: str, tool: str, credentials: Mapping[str, Any], parameters: Mapping[str, Any], user_id: str
) -> dict[str, Any]:
    return {
        "type": "tool",
        "action": "invoke_tool",
        "user_id": user_id,
        "provider": provider,
        "tool": tool,
        "credentials": dict(credentials),
        "tool_parameters": dict(parameters),
    }


def validate_credentials(provider: str, credentials: Mapping[str, Any], user_id: str = "") -> dict[str, Any]:
    return {
        "type": "tool",
        "action": "validate_tool_credentials",
        "user_id": user_id,
        "provider": provider,
        "credentials": dict(credentials),
    }


def parse_line(line: bytes) -> Event | None:
    """The event of one line the plugin wrote; None for a blank line. A line that is not a JSON
    object is a :class:`PluginFailure` (the plugin printed something of its own)."""
    text = line.strip()
    if not text:
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return PluginFailure(f"the plugin wrote a line that is not JSON: {text[:200]!r}")
    if not isinstance(obj, dict):
        return PluginFailure(f"the plugin wrote JSON that is not an object: {text[:200]!r}")
    event = obj.get("event")
    data = obj.get("data")
    data = data if isinstance(data, dict) else {}
    if event is None:
        return Declaration(obj)
    if event == "session":
        return _session(str(obj.get("session_id") or ""), data)
    if event == "heartbeat":
        return Heartbeat()
    if event == "log":
        return Log(str(data.get("level", "INFO")), str(data.get("message", "")))
    if event == "error":
        session_id = obj.get("session_id")
        message = str(data.get("message") or data.get("error") or data)
        if session_id:
            return SessionError(str(session_id), str(data.get("error_type", "PluginError")), message)
        return PluginFailure(message, data)
    return PluginFailure(f"the plugin sent an unknown event {event!r}")


def _session(session_id: str, data: Mapping[str, Any]) -> Event:
    kind = data.get("type")
    body = data.get("data")
    body = body if isinstance(body, dict) else {}
    if kind == "stream":
        return Stream(session_id, body)
    if kind == "end":
        return End(session_id)
    if kind == "error":
        message = str(body.get("message") or body.get("error") or "the plugin failed")
        return SessionError(session_id, str(body.get("error_type", "PluginError")), message)
    if kind == "invoke":
        request = body.get("request")
        return Invoke(
            session_id,
            str(body.get("type", "")),
            str(body.get("backwards_request_id", "")),
            request if isinstance(request, dict) else {},
        )
    return SessionError(session_id, "ProtocolError", f"the plugin sent an unknown session message {kind!r}")


def _line(obj: Mapping[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str).encode() + b"\n"
