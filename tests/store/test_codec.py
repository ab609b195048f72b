from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright.store import codec


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("", []),
        (None, []),
        (";", []),
        ("a", ["a"]),
        ("a;b", ["a", "b"]),
        ("a;;b;", ["a", "b"]),
        ("a;a", ["a", "a"]),
    ],
)
def test_split_tool_names(text: str | None, names: list[str]) -> None:
    assert codec.split_tool_names(text) == names


@pytest.mark.parametrize(
    ("names", "text"), [([], ""), (["a"], "a"), (["a", "b"], "a;b"), (["a", "", "b"], "a;b")]
)
def test_join_tool_names(names: list[str], text: str) -> None:
    assert codec.join_tool_names(names) == text
    assert codec.split_tool_names(text) == [n for n in names if n]


@pytest.mark.parametrize(
    ("names", "keys"),
    [
        ([], []),
        (["a", "b"], ["a", "b"]),
        (["a", "a", "a"], ["a", "a_1", "a_2"]),
        (["a", "b", "a", "b"], ["a", "b", "a_1", "b_1"]),
        (["a", "a_1", "a"], ["a", "a_1", "a_2"]),  # a real "a_1" is never shadowed
    ],
)
def test_unique_tool_keys(names: list[str], keys: list[str]) -> None:
    assert codec.unique_tool_keys(names) == keys


def test_encode_per_tool_keeps_every_call() -> None:
    text = codec.encode_per_tool(["search", "search"], [{"q": "é"}, {"q": "b"}])
    assert "é" in text  # ensure_ascii=False
    assert json.loads(text) == {"search": {"q": "é"}, "search_1": {"q": "b"}}
    with pytest.raises(ValueError):
        codec.encode_per_tool(["a"], [])


def test_dump_json_falls_back_to_ascii() -> None:
    assert codec.dump_json({"k": "中文"}) == '{"k": "中文"}'
    lone = "\ud800"
    assert codec.dump_json({"k": lone}) == '{"k": "\\ud800"}'


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        ("a;b", '{"a": {"x": 1}, "b": {"y": 2}}', {"a": {"x": 1}, "b": {"y": 2}}),
        ("a;b", '{"a": {"x": 1}}', {"a": {"x": 1}, "b": {}}),
        ("a;b", "not json", {"a": {}, "b": {}}),
        ("a", "[1, 2]", {"a": {}}),
        ("a", None, {"a": {}}),
        ("a;a", '{"a": {"n": 1}, "a_1": {"n": 2}}', {"a": {"n": 1}, "a_1": {"n": 2}}),
        ("", '{"a": 1}', {}),
    ],
)
def test_decode_history_inputs(tool: str, tool_input: str | None, expected: dict[str, Any]) -> None:
    assert codec.decode_history_inputs(tool, tool_input) == expected


@pytest.mark.parametrize(
    ("tool", "observation", "expected"),
    [
        ("a;b", '{"a": "ra", "b": "rb"}', {"a": "ra", "b": "rb"}),
        ("a;b", "plain text", {"a": "plain text", "b": "plain text"}),
        ("a;b", '{"a": "ra"}', {"a": "ra", "b": '{"a": "ra"}'}),  # missing key → raw (as Dify)
        ("a", '{"a": {"n": 1}}', {"a": '{"n": 1}'}),
        ("a", "", {"a": ""}),
        ("a", None, {"a": ""}),
    ],
)
def test_decode_history_observations(tool: str, observation: str | None, expected: dict[str, str]) -> None:
    assert codec.decode_history_observations(tool, observation) == expected


def test_decode_json_object() -> None:
    assert codec.decode_json_object('{"a": 1}') == {"a": 1}
    assert codec.decode_json_object("[]") is None
    assert codec.decode_json_object("{") is None
    assert codec.decode_json_object("") is None


def test_tool_labels() -> None:
    assert codec.tool_labels("") == {}
    assert codec.tool_labels("a;b", {"b": {"en_US": "B", "zh_Hans": "乙"}}) == {
        "a": {"en_US": "a", "zh_Hans": "a"},
        "b": {"en_US": "B", "zh_Hans": "乙"},
    }
    assert codec.fallback_label("x") == {"en_US": "x", "zh_Hans": "x"}
