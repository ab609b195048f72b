"""The eval-set schema and the checks that need no model: answers, trajectories, output, limits."""

from __future__ import annotations

import pytest

from loopwright.evals.matchers import check_turn, states_number, trajectory_check
from loopwright.evals.results import ToolCall, TurnTrace
from loopwright.evals.schema import EvalSetError, Expect, TrajectoryExpect, parse_eval_set


def expect(data: dict[str, object]) -> Expect:
    return Expect.model_validate(data)


def verdicts(
    data: dict[str, object], trace: TurnTrace, schema: dict[str, object] | None = None
) -> dict[str, bool]:
    return {c.name: c.passed for c in check_turn(expect(data), trace, 0, schema)}


CALC = ToolCall(name="calculator", args={"expression": "17*23"}, output="391")
TIME = ToolCall(
    name="current_time", args={"timezone": "UTC"}, output="2026-11-27 23:33:11 Friday (UTC, UTC+0000)"
)


def trace(answer: str, *calls: ToolCall, **fields: object) -> TurnTrace:
    return TurnTrace.model_validate({"query": "q", "answer": answer, "tool_calls": list(calls), **fields})


def test_answer_contains_regex_equals_and_their_failures() -> None:
    t = trace("The product is 391.")
    assert verdicts({"answer": {"contains": "391"}}, t)["answer.contains"]
    assert not verdicts({"answer": {"contains": ["391", "392"]}}, t)["answer.contains"]
    assert verdicts({"answer": {"regex": r"\b391\b"}}, t)["answer.regex"]
    assert not verdicts({"answer": {"regex": r"^391"}}, t)["answer.regex"]
    assert verdicts({"answer": {"equals": "  The product is 391. "}}, t)["answer.equals"]
    assert not verdicts({"answer": {"equals": "the product is 391."}}, t)["answer.equals"]
    assert verdicts({"answer": {"equals": "the product is 391.", "ignore_case": True}}, t)["answer.equals"]
    assert not verdicts({"answer": {"not_contains": "391"}}, t)["answer.not_contains"]


def test_a_number_is_stated_whole_not_as_part_of_another() -> None:
    assert states_number("It is 6,912.", 6912)
    assert states_number("The answer: 12.7 cm", 12.7)
    assert states_number("about 391", 391.0)
    assert not states_number("It is 3910.", 391)
    assert not states_number("It is 1.391", 391)


def test_quotes_tool_needs_the_call_and_a_part_of_its_output() -> None:
    rule = {
        "answer": {"quotes_tool": {"tool": "current_time", "regex": r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})"}}
    }
    assert verdicts(rule, trace("It is 23:33 now.", TIME))["answer.quotes_tool"]
    assert not verdicts(rule, trace("It is late.", TIME))["answer.quotes_tool"]
    assert not verdicts(rule, trace("It is 23:33 now."))["answer.quotes_tool"]  # never called


@pytest.mark.parametrize(
    ("match", "tools", "calls", "passed"),
    [
        ("exact", ["calculator", "current_time"], [CALC, TIME], True),
        ("exact", ["current_time", "calculator"], [CALC, TIME], False),
        ("exact", ["calculator"], [CALC, TIME], False),
        ("in_order", ["calculator", "current_time"], [CALC, CALC, TIME], True),
        ("in_order", ["current_time", "calculator"], [CALC, TIME], False),
        ("any_order", ["current_time", "calculator"], [CALC, TIME], True),
        ("any_order", ["calculator", "calculator"], [CALC, TIME], False),  # one call cannot count twice
        ("exact", [], [], True),
        ("exact", [], [CALC], False),
    ],
)
def test_trajectory_modes(match: str, tools: list[str], calls: list[ToolCall], passed: bool) -> None:
    rule = TrajectoryExpect.model_validate({"match": match, "tools": tools})
    assert trajectory_check(rule, calls).passed is passed


