"""DifyReactParser against the outputs of Dify 1.12.1's own parser.

The golden file holds, for 51 inputs, what ``CotAgentOutputParser.handle_react_stream_output``
yields (consecutive text merged, empty text dropped; an action as {action, action_input}; an
exception as {__error__: "Type: message"}).  Every input is re-fed at every chunk size from 1 to
its length (and whole): Dify's output does not depend on the chunking, and neither may ours.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopwright.agent.react_parser import Action, DifyParserError, DifyReactParser, ReactParser, new_parser

GOLDEN = json.loads(
    (Path(__file__).parent / "fixtures" / "dify-parser-golden.json").read_text(encoding="utf-8")
)
CASES: list[dict[str, Any]] = GOLDEN["cases"]


def to_jsonable(events: list[Any]) -> list[Any]:
    """Merges text, drops empty text, turns actions into Dify's ``to_dict()`` shape."""
    out: list[Any] = []
    for ev in events:
        if isinstance(ev, Action):
            out.append({"action": ev.name, "action_input": ev.input})
        elif isinstance(ev, dict):
            out.append(ev)
        elif ev:
            if out and isinstance(out[-1], str):
                out[-1] += ev
            else:
                out.append(ev)
    return out


def run_dify(text: str, size: int) -> list[Any]:
    """Feeds ``text`` in chunks of ``size`` (0 = whole); an error ends the list, as in the golden."""
    parser = DifyReactParser()
    events: list[Any] = []
    try:
        if size == 0:
            events += parser.feed(text)
        else:
            for k in range(0, len(text), size):
                events += parser.feed(text[k : k + size])
        events += parser.flush()
    except DifyParserError as e:
        events += e.events
        events.append({"__error__": str(e).splitlines()[0]})
    return to_jsonable(events)


def test_golden_file_shape() -> None:
    assert len(CASES) == 51
    for case in CASES:
        outs = case["output_by_chunk_size"]
        assert set(outs) == {"0", "1", "2", "3", "4", "7", "16"}
        assert case["same_for_all_chunk_sizes"] is True
        assert all(o == outs["0"] for o in outs.values())


@pytest.mark.parametrize("case", CASES, ids=[c["label"] for c in CASES])
def test_golden_at_the_recorded_chunk_sizes(case: dict[str, Any]) -> None:
    for size, expected in case["output_by_chunk_size"].items():
        assert run_dify(case["input"], int(size)) == expected, f"chunk size {size}"


@pytest.mark.parametrize("case", CASES, ids=[c["label"] for c in CASES])
def test_golden_at_every_chunk_size(case: dict[str, Any]) -> None:
    text = case["input"]
    expected = case["output_by_chunk_size"]["0"]
    for size in range(1, len(text) + 1):
        assert run_dify(text, size) == expected, f"chunk size {size}"


# ---------------------------------------------------------------------------------------------
# Dify 1.12.1's own unit test (reference §9.1): one character per chunk; the text results are
# concatenated and each action is appended as json.dumps(action.to_dict()).

ECHARTS = "```echarts\n {}\n```"
FINAL = {"action": "Final Answer", "action_input": ECHARTS}
INPUT_OBJ = '{"action": "Final Answer", "action_input": "' + ECHARTS + '"}'
EXPECTED_OUT = "Through: abc\n " + json.dumps(FINAL)

DIFY_UNIT_CASES = [
    ("Through: abc\nAction: ```" + INPUT_OBJ + "```", FINAL, EXPECTED_OUT),
    ("Through: abc\nAction: ```json\n" + INPUT_OBJ + "```", FINAL, EXPECTED_OUT),
    ("Through: abc\nAction: ```JSON\n" + INPUT_OBJ + "```", FINAL, EXPECTED_OUT),
    ("Through: abc\nAction: ```[" + INPUT_OBJ + "]```", FINAL, EXPECTED_OUT),
    ("Through: abc\nAction: " + INPUT_OBJ, FINAL, EXPECTED_OUT),
    ("Through: abc\nAction: efg", None, "Through: abc\n efg"),
]


