"""A2A (protocol 1.0, JSON-RPC binding) per app: the agent card at
``GET /a2a/{app_id}/.well-known/agent-card.json`` and the JSON-RPC endpoint ``POST /a2a/{app_id}``.

Both take the app's key as a bearer token; the key must be the app's in the path (another app's key is
refused as an invalid one, ``401``; an app that does not exist is ``404``). The methods are the ones
A2A 1.0 names and the ``a2a-sdk`` client sends: ``SendMessage``, ``SendStreamingMessage`` (SSE),
``GetTask``, ``CancelTask``, ``SubscribeToTask`` (SSE). Every refusal is a JSON-RPC error object
(with the request's id when it could be read), never a bare HTTP error page. The run pipeline is the
one every wire shares; the request's mapping and the stream's encoder are ``app.wires.a2a`` and the
task operations ``app.wires.a2a_tasks``. See docs/protocols.md.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from starlette.types import Send

from loopwright.app.availability import check_access
from loopwright.app.dify.errors import error_fields
from loopwright.app.lookup import KeyedApp
from loopwright.app.run.runtime import AppRuntime
from loopwright.app.wires.a2a import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PROTOCOL_VERSION,
    PUSH_NOT_SUPPORTED,
    SERVER_ERROR,
    UNSUPPORTED_OPERATION,
    VERSION_NOT_SUPPORTED,
    A2AEncoder,
    A2AError,
    asked_of,
    key_user,
    rpc_error,
    rpc_result,
    sse_frame,
    status_update,
)
from loopwright.app.wires.a2a_card import agent_card
from loopwright.app.wires.a2a_tasks import A2ATasks, Following, Started
from loopwright.app.wires.encoding import COMMENT_PING
from loopwright.errors import LoopwrightError, UserInputError
from loopwright.server.auth import bearer_token, count_request
from loopwright.server.errors import ApiError, retry_after
from loopwright.server.event_stream import EventStream
from loopwright.server.routes_chat import SSE_HEADERS
from loopwright.server.sse import stream_to
from loopwright.server.state import get_state

log = logging.getLogger("loopwright.server")

router = APIRouter()

SEND, STREAM, GET, CANCEL = "SendMessage", "SendStreamingMessage", "GetTask", "CancelTask"
SUBSCRIBE = "SubscribeToTask"
UNSUPPORTED = {
    "ListTasks": "listing tasks is not supported: keep the ids SendMessage returns",
    "GetExtendedAgentCard": "there is no extended card: the card at .well-known/agent-card.json is whole",
}
PUSH_METHODS = frozenset(
    {
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    }
)
# A2A 0.3's names: answered with the version this agent speaks
OLD_METHODS = frozenset({"message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe"})
VERSION_HEADER = "a2a-version"
PING = COMMENT_PING.frame


class Refused(Exception):
    """A request refused before any method runs: its HTTP status and what to say."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers

    def response(self, rpc_id: Any = None) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if self.status == 401 else self.headers
        body = rpc_error(rpc_id, SERVER_ERROR, self.message)
        return JSONResponse(body, status_code=self.status, headers=headers)


async def _authed(request: Request, runtime: AppRuntime, app_id: str) -> tuple[KeyedApp, str]:
    """The app of the path, opened by the request's key, and the key's end user; or :class:`Refused`."""
    if not (await runtime.lookup.access(app_id)).exists:
        raise Refused(404, f"there is no app {app_id!r} here")
    try:
        token = bearer_token(request)
    except ApiError as exc:
        raise Refused(401, exc.message) from None
    app = await runtime.lookup.app_for_key(token)
    if app is None or app.id != app_id:
        raise Refused(401, "Access token is invalid (an app's key opens that app's A2A endpoint only)")
    try:
        await check_access(runtime.lookup, app_id)
        if runtime.limiter.on:
            await count_request(runtime, token)
    except LoopwrightError as exc:
        _, status, message = error_fields(exc)
        raise Refused(status, message, retry_after(exc)) from None
    return app, key_user(token)


