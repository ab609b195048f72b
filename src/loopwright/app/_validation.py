"""One-line messages for pydantic validation errors, shared by the configuration readers."""

from __future__ import annotations

import pydantic


def first_error(e: pydantic.ValidationError) -> str:
    """The first problem of a validation error in one line: ``where: message``."""
    err = e.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"])
    message = str(err["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message
