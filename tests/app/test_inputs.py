"""The input form checks and conversions, as Dify's (``BaseAppGenerator._validate_inputs``)."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright.app.config import InputField
from loopwright.app.inputs import InputError, validate_inputs

REMOTE = {"transfer_method": "remote_url", "url": "https://x/a.png"}


def field(kind: str, **spec: Any) -> InputField:
    return InputField.model_validate({"variable": "v", "label": "Label", "type": kind, **spec})


@pytest.mark.parametrize(
    ("f", "given", "expected"),
    [
        (field("text-input"), "a\x00b", "ab"),
        (field("text-input"), "", ""),  # optional or required: only None is missing
        (field("text-input", required=True), "", ""),
        (field("text-input", default="d"), None, "d"),
        (field("text-input"), None, None),  # left out
        (field("number"), "3", 3),
        (field("number"), "2.5", 2.5),
        (field("number"), "  ", None),
        (field("number"), 7, 7),
        (field("checkbox"), "Yes", True),
        (field("checkbox"), " off ", False),
        (field("checkbox"), 1, True),
        (field("checkbox"), 0.0, False),
        (field("checkbox"), "maybe", "maybe"),  # kept as it came, as Dify
        (field("checkbox"), True, True),
        (field("select", options=["a", "b"]), "b", "b"),
        (field("json_object"), {"k": [1]}, {"k": [1]}),
        (field("json_object"), "", ""),
        (field("file"), REMOTE, REMOTE),
        (field("file"), "", None),  # an optional file's empty placeholder
        (field("file-list", max_length=2), [REMOTE], [REMOTE]),
    ],
)
def test_accepted_values(f: InputField, given: Any, expected: Any) -> None:
    out = validate_inputs([f], {"v": given, "other": "dropped"})
    assert out == {"v": expected}  # an empty optional value is null, as Dify stores it


@pytest.mark.parametrize(
    ("f", "given", "message"),
    [
        (field("text-input", required=True), None, "v is required in input form"),
        (field("paragraph"), 3, "(type 'paragraph') v in input form must be a string"),
        (field("select", options=["a"]), 1, "(type 'select') v in input form must be a string"),
        (field("select", options=["a"]), "z", "v in input form must be one of the following: ['a']"),
        (field("text-input", max_length=2), "abc", "v in input form must be less than 2 characters"),
        (field("number"), "x", "v in input form must be a valid number"),
        (field("number"), [1], "v in input form must be a valid number"),
        (field("file"), "not a file", "v in input form must be a file"),
        (field("file-list"), [{"a": 1}, "b"], "v in input form must be a list of files"),
        (field("file-list", max_length=1), [{}, {}], "v in input form must be less than 1 files"),
        (field("json_object"), [1], "v in input form must be a dict"),
        (field("checkbox"), {"x": 1}, "Invalid input type for ['v']"),
        (field("checkbox"), [{"x": 1}], "Invalid input type for ['v']"),
    ],
)
def test_refused_values(f: InputField, given: Any, message: str) -> None:
    with pytest.raises(InputError) as caught:
        validate_inputs([f], {"v": given})
    assert str(caught.value) == message
