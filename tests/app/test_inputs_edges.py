"""The input form's checks where they meet: a default that goes through the same checks as a given
value, the order in which a field's checks speak, and values of one field type given to another."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright.app.config import InputField
from loopwright.app.inputs import InputError, _field_value, validate_inputs

FILE = {"transfer_method": "remote_url", "url": "https://x/a.png"}
OK = object()  # the value comes back as it was given


def field(kind: str, **spec: Any) -> InputField:
    return InputField.model_validate({"variable": "v", "type": kind, **spec})


@pytest.mark.parametrize(
    ("f", "given", "expected"),
    [
        # Defaults are checked and converted like a given value.
        (field("number", default="4"), None, 4),
        (field("checkbox", default="on"), None, True),
        (field("select", options=["a"], default="a"), None, "a"),
        (field("number", default=None), None, None),
        # Only None is missing; a falsy value is a value.
        (field("number", required=True), 0, 0),
        (field("checkbox", required=True), False, False),
        (field("number"), True, OK),  # a bool is an int
        (field("number"), 1e3, OK),
        (field("number"), "-3", -3),
        # Lengths: at the limit passes; no limit or 0 means none; select has no limit.
        (field("text-input", max_length=3), "abc", "abc"),
        (field("paragraph", max_length=0), "a" * 50, OK),
        (field("select", options=["long"], max_length=1), "long", "long"),
        (field("file-list", max_length=0), [{}, {}], OK),
        (field("file-list"), [], []),
        # Empty placeholders: only an optional file or file list's "" is no value.
        (field("file-list"), "", None),
        (field("json_object"), {}, {}),
        (field("json_object"), 0, 0),  # falsy: not checked
        (field("json_object"), [], []),
        # Types without a rule of their own keep any value.
        (field("checkbox"), 2, 2),
        (field("checkbox"), None, None),
        (field("checkbox"), "", ""),
    ],
)
def test_field_values(f: InputField, given: Any, expected: Any) -> None:
    value = _field_value(f, given)
    if expected is OK:
        assert value == given and type(value) is type(given)
    else:
        assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    ("f", "given", "message"),
    [
        (field("number", required=True, default=3), None, "v is required in input form"),
        (field("number", default="x"), None, "v in input form must be a valid number"),
        (field("number"), "1e3", "v in input form must be a valid number"),
        (field("number"), {"n": 1}, "v in input form must be a valid number"),
        (
            field("select", options=["a"], default="z"),
            None,
            "v in input form must be one of the following: ['a']",
        ),
        (field("select", options=[]), "", "v in input form must be one of the following: []"),
        (field("text-input", max_length=1), 5, "(type 'text-input') v in input form must be a string"),
        (field("paragraph", max_length=1), "ab", "v in input form must be less than 1 characters"),
        (field("file", required=True), "", "v in input form must be a file"),
        (field("file"), [FILE], "v in input form must be a file"),
        (field("file-list", required=True), "", "v in input form must be a list of files"),
        (field("file-list"), FILE, "v in input form must be a list of files"),
        (field("file-list", max_length=1), ["x", "y"], "v in input form must be a list of files"),
        (field("json_object"), "{}", "v in input form must be a dict"),
    ],
)
def test_field_refusals(f: InputField, given: Any, message: str) -> None:
    with pytest.raises(InputError) as caught:
        _field_value(f, given)
    assert str(caught.value) == message


def test_the_message_names_the_variable_and_form_order_decides_which_speaks_first() -> None:
    form = [field("number", variable="n"), field("text-input", variable="t", required=True)]
    with pytest.raises(InputError, match="^n in input form must be a valid number$"):
        validate_inputs(form, {"n": "x"})
    with pytest.raises(InputError, match="^t is required in input form$"):
        validate_inputs(form, {"n": "1"})
    assert validate_inputs(form, {"n": "1", "t": "a\x00", "x": 1}) == {"n": 1, "t": "a"}
