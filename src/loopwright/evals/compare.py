"""Two runs of one set side by side (two configuration versions, or two models): per case, whether
its verdict, its trajectory or its answer changed; overall, the pass rates, tokens, cost and time."""

from __future__ import annotations

from typing import Any, Literal

import pydantic

from loopwright.evals.results import CaseResult, Report

Status = Literal["same", "changed", "fixed", "broken", "added", "removed"]


class CaseChange(pydantic.BaseModel):
    name: str
    status: Status
    base_passed: bool | None
    candidate_passed: bool | None
    trajectory_changed: bool = False
    answer_changed: bool = False
    base_tools: list[str] = []
    candidate_tools: list[str] = []
    base_tokens: int = 0
    candidate_tokens: int = 0
    base_cost: float = 0.0
    candidate_cost: float = 0.0


class Comparison(pydantic.BaseModel):
    base: Report
    candidate: Report
    cases: list[CaseChange]

    @property
    def changed(self) -> list[CaseChange]:
        return [c for c in self.cases if c.status != "same"]

    def summary(self) -> dict[str, Any]:
        counts = {s: sum(c.status == s for c in self.cases) for s in ("same", "changed", "fixed", "broken")}
        return {"base": self.base.summary(), "candidate": self.candidate.summary(), **counts}

    def to_json(self) -> str:
        data = {
            "kind": "loopwright-eval-comparison",
            "base": self.base.label,
            "candidate": self.candidate.label,
            "summary": self.summary(),
            "cases": [c.model_dump(mode="json") for c in self.cases],
        }
        return pydantic.TypeAdapter(dict[str, Any]).dump_json(data, indent=2).decode()


def _calls(case: CaseResult) -> list[tuple[str, str]]:
    """The case's tool calls with their arguments, as comparable text."""
    return [(c.name, repr(c.args)) for t in case.turns for c in t.tool_calls]


def compare(base: Report, candidate: Report) -> Comparison:
    """How ``candidate`` differs from ``base``, case by case (matched by name, in the base's order)."""
    theirs = {c.name: c for c in candidate.cases}
    ours = {c.name for c in base.cases}
    changes = [_change(c, theirs.get(c.name)) for c in base.cases]
    changes += [_change(None, c) for c in candidate.cases if c.name not in ours]
    return Comparison(base=base, candidate=candidate, cases=changes)


def _change(a: CaseResult | None, b: CaseResult | None) -> CaseChange:
    if a is None or b is None:
        one = a or b
        assert one is not None
        return CaseChange(
            name=one.name,
            status="removed" if b is None else "added",
            base_passed=a.passed if a else None,
            candidate_passed=b.passed if b else None,
        )
    trajectory = _calls(a) != _calls(b)
    answer = [t.answer for t in a.turns] != [t.answer for t in b.turns]
    if a.passed and not b.passed:
        status: Status = "broken"
    elif b.passed and not a.passed:
        status = "fixed"
    else:
        status = "changed" if trajectory or answer else "same"
    return CaseChange(
        name=a.name,
        status=status,
        base_passed=a.passed,
        candidate_passed=b.passed,
        trajectory_changed=trajectory,
        answer_changed=answer,
        base_tools=[n for n, _ in _calls(a)],
        candidate_tools=[n for n, _ in _calls(b)],
        base_tokens=a.tokens,
        candidate_tokens=b.tokens,
        base_cost=a.cost,
        candidate_cost=b.cost,
    )
