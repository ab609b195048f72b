"""JSON request bodies read after authentication, as Dify reads them.

FastAPI reads and decodes a route's body parameter before it resolves any dependency, so a request
with a bad key *and* a broken body was answered 400. Dify checks the key first (a bad key is always
401). :func:`json_body` is a dependency that reads and validates the body; declared after the
``current_app`` dependency, it runs after it. Its errors are the request-validation errors every
route answers with (400 ``invalid_param``, :mod:`loopwright.server.errors`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import pydantic
from fastapi import Request
from fastapi.exceptions import RequestValidationError

M = TypeVar("M", bound=pydantic.BaseModel)


def json_body(model: type[M]) -> Callable[[Request], Awaitable[M]]:
    """A dependency: the request's JSON body as ``model`` (an empty body is missing)."""

    async def read(request: Request) -> M:
        raw = await request.body()
        if not raw.strip():
            raise RequestValidationError([{"type": "missing", "loc": ("body",), "msg": "Field required"}])
        return _validate(model, raw)

    return read


def optional_json_body(model: type[M]) -> Callable[[Request], Awaitable[M | None]]:
    """A dependency: the request's JSON body as ``model``, or ``None`` when there is none (a DELETE
    whose fields are all optional)."""

    async def read(request: Request) -> M | None:
        raw = await request.body()
        return _validate(model, raw) if raw.strip() else None

    return read


def _validate(model: type[M], raw: bytes) -> M:
    try:
        return model.model_validate_json(raw)
    except pydantic.ValidationError as exc:
        errors = [{**err, "loc": ("body", *err["loc"])} for err in exc.errors(include_url=False)]
        raise RequestValidationError(errors) from None


def _dify_user(value: object) -> object:
    """Dify reads ``user`` as any JSON value and applies ``str()`` to it: a front end's numeric id is
    a user. A number or boolean becomes Python's text of it (``12345`` → ``"12345"``, ``true`` →
    ``"True"``); an object or a list stays refused (no one's user id)."""
    if isinstance(value, bool | int | float):
        return str(value)
    return value


# The ``user`` field of a JSON body, as Dify reads it
DifyUser = Annotated[str, pydantic.BeforeValidator(_dify_user)]