@router.get("/a2a/{app_id}/.well-known/agent-card.json")
async def card(
    app_id: str, request: Request, runtime: Annotated[AppRuntime, Depends(get_state)]
) -> JSONResponse:
    try:
        app, _ = await _authed(request, runtime, app_id)
        return JSONResponse(await agent_card(runtime, app, rpc_url(request, app_id)))
    except Refused as refused:
        return refused.response()
    except LoopwrightError as exc:  # an app with no configuration, a model that cannot be built
        _, status, message = error_fields(exc)
        return JSONResponse(rpc_error(None, SERVER_ERROR, message), status_code=status)
    except Exception:  # the app's agent could not be built: the card cannot say what it offers
        log.exception("the A2A card of app %s could not be made", app_id)
        body = rpc_error(None, INTERNAL_ERROR, "the app's agent cannot be built now (see the server's log)")
        return JSONResponse(body, status_code=503)


def rpc_url(request: Request, app_id: str) -> str:
    """The JSON-RPC endpoint's absolute URL, as the client reached this server."""
    return str(request.url_for("a2a_rpc", app_id=app_id))


@router.post("/a2a/{app_id}", name="a2a_rpc", response_model=None)
async def rpc(
    app_id: str, request: Request, runtime: Annotated[AppRuntime, Depends(get_state)]
) -> JSONResponse | EventStream:
    try:
        _, user = await _authed(request, runtime, app_id)
    except Refused as refused:
        return refused.response()
    rpc_id: Any = None
    try:
        data = _request_object(await request.body())
        rpc_id = data.get("id") if isinstance(data.get("id"), str | int) else None
        method, params = _method(data)
        _check_version(request, method)
        return await _call(A2ATasks(runtime, app_id, user), method, params, rpc_id)
    except A2AError as exc:
        return JSONResponse(rpc_error(rpc_id, exc.code, exc.message))
    except UserInputError as exc:
        return JSONResponse(rpc_error(rpc_id, INVALID_PARAMS, str(exc)))
    except LoopwrightError as exc:  # too many requests, an app that cannot run now, …
        _, status, message = error_fields(exc)
        code = INTERNAL_ERROR if status >= 500 else SERVER_ERROR
        return JSONResponse(rpc_error(rpc_id, code, message))
    except Exception:
        log.exception("A2A request to app %s failed", app_id)
        return JSONResponse(rpc_error(rpc_id, INTERNAL_ERROR, "Internal error"))


def _request_object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise A2AError(PARSE_ERROR, "Invalid JSON payload") from None
    if not isinstance(data, dict):
        raise A2AError(INVALID_REQUEST, "the request must be one JSON-RPC 2.0 request object (no batches)")
    return data


def _method(data: dict[str, Any]) -> tuple[str, Any]:
    """``(method, params)`` of a JSON-RPC 2.0 request; :class:`A2AError` for anything else."""
    rpc_id, method = data.get("id"), data.get("method")
    if rpc_id is not None and not isinstance(rpc_id, str | int):
        raise A2AError(INVALID_REQUEST, "id must be a string or a number")
    if data.get("jsonrpc") != "2.0" or not isinstance(method, str):
        raise A2AError(INVALID_REQUEST, "a JSON-RPC 2.0 request has jsonrpc '2.0' and a method")
    return method, data.get("params", {})


def _check_version(request: Request, method: str) -> None:
    """Refuse another protocol version than 1.0: asked for in ``A2A-Version``, or spoken (0.3's method
    names). A request without the header is taken as 1.0's when its method is."""
    asked = request.headers.get(VERSION_HEADER, "").strip()
    if asked and ".".join(asked.split(".")[:2]) != PROTOCOL_VERSION:
        raise A2AError(VERSION_NOT_SUPPORTED, f"this agent speaks A2A {PROTOCOL_VERSION}, not {asked}")
    if method in OLD_METHODS:
        raise A2AError(
            VERSION_NOT_SUPPORTED,
            f"{method} is A2A 0.3's; this agent speaks A2A {PROTOCOL_VERSION} "
            f"({SEND}, {STREAM}, {GET}, {CANCEL})",
        )


