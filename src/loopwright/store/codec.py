"""Dify's stringly encodings of agent thoughts, in one place.

A ``MessageAgentThought`` row stores several tool calls of one round in plain text columns:

- ``tool``: the tool names joined with ``;`` (``"search;calculator"``);
- ``tool_input`` / ``observation`` / ``tool_meta_str``: a JSON object keyed by tool name
  (``{"search": {...}, "calculator": {...}}``), dumped with ``ensure_ascii=False``;
- ``tool_labels_str``: ``{name: {"en_US": label, "zh_Hans": label}}``.

Several calls of the same tool in one round would collapse in a dict keyed by name, so each repeat gets
an indexed key: ``name``, ``name_1``, ``name_2`` … (Dify's fix for issue #16220).

Nothing else in loopwright should split on ``;`` or build these dicts by hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "decode_history_inputs",
    "decode_history_observations",
    "decode_json_list",
    "decode_json_object",
    "dump_json",
    "encode_per_tool",
    "fallback_label",
    "join_tool_names",
    "round_inputs",
    "round_metas",
    "round_observations",
    "split_tool_names",
    "tool_labels",
    "unique_tool_keys",
]

TOOL_SEPARATOR = ";"


def join_tool_names(names: Iterable[str]) -> str:
    """``["a", "b"]`` → ``"a;b"``. Empty names are left out."""
    return TOOL_SEPARATOR.join(n for n in names if n)


def split_tool_names(tool: str | None) -> list[str]:
    """``"a;b"`` → ``["a", "b"]``; ``None``, ``""`` and ``";"`` give no names."""
    if not tool:
        return []
    return [n for n in tool.split(TOOL_SEPARATOR) if n]


def dump_json(value: Any) -> str:
    """JSON text as Dify writes it: ``ensure_ascii=False``, falling back to an ASCII dump when the
    value cannot be encoded that way (e.g. lone surrogates)."""
    try:
        text = json.dumps(value, ensure_ascii=False)
        text.encode("utf-8")
        return text
    except (UnicodeEncodeError, ValueError):
        return json.dumps(value, ensure_ascii=True)


def unique_tool_keys(names: Sequence[str]) -> list[str]:
    """Keys for the calls of one round so no call collapses: ``["a", "a", "b", "a"]`` →
    ``["a", "a_1", "b", "a_2"]``. A generated key never clashes with a real name in the round."""
    taken = set(names)
    seen: dict[str, int] = {}
    used: set[str] = set()
    keys: list[str] = []
    for name in names:
        if name not in used:
            key = name
        else:
            n = seen.get(name, 0)
            while True:
                n += 1
                key = f"{name}_{n}"
                if key not in used and key not in taken:
                    break
            seen[name] = n
        used.add(key)
        keys.append(key)
    return keys


def encode_per_tool(names: Sequence[str], values: Sequence[Any]) -> str:
    """JSON ``{key: value}`` for the calls of a round, keys from :func:`unique_tool_keys`."""
    if len(names) != len(values):
        raise ValueError("names and values differ in length")
    return dump_json(dict(zip(unique_tool_keys(names), values, strict=True)))


def round_inputs(names: Sequence[str], inputs: Sequence[Any]) -> str:
    """A round's ``tool_input``: its calls' arguments by tool, or ``""`` without calls."""
    return encode_per_tool(names, inputs) if names else ""


def round_observations(names: Sequence[str], observations: Sequence[str]) -> str:
    """A round's ``observation``: its calls' observations by tool, or ``""`` before any arrived."""
    return encode_per_tool(names, observations) if any(observations) else ""


def round_metas(names: Sequence[str], metas: Sequence[Any]) -> str:
    """A round's ``tool_meta_str``: its calls' metadata by tool, or ``"{}"`` without any."""
    return encode_per_tool(names, metas) if any(metas) else "{}"


def decode_json_object(text: str | None) -> dict[str, Any] | None:
    """The JSON object in ``text``, or ``None`` when it is empty, invalid or not an object."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def decode_json_list(text: str | None) -> list[Any]:
    """The JSON list in ``text`` (a thought's ``message_files``), or ``[]`` when it is empty, invalid
    or not a list."""
    if not text:
        return []
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return []
    return value if isinstance(value, list) else []


def decode_history_inputs(tool: str | None, tool_input: str | None) -> dict[str, Any]:
    """Per-tool inputs as history rebuilding reads them: invalid or missing JSON gives ``{}`` for
    every tool (as Dify's ``organize_agent_history``). Keys follow :func:`unique_tool_keys`."""
    keys = unique_tool_keys(split_tool_names(tool))
    decoded = decode_json_object(tool_input)
    if decoded is None:
        return {k: {} for k in keys}
    return {k: decoded.get(k, {}) for k in keys}


def decode_history_observations(tool: str | None, observation: str | None) -> dict[str, str]:
    """Per-tool observations as history rebuilding reads them: a non-JSON observation is the raw string
    for every tool, and so is a tool missing from the JSON (as Dify); non-string values are JSON-dumped."""
    keys = unique_tool_keys(split_tool_names(tool))
    decoded = decode_json_object(observation)
    if decoded is None:
        raw = observation or ""
        return {k: raw for k in keys}
    out: dict[str, str] = {}
    for k in keys:
        value = decoded.get(k, observation or "")
        out[k] = value if isinstance(value, str) else dump_json(value)
    return out


def fallback_label(name: str) -> dict[str, str]:
    """The label Dify uses when a tool has none: the name in both languages."""
    return {"en_US": name, "zh_Hans": name}


def tool_labels(tool: str | None, known: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, Any]:
    """``{name: label}`` for every name in ``tool``; a known label wins over :func:`fallback_label`."""
    known = known or {}
    return {n: dict(known[n]) if n in known else fallback_label(n) for n in split_tool_names(tool)}
