"""Messages and usage as plain JSON data, and back: the pieces of a serialized run state
(agent.run_state) and of the app's saved stream state."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

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

_PARTS: dict[str, type[Any]] = {"text": TextPart, "image": ImagePart, "file": FilePart}


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
