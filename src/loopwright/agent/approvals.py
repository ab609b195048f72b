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

from loopwright.agent.run_state import RunState, RunStateVersionError


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
    """The decision on one call: approve (optionally with edited ``arguments``), deny with a
    ``reason`` the model is told, or answer it: the call does not run and ``answer`` is its
    observation (a question the model asked the user, ``tools.builtin.ask_user``)."""

    call_id: str
    approved: bool
    reason: str = ""
    arguments: dict[str, Any] | None = None
    answer: str | None = None

    @classmethod
    def approve(cls, call_id: str, arguments: dict[str, Any] | None = None) -> ApprovalDecision:
        return cls(call_id, True, arguments=arguments)

    @classmethod
    def deny(cls, call_id: str, reason: str = "") -> ApprovalDecision:
        return cls(call_id, False, reason)

    @classmethod
    def answered(cls, call_id: str, answer: str) -> ApprovalDecision:
        return cls(call_id, True, answer=answer)


@dataclass(frozen=True, slots=True)
class Interruption:
    """A paused run: ``calls`` wait for decisions; ``state`` is what resuming needs (a
    :class:`~loopwright.agent.run_state.RunState`, serializable with the calls by ``to_json``)."""

    calls: list[PendingCall]
    state: RunState = field(repr=False)

    def to_json(self) -> str:
        return json.dumps(
            {"calls": [c.to_dict() for c in self.calls], "state": self.state.to_dict()},
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Interruption:
        """An interruption ``to_json`` wrote, by this loopwright or an earlier one (its run state's
        version 1 is still read); raises ``RunStateVersionError`` (a ``ValueError``) for anything else."""
        data = json.loads(text)
        try:
            if not isinstance(data, dict):
                raise RunStateVersionError("not a JSON object")
            state = RunState.from_dict(data.get("state"))
        except RunStateVersionError as e:
            raise RunStateVersionError(
                f"not a loopwright run interruption this version can resume: {e}"
            ) from e
        calls = [PendingCall(c["id"], c["tool"], c["arguments"]) for c in data["calls"]]
        return cls(calls, state)


def denial_observation(reason: str) -> str:
    """What the model sees for a denied call."""
    reason = reason.strip()
    return f"The user denied this tool call: {reason}" if reason else "The user denied this tool call."
