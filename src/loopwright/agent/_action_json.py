"""JSON values to actions: the key rules that decide whether a decoded blob is an action, and
lenient decoding (strict JSON, then ``json_repair`` for near-JSON) that never raises."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Final

from json_repair import loads as _repair_loads


@dataclass(frozen=True, slots=True)
class Action:
    """An action read from a reply: a tool name and its input (any JSON value in robust mode;
    a ``dict`` or ``str`` in dify mode)."""

    name: str
    input: Any


_QUOTED = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'""", re.DOTALL)
_MISSING_VALUE = re.compile(r":\s*[,}\]]")
_FENCED = re.compile(r"```[\w+#.-]*\s*(.*?)\s*```", re.DOTALL)
_INPUT_KEYS: Final = frozenset(("arguments", "args", "parameters", "params"))
_NAME_KEYS: Final = frozenset(
    ("action", "tool", "name", "tool name", "action name", "function", "function name", "tool call")
)
NAME_LIMIT: Final = 200
FORMAT_HINT = 'Write it as {"action": "<tool name>", "action_input": <input>}.'


def snip(raw: str, limit: int = 120) -> str:
    s = raw.strip()
    return s if len(s) <= limit else s[:limit] + "…"


_DECODER = json.JSONDecoder(strict=False)  # json.loads(strict=False) would build one per call


def loads_lenient(raw: str, repair: bool) -> tuple[bool, Any]:
    """Strict JSON first; then, if allowed, ``json_repair`` (never raises)."""
    try:
        return True, _DECODER.decode(raw)
    except (ValueError, RecursionError):
        pass
    if not repair or _MISSING_VALUE.search(_QUOTED.sub('""', raw)):
        return False, None  # a key without a value: json_repair would invent one
    try:
        value = _repair_loads(raw)
    except Exception:
        return False, None
    # json_repair always returns something: keep it only if it is the kind of value the blob opens
    opener = raw.lstrip()[:1]
    if (opener == "{" and not isinstance(value, dict)) or (opener == "[" and not isinstance(value, list)):
        return False, None
    if value is None or value == "":
        return False, None
    return True, value


Converted = list[Action] | str | None  # actions, a problem description, or "not an attempt"


@functools.lru_cache(maxsize=512)
def _norm_key(key: str) -> str:
    return " ".join(key.lower().replace("_", " ").replace("-", " ").split())


def convert(obj: Any, depth: int = 0) -> Converted:
    if depth > 4:
        return None
    if isinstance(obj, list):
        return _convert_list(obj, depth)
    if isinstance(obj, dict):
        return _convert_dict(obj, depth)
    return None


def all_actions(results: list[Converted]) -> list[Action] | None:
    """The actions, in order, if every result is a list of actions; else None."""
    actions: list[Action] = []
    for r in results:
        if not isinstance(r, list):
            return None
        actions.extend(r)
    return actions


def _convert_list(items: list[Any], depth: int) -> Converted:
    if not items:
        return None
    results = [convert(x, depth + 1) for x in items]
    actions = all_actions(results)
    if actions is not None:
        return actions
    for r in results:
        if isinstance(r, str):
            return r
    if any(isinstance(r, list) for r in results):
        return f"The JSON list {show(items)} mixes actions with other values."
    return None


def _unwrap(d: dict[str, Any], depth: int) -> Converted:
    """A one-key object whose value is an action object (or a list of them)."""
    ((key, value),) = d.items()
    if not isinstance(value, dict | list) or not value:
        return None
    inner = convert(value, depth + 1)
    if isinstance(inner, list):
        return inner
    norm = _norm_key(key)
    if "input" not in norm and any(w in norm for w in ("tool", "function", "action", "call")):
        return inner or f"The object under {key!r} is not an action. {FORMAT_HINT}"
    return None


def show(value: Any) -> str:
    return snip(json.dumps(value, ensure_ascii=False))


_MISSING: Any = object()


def _convert_dict(d: dict[str, Any], depth: int) -> Converted:
    if len(d) == 1:
        wrapped = _unwrap(d, depth)
        if wrapped is not None:
            return wrapped
    name, value, strong, input_key = _name_and_input(d)
    if name is _MISSING:
        if value is not _MISSING and ("action" in input_key or "tool" in input_key):
            return f"The action {show(d)} has an input but no action name. {FORMAT_HINT}"
        return None
    if value is _MISSING:
        return f"The action {show(d)} has no input. {FORMAT_HINT}" if strong else None
    if not isinstance(name, str) or not name.strip():
        return f"The action name in {show(d)} is not a non-empty string. {FORMAT_HINT}"
    return [Action(name.strip(), value)]


def _name_and_input(d: dict[str, Any]) -> tuple[Any, Any, bool, str]:
    """The action name and input found by key (``_MISSING`` when absent), whether the name came from
    a key that clearly means an action (not a bare ``name``), and the input's normalised key."""
    name: Any = _MISSING
    value: Any = _MISSING
    strong = False
    input_key = ""
    others: list[Any] = []
    for key, item in d.items():
        norm = _norm_key(key)
        if "input" in norm or norm in _INPUT_KEYS:
            value, input_key = item, norm
        elif norm in _NAME_KEYS:
            name = item
            strong = strong or norm != "name"
        else:
            others.append(item)
    if name is _MISSING and value is not _MISSING and len(others) == 1:
        name = others[0]  # Dify: any other key names the action
        strong = True
    return name, value, strong, input_key


def plain_input(text: str) -> Any:
    """The value of a classic ``Action Input:`` that is not an inline JSON object."""
    t = text.strip()
    m = _FENCED.fullmatch(t)
    if m:
        t = m.group(1)
    if t[:1] in ("{", "["):
        ok, value = loads_lenient(t, repair=True)
        if ok:
            return value
    elif t[:1] == '"':
        ok, value = loads_lenient(t, repair=False)
        if ok:
            return value
    return t
