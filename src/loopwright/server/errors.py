"""Dify's error bodies: every error response is ``{"code", "message", "status"}``.

Each of loopwright's exceptions says its own Dify code and status (``loopwright.errors``, read by
``app.dify.errors.error_fields`` — the same fields a stream's ``error`` event carries). Request
validation errors (FastAPI's 422) become 400 ``invalid_param``; anything else — a bug — becomes 500
``internal_server_error`` with Dify's generic message and no details (it is logged), never the
client's fault.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopwright.app.dify.errors import INTERNAL_MESSAGE, error_fields
from loopwright.errors import LoopwrightError

log = logging.getLogger("loopwright.server")

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "file_too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
}


class ApiError(Exception):
    """An error answered with Dify's body."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def invalid_param(message: str) -> ApiError:
    return ApiError(400, "invalid_param", message)


def not_found(message: str) -> ApiError:
    return ApiError(404, "not_found", message)


def error_body(status: int, code: str, message: str) -> dict[str, Any]:
    return {"code": code, "message": message, "status": status}


UNAUTHORIZED_HEADERS = {"WWW-Authenticate": 'Bearer realm="api"'}  # Dify's, on every 401


def retry_after(exc: BaseException) -> dict[str, str] | None:
    """``Retry-After`` of an error that says when to come back (a 429 of a rate limit), else None."""
    seconds = getattr(exc, "retry_after", None)
    return {"Retry-After": str(seconds)} if isinstance(seconds, int) else None


def error_headers(status: int, exc: BaseException | None = None) -> dict[str, str] | None:
    """The headers of an error response: Dify's ``WWW-Authenticate`` on a 401, ``Retry-After`` on a
    limit's 429."""
    if status == 401:
        return UNAUTHORIZED_HEADERS
    return retry_after(exc) if exc is not None else None


def error_response(status: int, code: str, message: str, exc: BaseException | None = None) -> JSONResponse:
    headers = error_headers(status, exc)
    return JSONResponse(error_body(status, code, message), status_code=status, headers=headers)


def validation_message(exc: RequestValidationError) -> str:
    """One readable line for the first problem, e.g. ``query is required``."""
    errors = exc.errors()
    if not errors:
        return "invalid request"
    err = errors[0]
    loc = [str(x) for x in err.get("loc", ())]
    if loc and loc[0] in ("body", "query", "path", "header", "cookie"):
        loc = loc[1:]  # where it was, not what
    where = ".".join(loc)
    if err.get("type") == "missing":
        return f"{where} is required" if where else "request body is required"
    if err.get("type") == "json_invalid":
        return "the request body is not valid JSON"
    msg = str(err.get("msg", "invalid value"))
    return f"{where}: {msg}" if where else msg


def classify(exc: Exception) -> tuple[int, str, str] | None:
    """The status, code and message an error is answered with (any wire's shape is built from
    these); ``None`` for an exception that is not one of the client-facing kinds (a bug)."""
    if isinstance(exc, ApiError):
        return exc.status, exc.code, exc.message
    if isinstance(exc, LoopwrightError):
        code, status, message = error_fields(exc)
        if status >= 500:
            log.error("request failed: %s", exc, exc_info=exc)
        return status, code, message
    if isinstance(exc, RequestValidationError):
        return 400, "invalid_param", validation_message(exc)
    if isinstance(exc, StarletteHTTPException):
        fallback = "internal_server_error" if exc.status_code >= 500 else "error"
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        return exc.status_code, _HTTP_CODES.get(exc.status_code, fallback), message
    return None


def install(app: FastAPI) -> None:
    """Register the handlers (and the catch-all middleware) on ``app``."""

    async def handled(_: Request, exc: Exception) -> JSONResponse:
        status, code, message = classify(exc) or (500, "internal_server_error", INTERNAL_MESSAGE)
        return error_response(status, code, message, exc)

    for kind in (ApiError, LoopwrightError, RequestValidationError, StarletteHTTPException):
        app.add_exception_handler(kind, handled)
    app.add_middleware(CatchAll)


class CatchAll:
    """Turns an unexpected exception into 500 ``internal_server_error`` (if the response has not
    started yet; a stream that already started is simply closed)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                return
            response = error_response(500, "internal_server_error", INTERNAL_MESSAGE)
            await response(scope, receive, send)
