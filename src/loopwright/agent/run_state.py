"""``RunState``: everything one run changes, and the one serializable unit of a paused or taken-up run.

A run that pauses for approvals (agent.approvals) hands its state over in ``result.interruption``; a
durable run (agent.durability) hands a snapshot of it to its step log at each step boundary. Either
travels as JSON (``to_json`` / ``RunState.from_json``; ``to_dict`` / ``from_dict`` for the plain data)
and is taken up by ``Agent.resume_stream``, in this process or another, later.

Kept: the prompt so far (instruction, history, the user's message, this turn's messages, the ReAct
scratchpad), the counters the loop's limits read, the usage, the run's time so far (``elapsed``), a
summary of the calls made (for the metrics), the repeated-call guard's memory (``guard``) and the round
waiting for decisions (``pending``). Not kept: what only the running process has (the files tools made
— a server has them stored with the message already —, the output spec, which the agent gives again,
the clock readings and the ReAct prompt memos).

The data is versioned (``"version"``: :data:`RUN_STATE_VERSION`). Version 1, written by loopwright
before ``RunState`` was serializable itself (approvals stored in a database, durable checkpoints), is
still read; a newer or unknown version is refused with :class:`RunStateVersionError`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from loopwright.agent._snapshot import dump_message, dump_usage, load_message, load_usage
from loopwright.agent.output import OutputSpec
from loopwright.agent.prompts import ScratchpadStep
from loopwright.agent.records import ToolCallRecord
from loopwright.errors import UserInputError
from loopwright.model.entities import PromptMessage, Usage, UserMessage
from loopwright.tools.base import ToolOutput
from loopwright.tools.engine import ToolInvokeMeta

RUN_STATE_VERSION = 2
"""The version ``to_dict`` writes. 2: calls waiting in a paused round keep their time cost."""
READABLE_VERSIONS = frozenset({1, 2})


class RunStateVersionError(UserInputError):
    """A run state this loopwright cannot read: written by a newer one, or not a run state at all."""


@dataclass(slots=True)
class PendingRound:
    """A round whose calls wait for decisions: its thought text, every call, its usage, and the ids
    of the calls that need a decision."""

    text: str
    calls: list[ToolCallRecord]
    usage: Usage
    awaiting: set[str]
    started: set[str] = field(default_factory=set)  # durable runs: non-idempotent calls that started


@dataclass(slots=True)
class RunState:
    """Everything one run changes. Strategies read it to build requests and append to it."""

    instruction: str
    query: str
    user_message: UserMessage
    history: list[PromptMessage]
    turn: list[PromptMessage] = field(default_factory=list)  # this turn's assistant/tool messages
    scratchpad: list[ScratchpadStep] = field(default_factory=list)  # ReAct only
    usage: Usage = field(default_factory=Usage)
    round: int = 0
    malformed_streak: int = 0
    repeated: str | None = None  # a tool the model kept calling with the same arguments
    calls: list[ToolCallRecord] = field(default_factory=list)  # every tool call that ran or was refused
    malformed: int = 0  # unreadable replies the model was asked to resend
    output_attempts: int = 0  # answers sent back for not following the schema
    pending: PendingRound | None = None  # a round waiting for approvals (a resumed run starts with it)
    # the run's time before this process took it up (seconds on the agent's clock); set by snapshots
    elapsed: float = 0.0
    # the repeated-call guard's memory: the last (tool, arguments) signatures, oldest first
    guard: list[tuple[str, str]] = field(default_factory=list)
    # --- this process's only (not serialized) ---
    files: list[ToolOutput] = field(default_factory=list)
    output: OutputSpec | None = None  # what the final answer must be (structured output)
    output_value: Any = None  # the answer's typed value, once it followed the schema
    output_errors: list[str] = field(default_factory=list)  # why the last answer did not
    started_at: float = 0.0  # on the agent's clock, set when the run starts
    first_token_at: float = 0.0  # 0.0: nothing streamed yet
    react_history: list[PromptMessage] | None = None  # ReAct: the history as its prompt shows it
    react_history_text: str | None = None  # ReAct on a completion model: the same, as one text
    last_prompt_tokens: int = 0  # the prompt of the run's last model call (a budget's estimate)

    def to_dict(self) -> dict[str, Any]:
        """The state as plain JSON data (see the module's docstring for what is kept)."""
        pending = self.pending
        return {
            "version": RUN_STATE_VERSION,
            "instruction": self.instruction,
            "query": self.query,
            "user_message": dump_message(self.user_message),
            "history": [dump_message(m) for m in self.history],
            "turn": [dump_message(m) for m in self.turn],
            "scratchpad": [dataclasses.asdict(s) for s in self.scratchpad],
            "usage": dump_usage(self.usage),
            "round": self.round,
            "malformed_streak": self.malformed_streak,
            "malformed": self.malformed,
            "repeated": self.repeated,
            "elapsed": self.elapsed,
            "calls": [_call_summary(c) for c in self.calls],
            "guard": [list(s) for s in self.guard],
            "output_attempts": self.output_attempts,
            "pending": None
            if pending is None  # a durable run between rounds (agent.durability)
            else {
                "text": pending.text,
                "usage": dump_usage(pending.usage),
                "awaiting": sorted(pending.awaiting),
                "started": sorted(pending.started),
                "calls": [_pending_call(c) for c in pending.calls],
            },
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Any) -> RunState:
        """The state ``to_dict`` wrote (this version or version 1); raises :class:`RunStateVersionError`
        for a newer or unknown version."""
        version = data.get("version") if isinstance(data, dict) else None
        if version not in READABLE_VERSIONS:
            readable = ", ".join(str(v) for v in sorted(READABLE_VERSIONS))
            raise RunStateVersionError(
                f"run state version {version!r} cannot be read here (this loopwright reads versions "
                f"{readable}); a newer loopwright may have written it"
            )
        return _load(data)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunState:
        return cls.from_dict(json.loads(text))

    def snapshot(self, elapsed: float, guard: list[tuple[str, str]]) -> RunState:
        """A copy detached from this running state (the run goes on changing it), as a process that
        reads it back from JSON would see it: ``elapsed`` and ``guard`` as of now."""
        data = self.to_dict()
        data["elapsed"], data["guard"] = elapsed, guard
        return _load(data)

    def detached(self) -> RunState:
        """A fresh copy to run from (a paused state may be resumed more than once)."""
        return _load(self.to_dict())


def _load(data: dict[str, Any]) -> RunState:
    user = load_message(data["user_message"])
    assert isinstance(user, UserMessage)
    state = RunState(
        instruction=data["instruction"],
        query=data["query"],
        user_message=user,
        history=[load_message(m) for m in data["history"]],
        turn=[load_message(m) for m in data["turn"]],
        scratchpad=[
            ScratchpadStep(
                s["thought"],
                [(a, o) for a, o in s["actions"]],
                s["observation"],
                s["final_answer"],
                s.get("failed", False),
            )
            for s in data["scratchpad"]
        ],
        usage=load_usage(data["usage"]),
        round=data["round"],
        malformed_streak=data["malformed_streak"],
        repeated=data["repeated"],
        malformed=data["malformed"],
        output_attempts=data.get("output_attempts", 0),
        elapsed=float(data["elapsed"]),
        guard=[(a, b) for a, b in data["guard"]],
        calls=[
            ToolCallRecord(c["id"], c["name"], {}, "", [], ToolInvokeMeta(c["time_cost"], c["error"], {}))
            for c in data["calls"]
        ],
    )
    p = data["pending"]
    if p is not None:
        state.pending = PendingRound(
            p["text"], [_load_pending_call(c) for c in p["calls"]], load_usage(p["usage"]), set(p["awaiting"])
        )
        state.pending.started = set(p.get("started", ()))  # version 1 before durable runs lacks it
    return state


def _load_pending_call(c: dict[str, Any]) -> ToolCallRecord:
    call = ToolCallRecord(c["id"], c["name"], c["arguments"], c["observation"], raw_arguments=c["raw"])
    if c["observation"] is not None:
        call.meta = ToolInvokeMeta(c.get("time_cost", 0.0), c["error"], {})  # version 1 kept no time
    return call


def _call_summary(c: ToolCallRecord) -> dict[str, Any]:
    meta = c.meta
    return {
        "id": c.id,
        "name": c.name,
        "time_cost": meta.time_cost if meta else 0.0,
        "error": meta.error if meta else None,
    }


def _pending_call(c: ToolCallRecord) -> dict[str, Any]:
    meta = c.meta
    return {
        "id": c.id,
        "name": c.name,
        "arguments": c.arguments,
        "raw": c.raw_arguments,
        "observation": c.observation,
        "error": meta.error if meta else None,
        "time_cost": meta.time_cost if meta else 0.0,
    }
