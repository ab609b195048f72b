"""An app's user input form: the inputs of a new conversation checked as Dify checks them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from loopwright.app.config import InputField
from loopwright.errors import UserInputError


class InputError(UserInputError):
    """An input that the form refuses; the message is Dify's."""


def validate_inputs(form: Sequence[InputField], inputs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The inputs of a new conversation, checked against the app's form as Dify does: only the form's
    variables are kept; strings lose ``\\x00``; a missing optional field takes its default."""
    given = dict(inputs or {})
    out: dict[str, Any] = {}
    for f in form:
        label = f.label or f.variable
        value = given.get(f.variable)
        if value is None or value == "":
            if f.required:
                raise InputError(f"{label} is required in input form")
            if f.default not in (None, ""):
                out[f.variable] = f.default
            elif value == "":
                out[f.variable] = ""
            continue
        out[f.variable] = _check_value(f, label, value)
    return out


def _check_value(f: InputField, label: str, value: Any) -> Any:
    if f.type == "number":
        return _number(label, value)
    if f.type == "checkbox":
        if not isinstance(value, bool):
            raise InputError(f"{label} in input form must be a boolean")
        return value
    if not isinstance(value, str):
        raise InputError(f"{label} in input form must be a string")
    value = value.replace("\x00", "")
    if f.type == "select" and value not in f.options:
        raise InputError(f"{label} in input form must be one of the following: {f.options}")
    if f.max_length is not None and len(value) > f.max_length:
        raise InputError(f"{label} in input form must be less than {f.max_length} characters")
    return value


def _number(label: str, value: Any) -> int | float:
    if isinstance(value, bool):
        raise InputError(f"{label} in input form must be a valid number")
    if isinstance(value, int | float):
        number: int | float = value
    elif isinstance(value, str):
        try:
            number = int(value) if value.strip().lstrip("+-").isdigit() else float(value)
        except ValueError:
            raise InputError(f"{label} in input form must be a valid number") from None
    else:
        raise InputError(f"{label} in input form must be a valid number")
    if isinstance(number, float) and not math.isfinite(number):
        raise InputError(f"{label} in input form must be a valid number")
    return number
