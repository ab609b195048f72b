"""The checks that need no model: the answer (contains, regex, equals, a number, a tool's output
quoted), the tool trajectory (exact, in order, any order, with argument matchers), structured output,
citations and limits. Each returns :class:`~loopwright.evals.results.Check` verdicts; the graded checks
(semantic similarity, an LLM judge) are :mod:`loopwright.evals.judges`'."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from loopwright.evals.results import Check, ToolCall, TurnTrace
from loopwright.evals.schema import (
    AnswerExpect,
    CitationsExpect,
    Expect,
    LimitsExpect,
    OutputExpect,
    QuotesTool,
    ToolExpect,
    TrajectoryExpect,
    ValueMatch,
)

SHOWN = 120  # characters of an answer quoted in a verdict


def check_turn(
    expect: Expect, trace: TurnTrace, turn: int, output_schema: dict[str, Any] | None
) -> list[Check]:
    """Every check of ``expect`` that needs no model, on one turn's trace."""
    checks = [error_check(expect, trace)]
    if expect.answer is not None:
        checks += answer_checks(expect.answer, trace)
    if expect.trajectory is not None:
        checks.append(trajectory_check(expect.trajectory, trace.tool_calls))
    if expect.output is not None:
        checks.append(output_check(expect.output, trace.answer, output_schema))
    if expect.citations is not None:
        checks.append(citations_check(expect.citations, trace.citations))
    if expect.limits is not None:
        checks += limit_checks(expect.limits, trace)
    for check in checks:
        check.turn = turn
    return checks


def error_check(expect: Expect, trace: TurnTrace) -> Check:
    if expect.error:
        return Check(
            name="error", passed=trace.error is not None, detail=trace.error or "the turn did not fail"
        )
    return Check(name="error", passed=trace.error is None, detail=trace.error or "")


# --- the answer ----------------------------------------------------------------------------------


def answer_checks(expect: AnswerExpect, trace: TurnTrace) -> list[Check]:
    answer = trace.answer
    folded = answer.casefold() if expect.ignore_case else answer

    def fold(text: str) -> str:
        return text.casefold() if expect.ignore_case else text

    checks: list[Check] = []
    for text in expect.contains or ():
        checks.append(Check(name="answer.contains", passed=fold(text) in folded, detail=_quote(text, answer)))
    for text in expect.not_contains or ():
        checks.append(
            Check(name="answer.not_contains", passed=fold(text) not in folded, detail=_quote(text, answer))
        )
    if expect.regex is not None:
        flags = re.IGNORECASE if expect.ignore_case else 0
        found = re.search(expect.regex, answer, flags) is not None
        checks.append(Check(name="answer.regex", passed=found, detail=_quote(expect.regex, answer)))
    if expect.equals is not None:
        same = fold(expect.equals.strip()) == folded.strip()
        checks.append(Check(name="answer.equals", passed=same, detail=_quote(expect.equals, answer)))
    if expect.number is not None:
        checks.append(
            Check(
                name="answer.number",
                passed=states_number(answer, expect.number),
                detail=_quote(f"{expect.number:g}", answer),
            )
        )
    if expect.quotes_tool is not None:
        checks.append(quotes_tool_check(expect.quotes_tool, trace))
    return checks


def _quote(expected: str, answer: str) -> str:
    shown = answer if len(answer) <= SHOWN else answer[:SHOWN] + "…"
    return f"expected {expected!r}; answer {shown!r}"


def states_number(answer: str, value: float) -> bool:
    """Whether the answer contains the number: as ``%g`` writes it, as Python does, or as an integer
    when it is one (``391.0`` may read ``391``); thousands separators are ignored, and a number that
    merely starts with its digits (``3910``) does not count."""
    forms = {f"{value:g}", str(value)}
    if float(value).is_integer():
        forms.add(str(int(value)))
    text = answer.replace(",", "")
    return any(re.search(rf"(?<![\d.]){re.escape(form)}(?![\d])", text) for form in forms)


def quotes_tool_check(expect: QuotesTool, trace: TurnTrace) -> Check:
    """Whether the answer repeats a part of a call's output (see :class:`QuotesTool`)."""
    outputs = [c.output for c in trace.tool_calls if c.name == expect.tool]
    if not outputs:
        return Check(name="answer.quotes_tool", passed=False, detail=f"{expect.tool} was not called")
    for output in outputs:
        for part in _quoted_parts(expect.regex, output):
            if part and part in trace.answer:
                return Check(name="answer.quotes_tool", passed=True, detail=f"quotes {part!r}")
    return Check(
        name="answer.quotes_tool",
        passed=False,
        detail=f"the answer repeats nothing of {expect.tool}'s output {outputs[0][:SHOWN]!r}",
    )


def _quoted_parts(regex: str | None, output: str) -> list[str]:
    if regex is None:
        return [output.strip()]
    found = re.search(regex, output)
    if found is None:
        return []
    return [g for g in found.groups() if g] or [found.group(0)]


