"""A paused run's state as plain JSON data, and back (see agent.approvals; a durable run's step
boundaries use it too: agent.durability).

Kept: the prompt so far (instruction, history, the user's message, this turn's messages, the ReAct
scratchpad), the counters the loop's limits read, the usage, a summary of the calls made (for the
metrics), the repeated-call guard's memory and the round waiting for decisions. Not kept: the files
tools made before the pause (a server has them stored with the message already).
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

from loopwright.agent._loop import PendingRound, RunState
from loopwright.agent.approvals import SNAPSHOT_VERSION
from loopwright.agent.events import ToolCallRecord
from loopwright.agent.prompts import ScratchpadStep
from loopwright.model.entities import (
    AssistantMessage,
    ContentPart,
    FilePart,
    ImagePart,
    PromptMessage,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from loopwright.tools.engine import ToolInvokeMeta

_PARTS: dict[str, type[Any]] = {"text": TextPart, "image": ImagePart, "file": FilePart}


def dump_state(state: RunState, elapsed: float, guard: list[tuple[str, str]]) -> dict[str, Any]:
    pending = state.pending
    return {
        "version": SNAPSHOT_VERSION,
        "instruction": state.instruction,
        "query": state.query,
        "user_message": dump_message(state.user_message),
        "history": [dump_message(m) for m in state.history],
        "turn": [dump_message(m) for m in state.turn],
        "scratchpad": [dataclasses.asdict(s) for s in state.scratchpad],
        "usage": dump_usage(state.usage),
        "round": state.round,
        "malformed_streak": state.malformed_streak,
        "malformed": state.malformed,
        "repeated": state.repeated,
        "elapsed": elapsed,
        "calls": [_call_summary(c) for c in state.calls],
        "guard": [list(s) for s in guard],
        "output_attempts": state.output_attempts,
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


def load_state(data: dict[str, Any]) -> tuple[RunState, float, list[tuple[str, str]]]:
    """The state, the run's time so far and the guard's memory."""
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
                [tuple(a) for a in s["actions"]],
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
    )
    state.calls = [
        ToolCallRecord(c["id"], c["name"], {}, "", [], ToolInvokeMeta(c["time_cost"], c["error"], {}))
        for c in data["calls"]
    ]
    p = data["pending"]
    if p is None:
        return state, float(data["elapsed"]), [(a, b) for a, b in data["guard"]]
    state.pending = PendingRound(
        p["text"],
        [
            ToolCallRecord(c["id"], c["name"], c["arguments"], c["observation"], raw_arguments=c["raw"])
            for c in p["calls"]
        ],
        load_usage(p["usage"]),
        set(p["awaiting"]),
        set(p.get("started", ())),
    )
    for c, raw in zip(state.pending.calls, p["calls"], strict=True):
        if raw["observation"] is not None:
            c.meta = ToolInvokeMeta(0.0, raw["error"], {})
    return state, float(data["elapsed"]), [(a, b) for a, b in data["guard"]]


def dump_message(m: PromptMessage) -> dict[str, Any]:
    if isinstance(m, UserMessage) and not isinstance(m.content, str):
        return {"role": "user", "content": [dataclasses.asdict(p) for p in m.content]}
    return dataclasses.asdict(m)


def load_message(d: dict[str, Any]) -> PromptMessage:
    role = d["role"]
    if role == "system":
        return SystemMessage(d["content"])
    if role == "user":
        content = d["content"]
        if isinstance(content, list):
            return UserMessage([_part(p) for p in content])
        return UserMessage(content)
    if role == "assistant":
        calls = [ToolCall(c["id"], c["name"], c["arguments"]) for c in d.get("tool_calls", ())]
        return AssistantMessage(d["content"], calls)
    return ToolMessage(d["content"], d["tool_call_id"], d.get("name", ""))


def dump_usage(u: Usage) -> dict[str, Any]:
    return {
        f.name: str(v) if isinstance(v, Decimal) else v
        for f in dataclasses.fields(u)
        for v in (getattr(u, f.name),)
    }


def load_usage(d: dict[str, Any]) -> Usage:
    defaults = Usage()
    values = {
        k: Decimal(v) if isinstance(getattr(defaults, k), Decimal) else v
        for k, v in d.items()
        if hasattr(defaults, k)
    }
    return Usage(**values)  # type: ignore[arg-type]


def _part(d: dict[str, Any]) -> ContentPart:
    cls = _PARTS[d["type"]]
    return cls(**{k: v for k, v in d.items() if k != "type"})  # type: ignore[no-any-return]


def _call_summary(c: ToolCallRecord) -> dict[str, Any]:
    meta = c.meta
    return {
        "id": c.id,
        "name": c.name,
        "time_cost": meta.time_cost if meta else 0.0,
        "error": meta.error if meta else None,
    }


def _pending_call(c: ToolCallRecord) -> dict[str, Any]:
    return {
        "id": c.id,
        "name": c.name,
        "arguments": c.arguments,
        "raw": c.raw_arguments,
        "observation": c.observation,
        "error": c.meta.error if c.meta else None,
    }