@pytest.mark.parametrize(("text", "action", "expected"), DIFY_UNIT_CASES)
def test_dify_unit_table(text: str, action: dict[str, Any] | None, expected: str) -> None:
    parser = DifyReactParser()
    events: list[str | Action] = []
    for ch in text:
        events += parser.feed(ch)
    events += parser.flush()
    output = ""
    for ev in events:
        if isinstance(ev, Action):
            assert action is not None
            assert {"action": ev.name, "action_input": ev.input} == action
            output += json.dumps({"action": ev.name, "action_input": ev.input})
        else:
            output += ev
    assert output == expected


# ---------------------------------------------------------------------------------------------
# Newer Dify tests (reference §9.2) that also hold for 1.12.1


def test_json_split_across_three_chunks() -> None:
    parser = DifyReactParser()
    events = parser.feed('{"action": ') + parser.feed('"multi", ') + parser.feed('"input": "step"}')
    events += parser.flush()
    assert events == [Action("multi", "step")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello world", ["hello world"]),
        ('{"foo": "bar"}', ['{"foo": "bar"}']),
        ('x {"a":1} y', ['x {"a": 1} y']),  # parse_action re-serialises with json.dumps
        ('{"a": "北京"}', ['{"a": "\\u5317\\u4eac"}']),  # ... and json.dumps escapes non-ASCII
        ("", []),
        ("xaction: test", ["xaction: test"]),
        (" ACTION: something", ["  something"]),
        ("hello act", ["hello "]),  # a pending partial label is dropped at the end, as in Dify
    ],
)
def test_whole_string_cases(text: str, expected: list[Any]) -> None:
    parser = DifyReactParser()
    assert to_jsonable(parser.feed(text) + parser.flush()) == expected


def test_unclosed_python_fence_keeps_everything_for_the_end() -> None:
    parser = DifyReactParser()
    streamed = parser.feed('Thought: x\n```python\nprint(1)\n``` more {"action":"a","action_input":"1"}')
    assert streamed == [" x\n"]
    assert parser.flush() == ['```python\nprint(1)\n``` more {"action":"a","action_input":"1"}']


# ---------------------------------------------------------------------------------------------
# Where Dify raises


def test_errors_are_value_errors_named_after_difys_exception() -> None:
    assert issubclass(DifyParserError, ValueError)
    with pytest.raises(DifyParserError, match=r"^ValidationError: 2 validation errors for Action"):
        DifyReactParser().feed('{"action": "calc", "action_input": 3} ')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"action": 1, "action_input": "x"}', "ValidationError: 1 validation error for Action"),
        ('{"action": 1, "action_input": [1]}', "ValidationError: 3 validation errors for Action"),
        ('{"action": "a", "action_input": true}', "ValidationError: 2 validation errors for Action"),
        ("```[1]```", "AttributeError: 'int' object has no attribute 'items'"),
        ("```[]```", "AttributeError: 'list' object has no attribute 'items'"),
        ('```[{"a": 1}, {"b": 2}]```', "AttributeError: 'list' object has no attribute 'items'"),
    ],
)
def test_error_messages(text: str, message: str) -> None:
    assert run_dify(text, 0) == [{"__error__": message}]


def test_error_keeps_the_events_before_it() -> None:
    parser = DifyReactParser()
    with pytest.raises(DifyParserError) as info:
        parser.feed('hello {"action": "calc", "action_input": 3} ')
    assert info.value.events == ["hello "]


def test_error_at_flush() -> None:
    parser = DifyReactParser()
    assert parser.feed('{"action": "calc", "action_input": 3}') == []
    with pytest.raises(DifyParserError, match="^ValidationError"):
        parser.flush()


def test_dify_mode_reports_no_problems_and_keeps_no_log() -> None:
    parser = DifyReactParser(record=True)
    parser.feed("Action: {broken")
    parser.flush()
    assert parser.problems == []
    assert parser.log == []


def test_new_parser_chooses_the_class_by_mode() -> None:
    assert type(new_parser("dify")) is DifyReactParser
    assert type(new_parser()) is ReactParser
    with pytest.raises(ValueError, match="DifyReactParser"):
        ReactParser("dify")  # type: ignore[arg-type]