# --- the trajectory ------------------------------------------------------------------------------


def trajectory_check(expect: TrajectoryExpect, calls: Sequence[ToolCall]) -> Check:
    wanted = expect.tools
    if expect.match == "exact":
        passed = len(calls) == len(wanted) and all(
            call_matches(w, c) for w, c in zip(wanted, calls, strict=True)
        )
    elif expect.match == "in_order":
        passed = _in_order(wanted, calls)
    else:
        passed = _any_order(wanted, calls)
    shown = ", ".join(c.name for c in calls) or "no tool calls"
    expected = ", ".join(w.name for w in wanted) or "no tool calls"
    return Check(
        name=f"trajectory.{expect.match}",
        passed=passed,
        detail=f"expected {expected}; called {shown}",
    )


def call_matches(expect: ToolExpect, call: ToolCall) -> bool:
    """Whether one call is the expected one: its name, the arguments named, its output."""
    if call.name != expect.name:
        return False
    if expect.args:
        args = call.args if isinstance(call.args, Mapping) else {}
        for key, matcher in expect.args.items():
            if key not in args or not value_matches(matcher, args[key]):
                return False
    return expect.output is None or value_matches(expect.output, call.output)


def value_matches(matcher: ValueMatch, value: Any) -> bool:
    """Whether ``value`` passes every key of ``matcher`` that is given."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    given = matcher.model_fields_set
    if "equals" in given and not _equal(matcher.equals, value):
        return False
    if matcher.contains is not None and matcher.contains not in text:
        return False
    if matcher.regex is not None and re.search(matcher.regex, text) is None:
        return False
    return matcher.number is None or _number_equal(value, matcher.number)


def _equal(expected: Any, value: Any) -> bool:
    if expected == value:
        return True
    # A value the model wrote as text may stand for the number or flag the set names.
    return isinstance(value, str) and not isinstance(expected, str) and value.strip() == json.dumps(expected)


def _number_equal(value: Any, number: float) -> bool:
    try:
        found = float(value)
    except (TypeError, ValueError):
        return False
    return math.isclose(found, number, rel_tol=1e-6)


def _in_order(wanted: Sequence[ToolExpect], calls: Sequence[ToolCall]) -> bool:
    at = 0
    for call in calls:
        if at < len(wanted) and call_matches(wanted[at], call):
            at += 1
    return at == len(wanted)


def _any_order(wanted: Sequence[ToolExpect], calls: Sequence[ToolCall]) -> bool:
    """Each expected call matched by a call of its own (a bipartite matching, so one call that fits
    two expectations is not taken by the wrong one)."""
    owner: dict[int, int] = {}  # call index → expectation index

    def place(w: int, seen: set[int]) -> bool:
        for c, call in enumerate(calls):
            if c in seen or not call_matches(wanted[w], call):
                continue
            seen.add(c)
            if c not in owner or place(owner[c], seen):
                owner[c] = w
                return True
        return False

    return all(place(w, set()) for w in range(len(wanted)))


# --- structured output, citations, limits --------------------------------------------------------


def output_check(expect: OutputExpect, answer: str, app_schema: dict[str, Any] | None) -> Check:
    from loopwright.agent.output import output_spec

    schema = expect.json_schema or app_schema
    if schema is None:
        try:
            value, errors = json.loads(answer), []
        except json.JSONDecodeError as exc:
            value, errors = None, [f"the answer is not valid JSON ({exc.msg})"]
    else:
        value, _text, errors = output_spec(schema).check(answer)
    valid = not errors
    if valid and expect.fields:
        wrong = [k for k, v in expect.fields.items() if not isinstance(value, dict) or value.get(k) != v]
        if wrong:
            return Check(name="output", passed=False, detail=f"fields differ: {', '.join(wrong)}")
    passed = valid == expect.valid
    return Check(name="output", passed=passed, detail="; ".join(errors) or "valid")


def citations_check(expect: CitationsExpect, citations: Sequence[Mapping[str, Any]]) -> Check:
    names = {str(c.get("document_name", "")) for c in citations}
    missing = [d for d in expect.documents if d not in names]
    passed = len(citations) >= expect.min and not missing
    detail = f"{len(citations)} citations" + (f"; none from {', '.join(missing)}" if missing else "")
    return Check(name="citations", passed=passed, detail=detail)


def limit_checks(expect: LimitsExpect, trace: TurnTrace) -> list[Check]:
    checks = []
    for name, most, used in (
        ("rounds", expect.rounds, trace.rounds),
        ("tokens", expect.tokens, trace.tokens),
        ("cost", expect.cost, trace.cost),
        ("seconds", expect.seconds, trace.seconds),
    ):
        if most is not None:
            checks.append(
                Check(name=f"limits.{name}", passed=used <= most, detail=f"{used:g} of at most {most:g}")
            )
    return checks
