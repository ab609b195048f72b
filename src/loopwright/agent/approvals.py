"""Human approval of tool calls: a run that pauses, and the decisions that resume it.

A tool may require approval (``@tool(requires_approval=True)``, ``Agent(approval_required=[names])``).
When the model calls one, the run does not call it: it ends with ``finish_reason="approval_required"``
and ``result.interruption`` — the calls waiting for a decision and the run's state, serializable to
JSON (``to_json`` / ``Interruption.from_json``) so the decision may come from another process, hours
later. ``Agent.resume(interruption, decisions)`` goes on from there: an approved call runs (with the
arguments as edited, when they were), a denied one gets the reason as its observation, and the model
carries on (the shape of pydantic-ai's deferred tools and the OpenAI Agents SDK's interruptions).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SNAPSHOT_VERSION = 1


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A tool call waiting for a decision."""

    id: str
    tool: str
    arguments: dict[str, Any] | str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tool": self.tool, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """The decision on one call: approve (optionally with edited ``arguments``) or deny with a
    ``reason`` the model is told."""

    call_id: str
    approved: bool
    reason: str = ""
    arguments: dict[str, Any] | None = None

    @classmethod
    def approve(cls, call_id: str, arguments: dict[str, Any] | None = None) -> ApprovalDecision:
        return cls(call_id, True, arguments=arguments)

    @classmethod
    def deny(cls, call_id: str, reason: str = "") -> ApprovalDecision:
        return cls(call_id, False, reason)


@dataclass(frozen=True, slots=True)
class Interruption:
    """A paused run: ``calls`` wait for decisions; ``state`` is what resuming needs (plain JSON data)."""

    calls: list[PendingCall]
    state: dict[str, Any] = field(repr=False)

    def to_json(self) -> str:
        return json.dumps(
            {"calls": [c.to_dict() for c in self.calls], "state": self.state},
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Interruption:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("state", {}).get("version") != SNAPSHOT_VERSION:
            raise ValueError("not a loopwright run interruption (or one from another version)")
        calls = [PendingCall(c["id"], c["tool"], c["arguments"]) for c in data["calls"]]
        return cls(calls, data["state"])


def denial_observation(reason: str) -> str:
    """What the model sees for a denied call."""
    reason = reason.strip()
    return f"The user denied this tool call: {reason}" if reason else "The user denied this tool call."