async def _call(tasks: A2ATasks, method: str, params: Any, rpc_id: Any) -> JSONResponse | EventStream:
    if method in (SEND, STREAM):
        asked = asked_of(params)
        config = params.get("configuration") or {}
        if not isinstance(config, dict):
            raise A2AError(INVALID_PARAMS, "params.configuration must be an object")
        history = _history_length(config)
        at_once = bool(config.get("returnImmediately"))
        # a task that returns at once keeps its stream, for SubscribeToTask
        started = await tasks.send(asked, rpc_id, streaming=method == STREAM or at_once)
        if method == STREAM:
            return EventStream(_Stream(tasks, started, rpc_id, history), headers=SSE_HEADERS)
        if at_once:
            return JSONResponse(rpc_result(rpc_id, {"task": tasks.working_task(started, history)}))
        outcome = await started.run.outcome()
        return JSONResponse(rpc_result(rpc_id, {"task": tasks.outcome_task(started, outcome, history)}))
    if method in (GET, CANCEL, SUBSCRIBE):
        task_id = params.get("id") if isinstance(params, dict) else None
        if not isinstance(task_id, str) or not task_id:
            raise A2AError(INVALID_PARAMS, "params.id (the task's id) is required")
        if method == GET:
            return JSONResponse(rpc_result(rpc_id, await tasks.get(task_id, _history_length(params))))
        if method == SUBSCRIBE:
            return EventStream(_Follow(tasks, await tasks.follow(task_id), rpc_id), headers=SSE_HEADERS)
        return JSONResponse(rpc_result(rpc_id, await tasks.cancel(task_id)))
    if method in UNSUPPORTED:
        raise A2AError(UNSUPPORTED_OPERATION, UNSUPPORTED[method])
    if method in PUSH_METHODS:
        raise A2AError(PUSH_NOT_SUPPORTED, "push notifications are not supported: stream or poll")
    raise A2AError(METHOD_NOT_FOUND, f"Method not found: {method}")


def _history_length(fields: Any) -> int | None:
    value = fields.get("historyLength") if isinstance(fields, dict) else None
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise A2AError(INVALID_PARAMS, "historyLength must be a number, 0 or more")
    return value


class _Stream:
    """The body of a ``SendStreamingMessage`` response: the task (working), the run's frames, then the
    status it ended (or paused) with."""

    def __init__(self, tasks: A2ATasks, started: Started, rpc_id: Any, history: int | None) -> None:
        self.tasks = tasks
        self.started = started
        self.rpc_id = rpc_id
        self.history = history

    async def __call__(self, send: Send, writable: Any) -> None:
        started, rpc_id = self.started, self.rpc_id
        first = sse_frame(rpc_result(rpc_id, {"task": self.tasks.working_task(started, self.history)}))
        await _send(send, first)
        await stream_to(started.run, send, writable)
        task = self.tasks.outcome_task(started, await started.run.outcome())
        update = status_update(
            task["id"], task["contextId"], task["status"]["state"], task["status"].get("message")
        )
        await _send(send, sse_frame(rpc_result(rpc_id, update)))


class _Follow:
    """The body of a ``SubscribeToTask`` response: the task as it is, its run's events from the first
    (as ``SendStreamingMessage`` sent them), then the status it ended (or paused) with."""

    def __init__(self, tasks: A2ATasks, following: Following, rpc_id: Any) -> None:
        self.tasks = tasks
        self.following = following
        self.rpc_id = rpc_id

    async def __call__(self, send: Send, _writable: Any) -> None:
        task, head, events = self.following.task, self.following.head, self.following.events
        await _send(send, sse_frame(rpc_result(self.rpc_id, {"task": task})))
        if head is None or events is None:
            return
        encoder = A2AEncoder(self.rpc_id)
        try:
            async for batch in events:
                text = "".join([encoder.replayed(head, e.seq, e.item) for e in batch]) if batch else PING
                if text:
                    await _send(send, text)
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
        now = (await self.tasks.get(task["id"]))["status"]
        update = status_update(task["id"], task["contextId"], now["state"], now.get("message"))
        await _send(send, sse_frame(rpc_result(self.rpc_id, update)))


async def _send(send: Send, text: str) -> None:
    await send({"type": "http.response.body", "body": text.encode(), "more_body": True})
