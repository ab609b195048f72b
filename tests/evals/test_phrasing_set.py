"""The embedded model's forty phrasings as an eval set (bench/data/local_phrasings.eval.yaml): each
case passes exactly when the bench's rule says right — the expected tool called, and the answer
stating its result (the number, or the date, clock or weekday the clock tool returned)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.evals.matchers import check_turn
from loopwright.evals.results import ToolCall, TurnTrace
from loopwright.evals.schema import Case, load_eval_set

DATA = Path(__file__).resolve().parents[2] / "bench" / "data"
SET = load_eval_set(DATA / "local_phrasings.eval.yaml")
NOW = "2026-11-27 23:33:11 Friday (UTC, UTC+0000)"


def passes(case: Case, answer: str, *calls: ToolCall) -> bool:
    trace = TurnTrace(query=case.turns[0].query, answer=answer, tool_calls=list(calls))
    return all(c.passed for c in check_turn(case.expect, trace, 0, None))


def number(case: Case) -> float:
    assert case.expect.answer is not None and case.expect.answer.number is not None
    return case.expect.answer.number


def test_the_set_has_the_forty_phrasings_by_kind() -> None:
    kinds = [c.tags[0] for c in SET.cases]
    assert len(kinds) == 40 and kinds.count("calculator") == 32 and kinds.count("time") == 8


@pytest.mark.parametrize("case", [c for c in SET.cases if c.tags == ["calculator"]], ids=lambda c: c.name)
def test_a_calculator_case_needs_the_tool_and_its_number_in_the_answer(case: Case) -> None:
    value = number(case)
    shown = f"{value:g}"
    right = ToolCall(name="calculator", args={"expression": "x"}, output=shown)
    assert passes(case, f"The result is {shown}.", right)
    assert passes(case, f"The result is {value:,}.", right)  # thousands separators are fine
    assert not passes(case, f"The result is {shown}.")  # answered without the tool
    assert not passes(case, f"The result is {shown}.", ToolCall(name="calculator", output=f"{value + 1:g}"))
    assert not passes(case, "I computed it.", right)  # the answer does not state it
    assert not passes(case, f"The result is {shown}1.", right)  # a longer number is another number


@pytest.mark.parametrize("case", [c for c in SET.cases if c.tags == ["time"]], ids=lambda c: c.name)
def test_a_time_case_needs_the_clock_and_a_part_of_what_it_said(case: Case) -> None:
    clock = ToolCall(name="current_time", args={}, output=NOW)
    for answer in ("Today is 2026-11-27.", "It is 23:33.", "It is Friday."):
        assert passes(case, answer, clock)
    assert not passes(case, "It is 23:33.")
    assert not passes(case, "It is late.", clock)
    assert not passes(case, "It is 23:33.", ToolCall(name="current_time", output="unknown timezone"))


def test_the_held_out_set_has_forty_new_phrasings_of_the_same_kinds() -> None:
    heldout = load_eval_set(DATA / "local_phrasings_heldout.eval.yaml")
    kinds = [c.tags[0] for c in heldout.cases]
    assert len(kinds) == 40 and kinds.count("calculator") == 32 and kinds.count("time") == 8
    first = {c.turns[0].query for c in SET.cases}
    assert not first & {c.turns[0].query for c in heldout.cases}  # held out: none of the first set's