def test_argument_and_output_matchers() -> None:
    def passes(tool: dict[str, object], call: ToolCall = CALC) -> bool:
        rule = TrajectoryExpect.model_validate({"match": "exact", "tools": [tool]})
        return trajectory_check(rule, [call]).passed

    assert passes({"name": "calculator", "args": {"expression": "17*23"}})
    assert not passes({"name": "calculator", "args": {"expression": "17 * 23"}})
    assert passes({"name": "calculator", "args": {"expression": {"regex": r"17\s*\*\s*23"}}})
    assert passes({"name": "calculator", "args": {"expression": {"contains": "23"}}})
    assert not passes({"name": "calculator", "args": {"missing": {"any": True}}})
    assert passes({"name": "calculator", "output": {"number": 391}})
    assert not passes({"name": "calculator", "output": {"number": 392}})
    assert passes({"name": "calculator", "args": {"n": 3}}, ToolCall(name="calculator", args={"n": "3"}))


def test_any_order_matches_each_expectation_to_a_call_of_its_own() -> None:
    # The first expectation fits both calls; a greedy pass would take the wrong one.
    rule = TrajectoryExpect.model_validate(
        {
            "match": "any_order",
            "tools": [
                {"name": "calculator"},
                {"name": "calculator", "args": {"expression": "1+1"}},
            ],
        }
    )
    one = ToolCall(name="calculator", args={"expression": "1+1"}, output="2")
    assert trajectory_check(rule, [one, CALC]).passed


def test_structured_output_against_the_apps_schema_or_the_sets() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert verdicts({"output": {}}, trace('{"n": 3}'), schema)["output"]
    assert not verdicts({"output": {}}, trace('{"n": "three"}'), schema)["output"]
    assert not verdicts({"output": {}}, trace("three"), None)["output"]
    assert verdicts({"output": {"schema": schema, "fields": {"n": 3}}}, trace('{"n": 3}'))["output"]
    assert not verdicts({"output": {"schema": schema, "fields": {"n": 4}}}, trace('{"n": 3}'))["output"]
    assert verdicts({"output": {"valid": False}}, trace("no json"), schema)["output"]


def test_limits_citations_and_errors() -> None:
    t = trace("ok", rounds=3, tokens=120, cost=0.002, seconds=1.5, citations=[{"document_name": "a.pdf"}])
    got = verdicts({"limits": {"rounds": 3, "tokens": 100, "cost": 0.01, "seconds": 1.0}}, t)
    assert got == {
        "error": True,
        "limits.rounds": True,
        "limits.tokens": False,
        "limits.cost": True,
        "limits.seconds": False,
    }
    assert verdicts({"citations": {"min": 1, "documents": ["a.pdf"]}}, t)["citations"]
    assert not verdicts({"citations": {"min": 2}}, t)["citations"]
    failed = trace("", error="the model failed")
    assert not verdicts({}, failed)["error"]
    assert verdicts({"error": True}, failed)["error"]


def test_a_set_file_is_checked_with_the_place_of_its_first_problem() -> None:
    good = parse_eval_set(
        "cases:\n  - name: one\n    query: hi\n    expect: {answer: {contains: hello}}\n"
        "  - name: two\n    turns: [{query: a}, {query: b, replies: [b!]}]\n"
    )
    assert [len(c.turns) for c in good.cases] == [1, 2]
    assert good.cases[1].turns[1].replies[0].text == "b!"
    assert not good.cases[0].replayable and not good.cases[1].replayable
    with pytest.raises(EvalSetError, match=r"cases\.0\.expect\.answer\.contain"):
        parse_eval_set("cases:\n  - name: one\n    query: hi\n    expect: {answer: {contain: hello}}\n")
    with pytest.raises(EvalSetError, match="regex does not compile"):
        parse_eval_set("cases:\n  - name: one\n    query: hi\n    expect: {answer: {regex: '('}}\n")
    with pytest.raises(EvalSetError, match="two cases are named 'one'"):
        parse_eval_set("cases:\n  - {name: one, query: a}\n  - {name: one, query: b}\n")
    with pytest.raises(EvalSetError, match="trajectory.match"):
        parse_eval_set("cases:\n  - {name: one, query: a, expect: {trajectory: {match: sometimes}}}\n")
    with pytest.raises(EvalSetError, match="expected a mapping"):
        parse_eval_set("- just a list\n")
