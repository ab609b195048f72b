"""What a run of an eval set produced: each turn's trace (answer, tool calls, rounds, usage), each
check's verdict, each case's outcome, and the report over the set (what ``--json`` writes)."""

from __future__ import annotations

from typing import Any

import pydantic

REPORT_KIND = "loopwright-eval-report"


class ToolCall(pydantic.BaseModel):
    name: str
    args: Any = None  # the arguments as the model gave them (an object, or text it could not parse)
    output: str = ""
    error: str | None = None


class TurnTrace(pydantic.BaseModel):
    """One message as it ran."""

    query: str
    answer: str = ""
    tool_calls: list[ToolCall] = []
    rounds: int = 0
    tokens: int = 0
    cost: float = 0.0
    currency: str = "USD"
    seconds: float = 0.0
    error: str | None = None
    citations: list[dict[str, Any]] = []
    message_id: str | None = None

    @property
    def tools(self) -> list[str]:
        return [c.name for c in self.tool_calls]


class Check(pydantic.BaseModel):
    """One expectation's verdict; ``score`` for the graded ones (similarity, judge)."""

    name: str  # e.g. "answer.contains", "trajectory", "limits.rounds"
    passed: bool
    detail: str = ""
    turn: int = 0
    score: float | None = None


class CaseResult(pydantic.BaseModel):
    name: str
    passed: bool
    checks: list[Check] = []
    turns: list[TurnTrace] = []
    error: str | None = None  # the case could not run (not a turn's own error)
    seconds: float = 0.0
    # What each turn was expected to do, as written ({"turn": n, ...}; shown beside the trajectory)
    expected: list[dict[str, Any]] = []

    @property
    def tokens(self) -> int:
        return sum(t.tokens for t in self.turns)

    @property
    def cost(self) -> float:
        return sum(t.cost for t in self.turns)

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]


class Report(pydantic.BaseModel):
    kind: str = REPORT_KIND
    set: str
    app: str
    version: int | None = None
    model: str | None = None
    replay: bool = False
    threshold: float = 1.0
    seconds: float = 0.0
    cases: list[CaseResult] = []

    @property
    def passed(self) -> int:
        return sum(c.passed for c in self.cases)

    @property
    def pass_rate(self) -> float:
        return self.passed / len(self.cases) if self.cases else 0.0

    @property
    def ok(self) -> bool:
        """Whether the set passes: its share of passing cases is at least the threshold."""
        return self.pass_rate >= self.threshold - 1e-9

    @property
    def tokens(self) -> int:
        return sum(c.tokens for c in self.cases)

    @property
    def cost(self) -> float:
        return sum(c.cost for c in self.cases)

    @property
    def label(self) -> str:
        """What ran: the app, its version and model (the heading of a comparison's side)."""
        parts = [self.app]
        if self.version is not None:
            parts.append(f"v{self.version}")
        if self.model:
            parts.append(self.model)
        if self.replay:
            parts.append("replay")
        return " · ".join(parts)

    def summary(self) -> dict[str, Any]:
        return {
            "cases": len(self.cases),
            "passed": self.passed,
            "pass_rate": round(self.pass_rate, 4),
            "ok": self.ok,
            "tokens": self.tokens,
            "cost": round(self.cost, 7),
            "seconds": round(self.seconds, 3),
        }

    def to_json(self) -> str:
        data = self.model_dump(mode="json")
        data["summary"] = self.summary()
        return pydantic.TypeAdapter(dict[str, Any]).dump_json(data, indent=2).decode()
