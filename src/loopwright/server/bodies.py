"""JSON request bodies read after authentication, as Dify reads them.

FastAPI reads and decodes a route's body parameter before it resolves any dependency, so a request
with a bad key *and* a broken body was answered 400. Dify checks the key first (a bad key is always
401). :func:`json_body` is a dependency that reads and validates the body; declared after the
``current_app`` dependency, it runs after it. Its errors are the request-validation errors every
route answers with (400 ``invalid_param``, :mod:`loopwright.server.errors`).

A JSON body is at most :data:`MAX_JSON_BODY_BYTES`: a larger ``Content-Length`` is refused (413)
before a byte of the body is read, and a body without one is read only until it grows past it.
Nesting is bounded by the JSON parser itself (pydantic's, 255 levels): deeper is a 400.

A client has ``Settings.body_read_timeout`` seconds (30) to send its body: a slower one (a byte a
second) is answered 408 ``request_timeout`` and its connection closed. Reading a body holds no
worker (the server is asynchronous); the deadline frees the connection and what it buffered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import pydantic
from fastapi import Request
from fastapi.exceptions import RequestValidationError

from loopwright.server.errors import ApiError

M = TypeVar("M", bound=pydantic.BaseModel)

# The largest JSON body of any route: an app file sent to the console's import (10,000,000
# characters at most, app.config) with room for its JSON escapes; a chat message is a few kilobytes.
MAX_JSON_BODY_BYTES = 16 * 1024 * 1024


def too_large() -> ApiError:
    return ApiError(413, "request_entity_too_large", f"The request body is over {MAX_JSON_BODY_BYTES} bytes.")


def too_slow(seconds: float) -> ApiError:
    return ApiError(408, "request_timeout", f"The request body was not received within {seconds:g} seconds.")


async def _body(request: Request) -> bytes:
    """The request's body, within the server's deadline (408 past it)."""
    seconds = float(request.app.state.loopwright.settings.body_read_timeout)
    try:
        async with asyncio.timeout(seconds):
            return await _read(request)
    except TimeoutError:
        raise too_slow(seconds) from None


async def _read(request: Request) -> bytes:
    """The request's body, refused (413) past :data:`MAX_JSON_BODY_BYTES` without reading the rest."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_JSON_BODY_BYTES:
        raise too_large()
    if declared is not None:  # the server delivers no more than it declares
        return await request.body()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_JSON_BODY_BYTES:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def json_body(model: type[M]) -> Callable[[Request], Awaitable[M]]:
    """A dependency: the request's JSON body as ``model`` (an empty body is missing)."""

    async def read(request: Request) -> M:
        raw = await _body(request)
        if not raw.strip():
            raise RequestValidationError([{"type": "missing", "loc": ("body",), "msg": "Field required"}])
        return _validate(model, raw)

    read.body_model = model  # type: ignore[attr-defined]  # the OpenAPI document's request body
    return read


def optional_json_body(model: type[M]) -> Callable[[Request], Awaitable[M | None]]:
    """A dependency: the request's JSON body as ``model``, or ``None`` when there is none (a DELETE
    whose fields are all optional)."""

    async def read(request: Request) -> M | None:
        raw = await _body(request)
        return _validate(model, raw) if raw.strip() else None

    read.body_model = model  # type: ignore[attr-defined]
    read.body_optional = True  # type: ignore[attr-defined]
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
