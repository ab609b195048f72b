"""An app's user input form: the inputs of every message checked and converted as Dify does.

Dify validates the request's ``inputs`` against the form on every turn of a conversation, runs that
turn with them and stores them on its message; the messages name the *variable*, in Dify's words.
Only the form's variables are kept; a missing value (``None``) takes the field's default; strings lose
``\\x00``. Conversions are Dify's: a number from a numeric string, a checkbox from "true"/"1"/"yes"/
"on" (and the negatives) or 1/0; ``file`` and ``file-list`` values are file mappings (checked like a
chat request's ``files`` when the message is prepared), ``json_object`` a dict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from loopwright.app.config import InputField
from loopwright.errors import UserInputError

TEXT_TYPES = ("text-input", "paragraph", "select")
FILE_TYPES = ("file", "file-list")
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


class InputError(UserInputError):
    """An input that the form refuses; the message is Dify's."""


def validate_inputs(form: Sequence[InputField], inputs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The inputs of one message, checked against the app's form (see the module's docstring). A
    value that stays ``None`` (optional, no default) is kept as ``None``, as Dify stores it."""
    given = inputs or {}
    out: dict[str, Any] = {}
    for f in form:
        value = _field_value(f, given.get(f.variable))
        out[f.variable] = value.replace("\x00", "") if isinstance(value, str) else value
    _check_structures(form, out)
    return out


def _field_value(f: InputField, value: Any) -> Any:
    if value is None:
        if f.required:
            raise InputError(f"{f.variable} is required in input form")
        value = f.default
        if value is None:
            return None
    # A default is checked and converted like a given value, as Dify does.
    return _FIELD_TYPES[f.type](f, value)


def _text(f: InputField, value: Any) -> Any:
    _check_string(f, value)
    if f.max_length and len(value) > f.max_length:
        raise InputError(f"{f.variable} in input form must be less than {f.max_length} characters")
    return value


def _select(f: InputField, value: Any) -> Any:
    _check_string(f, value)  # before the options, so a number gets the type's message
    if value not in f.options:
        raise InputError(f"{f.variable} in input form must be one of the following: {f.options}")
    return value


def _check_string(f: InputField, value: Any) -> None:
    if not isinstance(value, str):
        raise InputError(f"(type '{f.type}') {f.variable} in input form must be a string")


def _file(f: InputField, value: Any) -> Any:
    if _empty_placeholder(f, value):
        return None
    if not isinstance(value, dict):
        raise InputError(f"{f.variable} in input form must be a file")
    return value


def _file_list(f: InputField, value: Any) -> Any:
    if _empty_placeholder(f, value):
        return None
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise InputError(f"{f.variable} in input form must be a list of files")
    if f.max_length and len(value) > f.max_length:
        raise InputError(f"{f.variable} in input form must be less than {f.max_length} files")
    return value


def _empty_placeholder(f: InputField, value: Any) -> bool:
    # What a form sends for an optional file left empty; a required one goes on to be refused.
    return not f.required and value == ""


def _json_object(f: InputField, value: Any) -> Any:
    if value and not isinstance(value, dict):  # an empty value ("", 0, []) passes, as in Dify
        raise InputError(f"{f.variable} in input form must be a dict")
    return value


# A form field's type → its check and conversion of a value that is not None.
_FIELD_TYPES: dict[str, Callable[[InputField, Any], Any]] = {
    "text-input": _text,
    "paragraph": _text,
    "select": _select,
    "number": lambda f, value: _number(f.variable, value),
    "checkbox": lambda f, value: _checkbox(value),
    "file": _file,
    "file-list": _file_list,
    "json_object": _json_object,
}


def _number(name: str, value: Any) -> int | float | None:
    """Dify's conversion: numbers as they are; a string by ``float`` when it has a dot, else
    ``int``; a blank string is no value."""
    if isinstance(value, int | float):
        return value
    if not isinstance(value, str):
        raise InputError(f"{name} in input form must be a valid number")
    if not value.strip():
        return None
    try:
        return float(value) if "." in value else int(value)
    except ValueError:
        raise InputError(f"{name} in input form must be a valid number") from None


def _checkbox(value: Any) -> Any:
    """Dify's conversion; anything else is kept as it came."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if value == 1:
            return True
        if value == 0:
            return False
    return value


def _check_structures(form: Sequence[InputField], values: Mapping[str, Any]) -> None:
    """Dicts only in file and JSON fields, lists of dicts only in file lists (Dify's last check)."""
    types = {f.variable: f.type for f in form}
    bad_dicts = [
        k for k, v in values.items() if isinstance(v, dict) and types[k] not in ("file", "json_object")
    ]
    if bad_dicts:
        raise InputError(f"Invalid input type for {bad_dicts}")
    bad_lists = [
        k
        for k, v in values.items()
        if isinstance(v, list) and any(isinstance(i, dict) for i in v) and types[k] != "file-list"
    ]
    if bad_lists:
        raise InputError(f"Invalid input type for {bad_lists}")
