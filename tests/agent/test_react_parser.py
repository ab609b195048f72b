"""ReactParser in robust mode (the default): Dify's results where sensible, its quirks fixed.

Every table case is fed at every chunk size from 1 to its length (and whole), with and without
``record=True``; the merged output, the problems and the accounting log must not depend on it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.agent.react_parser import Action, ReactParser, is_final_answer

A = Action
GOLDEN = json.loads(
    (Path(__file__).parent / "fixtures" / "dify-parser-golden.json").read_text(encoding="utf-8")
)
GOLDEN_CASES: dict[str, dict[str, Any]] = {c["label"]: c for c in GOLDEN["cases"]}


def merge(events: list[Any]) -> list[Any]:
    out: list[Any] = []
    for ev in events:
        if isinstance(ev, str):
            assert ev, "empty text emitted"
            assert type(ev) is str
            if out and isinstance(out[-1], str):
                out[-1] += ev
                continue
        else:
            assert isinstance(ev, Action)
        out.append(ev)
    return out


def feed_in(text: str, sizes: list[int], record: bool = False) -> tuple[list[Any], ReactParser]:
    """Feeds ``text`` cutting it by the chunk lengths in ``sizes`` (used cyclically)."""
    parser = ReactParser(record=record)
    events: list[Any] = []
    k = 0
    i = 0
    while k < len(text):
        size = sizes[i % len(sizes)]
        events += parser.feed(text[k : k + size])
        k += size
        i += 1
    events += parser.flush()
    return merge(events), parser


def check_accounting(text: str, out: list[Any], parser: ReactParser) -> None:
    assert "".join(piece for _, piece in parser.log) == text
    assert {kind for kind, _ in parser.log} <= {"text", "consumed"}
    emitted = "".join(ev for ev in out if isinstance(ev, str))
    assert "".join(piece for kind, piece in parser.log if kind == "text") == emitted
    if any(isinstance(ev, Action) for ev in out):
        assert any(kind == "consumed" for kind, _ in parser.log)


def parse(text: str) -> tuple[list[Any], list[str]]:
    """The whole-string result, after checking it is the same at every chunk size."""
    whole, parser = feed_in(text, [max(len(text), 1)], record=True)
    check_accounting(text, whole, parser)
    for size in range(1, len(text) + 1):
        for record in (False, True):
            out, p = feed_in(text, [size], record)
            assert out == whole, f"chunk size {size}, record={record}"
            assert p.problems == parser.problems, f"chunk size {size}, record={record}"
            if record:
                check_accounting(text, out, p)
    return whole, parser.problems


# ---------------------------------------------------------------------------------------------
# Golden inputs: where robust mode agrees with Dify 1.12.1, and where it differs on purpose.

SAME_AS_DIFY = [
    "dify test: case 0",
    "dify test: code block with json",
    "dify test: code block with JSON",
    "dify test: list",
    "dify test: no code block",
    "dify test: no code block and json",  # same text; robust also reports a problem
    "quirk: ```python block, no action after it",
    "quirk: plain JSON without action keys",
    "ref: thought + fenced action",
    "ref: fenced json final answer",
    "ref: two inline actions on lines",
    "ref: two fenced blocks with middle text",
    "ref: tool/tool_input keys",
    "ref: upper-case labels and keys",
    "ref: inline code with json",
    "ref: xaction prefix",
    "ref: thoughtful",
    "ref: invalid json braces",
    "ref: fenced invalid",
    "ref: unclosed fence",
    "ref: unclosed object",
    "ref: action label alone",
    "ref: thought label alone",
    "ref: spaces",
    "ref: hello world",
    "ref: action/input keys",
    "ref: foo bar object",
    "ref: start json end",
    "ref: leading space labels",
    "ref: leading space upper labels",
    "ref: leading space thought",
    "ref: backtick noise",
    "ref: lone fence",
    "ref: lone open brace",
    "ref: json fence only",
    "ref: multiline thought then final",
    "ref: chinese text and action",
]

# label -> (robust output, why it differs from Dify)
DIFFERS_FROM_DIFY: dict[str, tuple[list[Any], str]] = {
    "quirk: brace inside JSON string": (
        [A("search", {"query": "a}b"})],
        "the bracket matcher knows JSON strings: no stray '}' text",
    ),
    "quirk: two inline actions back to back": (
        [A("a", "1"), A("b", "2")],
        "back-to-back objects are two actions, not garbled text",
    ),
    "quirk: ```python block then real action JSON": (
        [' show code first.\n```python\nprint("hi")\n```\n\n', A("search", {"query": "py"}), "\n"],
        "a non-JSON fence is text at its closing fence (Dify silently drops it here)",
    ),
    "quirk: 'action:' inside prose": (
        ["Consider this action: do X"],
        "labels are stripped only at the start of a line",
    ),
    "quirk: 'thought:' inside prose": (
        ["my thought: fine"],
        "labels are stripped only at the start of a line",
    ),
    "quirk: action_input is an int": ([A("calc", 3)], "any JSON value is an input; nothing raises"),
    "quirk: code block with a list of two actions": (
        [A("a", "1"), A("b", "2")],
        "a JSON list of actions is every action, in order (Dify raises AttributeError)",
    ),
    "ref: one fence two objects": (
        [A("a1", "x"), A("a2", "y")],
        "several JSON values in one fence are several actions",
    ),
    "ref: name/arguments keys": ([A("search", {"q": 1})], "name/arguments is understood"),
    "ref: bare final answer": (
        [A("Final Answer", "hello there")],
        "a line-leading Final Answer: is the answer",
    ),
    "ref: python fence then prose and inline action": (
        [" x\n\n```python\nprint(1)\n``` more text ", A("a", "1")],
        "the python fence closes as text and the later action still parses",
    ),
    "ref: lone closing brace": (["}"], "no duplicated brace"),
    "ref: list-wrapped action": (
        [A("lookup", "abc")],
        "a list of actions is consumed whole (no '[' and ']' text around the action)",
    ),
}


def golden_as_events(expected: list[Any]) -> list[Any]:
    """Golden actions as Action; a golden exception stays a dict (robust mode never raises)."""
    return [
        A(e["action"], e["action_input"]) if isinstance(e, dict) and "action" in e else e for e in expected
    ]


def test_golden_labels_all_classified() -> None:
    assert set(SAME_AS_DIFY) | set(DIFFERS_FROM_DIFY) | {"bench text"} == set(GOLDEN_CASES)
    assert not set(SAME_AS_DIFY) & set(DIFFERS_FROM_DIFY)


@pytest.mark.parametrize("label", SAME_AS_DIFY)
def test_golden_same_as_dify(label: str) -> None:
    case = GOLDEN_CASES[label]
    out, _ = parse(case["input"])
    assert out == golden_as_events(case["output_by_chunk_size"]["0"])


@pytest.mark.parametrize("label", sorted(DIFFERS_FROM_DIFY))
def test_golden_differs_on_purpose(label: str) -> None:
    case = GOLDEN_CASES[label]
    expected, _why = DIFFERS_FROM_DIFY[label]
    out, problems = parse(case["input"])
    assert out == expected
    assert out != golden_as_events(case["output_by_chunk_size"]["0"])
    assert problems == []


def test_golden_bench_text_every_chunk_size() -> None:
    case = GOLDEN_CASES["bench text"]
    text = case["input"]
    expected = golden_as_events(case["output_by_chunk_size"]["0"])
    whole, parser = feed_in(text, [len(text)], record=True)
    assert whole == expected
    check_accounting(text, whole, parser)
    for size in range(1, len(text) + 1):
        out, p = feed_in(text, [size])
        assert out == expected, f"chunk size {size}"
        assert p.problems == []
    for size in (1, 2, 3, 5, 16, 17, 100):
        out, p = feed_in(text, [size], record=True)
        assert out == expected
        check_accounting(text, out, p)


# ---------------------------------------------------------------------------------------------
# Own cases, by feature.  (input, expected merged output)

ROBUST_CASES: list[tuple[str, list[Any]]] = [
    # braces, brackets, fences and escaped quotes inside JSON strings
    (
        '{"action": "a", "action_input": {"q": "} and { and \\" and ```"}}',
        [A("a", {"q": '} and { and " and ```'})],
    ),
    (
        'Action:\n```json\n{"action": "Final Answer", "action_input": "use ``` and ] }"}\n```',
        ["\n", A("Final Answer", "use ``` and ] }")],
    ),
    ("{'action': 'a', 'action_input': 'x}y'}", [A("a", "x}y")]),
    ('{"action": "a", "action_input": "tab\\\\"} after', [A("a", "tab\\"), " after"]),
    # several actions, in order
    (
        'Thought: t\n```json\n{"action":"a","action_input":1}\n```\nthen {"action":"b","action_input":2}',
        [" t\n", A("a", 1), "\nthen ", A("b", 2)],
    ),
    (
        '```json\n{"action":"a","action_input":1},\n{"action":"b","action_input":2}\n```',
        [A("a", 1), A("b", 2)],
    ),
    (
        '[{"action": "a", "action_input": 1}, {"action": "b", "action_input": 2}] done',
        [A("a", 1), A("b", 2), " done"],
    ),
    ('{"action":"a","action_input":1}\n{"action":"b","action_input":2}', [A("a", 1), "\n", A("b", 2)]),
    # a non-JSON fence is text at its closing fence; later actions still parse
    (
        '```python\nx = {"a": 1}\n```\nAction: {"action": "a", "action_input": "1"}',
        ['```python\nx = {"a": 1}\n```\n ', A("a", "1")],
    ),
    ("```\nplain block\n```\nafter", ["```\nplain block\n```\nafter"]),
    ("Use ```code``` and `x` here", ["Use ```code``` and `x` here"]),
    # labels: only line-leading ones are stripped
    ("Thought: a\n   Thought: b", [" a\n    b"]),
    ("THOUGHT: x\nthought:y", [" x\ny"]),
    ("The Action: x", ["The Action: x"]),
    ("Thoughts: x", ["Thoughts: x"]),
    ("my thought: fine\nmy action: none", ["my thought: fine\nmy action: none"]),
    ("Thought:\tx", ["\tx"]),
    # the classic LangChain format
    (
        'Thought: need data\nAction: search\nAction Input: {"q": "x"}',
        [" need data\n", A("search", {"q": "x"})],
    ),
    ("Action: search\nAction Input: weather in Paris\n", [A("search", "weather in Paris")]),
    (
        "Action: search\nAction Input: weather in Paris\nObservation: sunny",
        [A("search", "weather in Paris"), "\nObservation: sunny"],
    ),
    (
        "Action: search\nAction Input: line one\nline two\nThought: more",
        [A("search", "line one\nline two"), "\n more"],
    ),
    ('Action: search\naction_input: "quoted"', [A("search", "quoted")]),
    ('Action: lookup\nAction Input:\n```json\n{"id": 7}\n```', [A("lookup", {"id": 7})]),
    ("Action: Final Answer\nAction Input: 42 apples", [A("Final Answer", "42 apples")]),
    ('Action: search\nAction Input: {"q": "x"} trailing', [A("search", {"q": "x"}), " trailing"]),
    ("Action: search\nAction Input: {'q': 'x',}", [A("search", {"q": "x"})]),
    ("Action: search\nAction Input:", [A("search", "")]),
    ("Action: search\n\n  Action Input: x", [A("search", "x")]),
    ("Action: search\nAction Input: {x | x > 0}", [A("search", "{x | x > 0}")]),
    ("  Action:   get_time  \nAction Input: now", ["  ", A("get_time", "now")]),
    # a bare Final Answer: everything after the label, to the end of the reply
    ("Final Answer: hello there", [A("Final Answer", "hello there")]),
    (
        "Thought: done\nFinal Answer:  The answer is 42.\n\nThanks!\n",
        [" done\n", A("Final Answer", "The answer is 42.\n\nThanks!")],
    ),
    ("final_answer: x", [A("Final Answer", "x")]),
    ("The Final Answer: is not a label here", ["The Final Answer: is not a label here"]),
    (
        'Final Answer: {"action": "a", "action_input": 1}',
        [A("Final Answer", '{"action": "a", "action_input": 1}')],
    ),
    ("Final Answer:", [A("Final Answer", "")]),
    # keys
    ('{"tool": "search", "tool_input": "abc"}', [A("search", "abc")]),
    ('{"Action": "Search", "Action Input": "q"}', [A("Search", "q")]),
    ('{"name": "search", "arguments": {"q": 1}}', [A("search", {"q": 1})]),
    ('{"tool_name": "search", "parameters": {"q": 1}}', [A("search", {"q": 1})]),
    ('{"tool_call": {"name": "search", "arguments": {"q": 1}}}', [A("search", {"q": 1})]),
    ('{"function_call": {"name": "f", "arguments": "{}"}}', [A("f", "{}")]),
    ('{"action": {"name": "f", "args": [1, 2]}}', [A("f", [1, 2])]),
    (
        '{"tool_calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}]}',
        [A("a", {}), A("b", {"x": 1})],
    ),
    ('{"action": "search", "thought": "x", "action_input": 1}', [A("search", 1)]),
    ('{"command": "ls", "input": "-l"}', [A("ls", "-l")]),
    ('{"action": " search ", "action_input": 1}', [A("search", 1)]),
    ('{"foo": "bar"}', ['{"foo": "bar"}']),
    ('{"name": "Alice", "age": 3}', ['{"name": "Alice", "age": 3}']),
    ("{}", ["{}"]),
    # near-JSON repaired when it looks like an action
    ('{"action": "a", "action_input": {"q": 1,},}', [A("a", {"q": 1})]),
    ("{'action': 'search', 'action_input': {'q': 'x'}}", [A("search", {"q": "x"})]),
    ('{action: "search", action_input: {q: "x"}}', [A("search", {"q": "x"})]),
    ("```json\n{'tool': 'calc', 'tool_input': '1+1',}\n```", [A("calc", "1+1")]),
    ("{x: 1,}", ["{x: 1,}"]),
    ('{"action": "a", "action_input": "x",} // ok', [A("a", "x"), " // ok"]),
    # any JSON input; nothing raises
    ('{"action": "calc", "action_input": 3}', [A("calc", 3)]),
    ('{"action": "a", "action_input": null}', [A("a", None)]),
    ('{"action": "a", "action_input": [1, {"b": true}]}', [A("a", [1, {"b": True}])]),
    # plain prose with brackets that cannot start JSON is streamed as is
    ("set {x | x > 0} and [1, 2] and [a](b)", ["set {x | x > 0} and [1, 2] and [a](b)"]),
    ("a { b\nc", ["a { b\nc"]),
    ("[ {", ["[ {"]),
    # a fence whose closing is missing but whose JSON is complete
    ('```json\n{"action": "a", "action_input": 1}\n', [A("a", 1)]),
    ("", []),
    ("\n\n", ["\n\n"]),
    ("\r\nAction: x\r\nAction Input: y\r\n", ["\r\n", A("x", "y")]),
]


@pytest.mark.parametrize(("text", "expected"), ROBUST_CASES, ids=[repr(t)[:60] for t, _ in ROBUST_CASES])
def test_robust_cases(text: str, expected: list[Any]) -> None:
    out, problems = parse(text)
    assert out == expected
    assert problems == []


# ---------------------------------------------------------------------------------------------
# problems: attempts at an action that cannot be read (the text is still emitted)

PROBLEM_CASES: list[tuple[str, list[Any], str]] = [
    (
        '{"action": "search", "action_input": {"q": "x"',
        ['{"action": "search", "action_input": {"q": "x"'],
        "incomplete",
    ),
    ('```json\n{"action": "a", "action_inp', ['```json\n{"action": "a", "action_inp'], "not closed"),
    ("```json\n{", ["```json\n{"], "not closed"),
    ('```json\n{"a": 1}', ['```json\n{"a": 1}'], "not closed"),
    ("Action:", [], '"Action:" label'),
    ("Action:\nI will now think.", ["\nI will now think."], '"Action:" label'),
    ("Action: search", [" search"], 'no "Action Input:"'),
    ("Action: search\nThought: hmm", [" search\n hmm"], 'no "Action Input:"'),
    ("Action: search {oops", [" search {oops"], 'no "Action Input:"'),
    ('{"action": "search"}', ['{"action": "search"}'], "has no input"),
    ('{"tool": "search", "other": 1}', ['{"tool": "search", "other": 1}'], "has no input"),
    ('{"action_input": "x"}', ['{"action_input": "x"}'], "no action name"),
    ('{"action": 3, "action_input": "x"}', ['{"action": 3, "action_input": "x"}'], "not a non-empty string"),
    (
        '{"action": ["a"], "action_input": "x"}',
        ['{"action": ["a"], "action_input": "x"}'],
        "not a non-empty string",
    ),
    ('{"tool_call": {"foo": 1}}', ['{"tool_call": {"foo": 1}}'], "not an action"),
    ("Action Input: x", ["Action Input: x"], '"Action Input:" line has no "Action:"'),
    (
        '```json\n{"action": "a", "action_input": 1}\nsome text\n```',
        ['```json\n{"action": "a", "action_input": 1}\nsome text\n```'],
        "holds text besides",
    ),
    (
        '```json\n{"action": "a", "action_input": 1}\n{"x": 1}\n```',
        ['```json\n{"action": "a", "action_input": 1}\n{"x": 1}\n```'],
        "mixes actions",
    ),
    ('[{"action": "a", "action_input": 1}, 5]', ['[{"action": "a", "action_input": 1}, 5]'], "mixes actions"),
    ('Action: search\nAction Input: {"q": "x"', [' search\nAction Input: {"q": "x"'], "incomplete JSON"),
    # a missing value is not repaired (json_repair would invent one)
    ('{"action": }', ['{"action": }'], "not valid JSON"),
    ('{"action": "a", "action_input": }', ['{"action": "a", "action_input": }'], "not valid JSON"),
    (
        'Action: {"action": "add", "action_input": {"a": 1, "b": }}',
        [' {"action": "add", "action_input": {"a": 1, "b": }}'],
        "not valid JSON",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected", "fragment"), PROBLEM_CASES, ids=[repr(t)[:60] for t, _, _ in PROBLEM_CASES]
)
def test_problems(text: str, expected: list[Any], fragment: str) -> None:
    out, problems = parse(text)
    assert out == expected
    assert len(problems) == 1, problems
    assert fragment in problems[0]


NO_PROBLEM_PROSE = [
    "Just a plain answer with {braces}, [brackets], `code` and ```\nfenced\n``` text.",
    'Here is JSON data:\n```json\n{"name": "Alice", "tags": ["a"]}\n```',
    "The thoughtful answer: yes. Consider this action: none.",
    'x {"a": 1} y',
    "```python\ndef action(tool):\n    return {'tool': tool}\n```",
    "a ` b `` c ```` d",
    "Observation: it rained\nSo: bring an umbrella.",
    "{not json at all}",
    "A line\n  Thoughtful people agree.\nActions speak louder.",
]


@pytest.mark.parametrize("text", NO_PROBLEM_PROSE)
def test_plain_prose_has_no_problems(text: str) -> None:
    out, problems = parse(text)
    assert problems == []
    assert all(isinstance(ev, str) for ev in out)
    assert "".join(out) == text


@pytest.mark.parametrize(
    "text",
    [
        'Action:\n```json\n{"action": "a", "action_input": 1}\n```',
        'Action: oops\nThought: retry\nAction: {"action": "a", "action_input": 1}',
        'Action: search\n```json\n{"action": "search", "action_input": "x"}\n```',
    ],
)
def test_soft_problems_are_dropped_when_an_action_follows(text: str) -> None:
    out, problems = parse(text)
    assert problems == []
    assert any(isinstance(ev, Action) for ev in out)


def test_soft_problem_after_the_last_action_is_kept() -> None:
    _, problems = parse('{"action": "a", "action_input": 1}\nAction: b')
    assert len(problems) == 1
    assert "'b'" in problems[0]


def test_problems_accumulate_over_the_reply() -> None:
    _, problems = parse('{"action": "a"}\n{"tool_call": {"x": 1}}\n```json\n{"action": "b"')
    assert len(problems) == 3


# ---------------------------------------------------------------------------------------------
# Streaming: text is emitted as soon as it cannot be part of a label or an action


def stream(parser: ReactParser, text: str) -> str:
    return "".join(ev for ch in text for ev in parser.feed(ch) if isinstance(ev, str))


def test_prose_streams_character_by_character() -> None:
    parser = ReactParser()
    text = "Hello, this is plain prose. It has no labels at all, only text!"
    got = []
    for ch in text:
        got.append("".join(ev for ev in parser.feed(ch) if isinstance(ev, str)))
    assert got == list(text)


def test_only_possible_labels_are_held_back() -> None:
    parser = ReactParser()
    assert stream(parser, "Thought: I am") == " I am"
    assert stream(parser, "\nTh") == "\n"  # "Th" may still become "Thought:"
    assert stream(parser, "e end") == "The end"
    assert stream(parser, "\n  Act") == "\n"
    assert stream(parser, "ually no") == "  Actually no"
    assert parser.flush() == []


def test_json_and_fences_are_held_until_they_close() -> None:
    parser = ReactParser()
    assert stream(parser, 'Hello {"act') == "Hello "
    assert parser.feed('ion": "a", "action_input": 1}') == [A("a", 1)]
    assert stream(parser, " then\n```python\nprint(1)\n") == " then\n"
    assert parser.feed("``") == []
    assert parser.feed("`") == ["```python\nprint(1)\n```"]
    assert parser.feed(" after") == [" after"]
    assert parser.flush() == []


def test_final_answer_resolves_at_flush() -> None:
    parser = ReactParser()
    assert stream(parser, "Thought: ok\nFinal Answer: forty") == " ok\n"
    assert parser.feed("-two\n") == []
    assert parser.flush() == [A("Final Answer", "forty-two")]


def test_flush_resets_for_a_new_reply() -> None:
    parser = ReactParser()
    out = parser.feed('Action: x\n{"action": ')
    assert merge(out + parser.flush()) == [' x\n{"action": ']
    assert parser.feed("Thought: again") == [" again"]
    assert parser.flush() == []


def test_feed_returns_plain_str_and_accepts_empty_deltas() -> None:
    parser = ReactParser()
    assert parser.feed("") == []
    out = parser.feed("abc")
    assert out == ["abc"]
    assert type(out[0]) is str
    assert parser.feed("") == []


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="mode"):
        ReactParser("strict")  # type: ignore[arg-type]


def test_log_is_only_kept_with_record() -> None:
    parser = ReactParser()
    parser.feed('Thought: x {"action": "a", "action_input": 1}')
    parser.flush()
    assert parser.log == []
    parser = ReactParser(record=True)
    parser.feed('Thought: x {"action": "a", "action_input": 1}')
    parser.flush()
    assert parser.log == [
        ("consumed", "Thought:"),
        ("text", " x "),
        ("consumed", '{"action": "a", "action_input": 1}'),
    ]


def test_action_is_a_frozen_slotted_value() -> None:
    a = A("search", {"q": 1})
    assert a == A("search", {"q": 1})
    assert a != A("search", {"q": 2})
    assert not hasattr(a, "__dict__")
    with pytest.raises(AttributeError):
        a.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Final Answer", True),
        ("final answer", True),
        ("final_answer", True),
        ("FINAL ANSWER", True),
        ("Final-Answer", True),
        ("  final   answer ", True),
        ("final__answer", True),
        ("Final\tAnswer", True),
        ("finalanswer", False),
        ("final answers", False),
        ("the final answer", False),
        ("search", False),
        ("", False),
    ],
)
def test_is_final_answer(name: str, expected: bool) -> None:
    assert is_final_answer(name) is expected


# ---------------------------------------------------------------------------------------------
# Fuzz: nothing raises, every character is accounted for, the chunking does not matter

TOKENS = [
    "`", "```", "```json\n", "{", "}", "[", "]", '"', "'", "\\", "\n", ":", " ", ",", "\t",
    "Action:", "Thought:", "Action Input:", "Final Answer:", "Observation:", "action", "thought",
    '"action"', '"action_input"', '"name"', '"arguments"', '"tool_call"', "input", ": ", "x", "1", "null",
]  # fmt: skip
RICH = "`{}[]\"':\n ,\\axtAT1"

texts = st.one_of(
    st.text(max_size=60),
    st.lists(st.one_of(st.sampled_from(TOKENS), st.text(alphabet=RICH, max_size=4)), max_size=30).map(
        "".join
    ),
)
chunkings = st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=8)


@settings(max_examples=400, deadline=None)
@given(text=texts, sizes=chunkings)
def test_fuzz_accounting_and_chunking(text: str, sizes: list[int]) -> None:
    reference, ref_parser = feed_in(text, [max(len(text), 1)], record=True)
    check_accounting(text, reference, ref_parser)
    for record in (False, True):
        out, parser = feed_in(text, sizes, record)
        assert out == reference
        assert parser.problems == ref_parser.problems
        if record:
            check_accounting(text, out, parser)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_ ", min_size=1, max_size=12).filter(
    lambda s: s.strip() == s
)
prose = st.text(alphabet="abcdefghijklmnopqrstuvwxyz .,!?", max_size=30)


@settings(max_examples=200, deadline=None)
@given(
    name=names,
    value=json_values,
    before=prose,
    after=prose,
    fenced=st.booleans(),
    sizes=chunkings,
)
def test_fuzz_embedded_action_is_read(
    name: str, value: Any, before: str, after: str, fenced: bool, sizes: list[int]
) -> None:
    blob = json.dumps({"action": name, "action_input": value}, ensure_ascii=False)
    if fenced:
        text = f"Thought: {before}\nAction:\n```json\n{blob}\n```\n{after}"
    else:
        text = f"Thought: {before}\nAction: {blob}\n{after}"
    out, parser = feed_in(text, sizes, record=True)
    check_accounting(text, out, parser)
    actions = [ev for ev in out if isinstance(ev, Action)]
    assert actions == [A(name, value)]
    assert parser.problems == []
