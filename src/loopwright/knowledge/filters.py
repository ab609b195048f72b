"""Metadata filters on documents, as Dify's ``metadata_filtering_conditions``.

``{"logical_operator": "and" | "or", "conditions": [{"name", "comparison_operator", "value"}]}``.
Operators: ``contains``, ``not contains``, ``start with``, ``end with``, ``is``, ``is not``, ``empty``,
``not empty``, ``in``, ``not in``, ``=``, ``≠``, ``>``, ``<``, ``≥``, ``≤`` (``!=``, ``>=``, ``<=`` too),
``before``, ``after`` (numbers or ISO dates). ``document_name`` is always available as a field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from loopwright.knowledge.entities import Document


@dataclass(frozen=True, slots=True)
class Condition:
    name: str
    comparison_operator: str
    value: Any = None


@dataclass(frozen=True, slots=True)
class MetadataFilter:
    conditions: tuple[Condition, ...] = field(default_factory=tuple)
    logical_operator: Literal["and", "or"] = "and"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> MetadataFilter | None:
        if not data or not data.get("conditions"):
            return None
        conditions = []
        for c in data["conditions"]:
            op = str(c.get("comparison_operator", "is"))
            if op not in OPERATORS:
                raise ValueError(f"unknown comparison_operator {op!r}")
            conditions.append(Condition(str(c["name"]), op, c.get("value")))
        if str(data.get("logical_operator", "and")).lower() == "or":
            return cls(tuple(conditions), "or")
        return cls(tuple(conditions), "and")

    def matches(self, document: Document) -> bool:
        fields = {"document_name": document.name, **document.metadata}
        results = (OPERATORS[c.comparison_operator](fields.get(c.name), c.value) for c in self.conditions)
        return any(results) if self.logical_operator == "or" else all(results)

    def allowed(self, documents: Sequence[Document]) -> set[str]:
        return {d.id for d in documents if self.matches(d)}


def _text(v: Any) -> str:
    return "" if v is None else str(v)


def _number(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _compare(actual: Any, expected: Any, test: Callable[[Any, Any], bool]) -> bool:
    a, e = _number(actual), _number(expected)
    if a is not None and e is not None:
        return test(a, e)
    if actual is None or expected is None:
        return False
    return test(str(actual), str(expected))  # ISO dates compare as text


def _is_empty(v: Any) -> bool:
    return v is None or v == "" or v == [] or v == {}


def _values(expected: Any) -> list[str]:
    if isinstance(expected, list | tuple | set):
        return [str(x) for x in expected]
    return [s.strip() for s in _text(expected).split(",")]


OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "contains": lambda a, e: _text(e) in _text(a),
    "not contains": lambda a, e: _text(e) not in _text(a),
    "start with": lambda a, e: _text(a).startswith(_text(e)),
    "end with": lambda a, e: _text(a).endswith(_text(e)),
    "is": lambda a, e: _compare(a, e, lambda x, y: x == y),
    "is not": lambda a, e: not _compare(a, e, lambda x, y: x == y),
    "empty": lambda a, e: _is_empty(a),
    "not empty": lambda a, e: not _is_empty(a),
    "in": lambda a, e: _text(a) in _values(e),
    "not in": lambda a, e: _text(a) not in _values(e),
    "=": lambda a, e: _compare(a, e, lambda x, y: x == y),
    "≠": lambda a, e: not _compare(a, e, lambda x, y: x == y),
    "!=": lambda a, e: not _compare(a, e, lambda x, y: x == y),
    ">": lambda a, e: _compare(a, e, lambda x, y: x > y),
    "<": lambda a, e: _compare(a, e, lambda x, y: x < y),
    "≥": lambda a, e: _compare(a, e, lambda x, y: x >= y),
    ">=": lambda a, e: _compare(a, e, lambda x, y: x >= y),
    "≤": lambda a, e: _compare(a, e, lambda x, y: x <= y),
    "<=": lambda a, e: _compare(a, e, lambda x, y: x <= y),
    "before": lambda a, e: _compare(a, e, lambda x, y: x < y),
    "after": lambda a, e: _compare(a, e, lambda x, y: x > y),
}
