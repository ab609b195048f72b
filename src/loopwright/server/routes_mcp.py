"""MCP over an app: ``/mcp``, streamable HTTP, the app's key as the bearer token; the key's app is the
one tool (``app.wires.mcp``: the tool, a call's message and result).

The protocol is the ``mcp`` SDK's server: its low-level ``Server`` (the ``tools/list`` and
``tools/call`` handlers here) behind its ``StreamableHTTPSessionManager``, which speaks both eras —
a request with the 2026-07-28 ``Mcp-Protocol-Version`` header is served alone (the stateless
revision: no ``initialize``, no session), and the ``initialize`` handshake of 2025-11-25 (and the
revisions before it) opens a session (``Mcp-Session-Id``) bound to the key's app. JSON-RPC errors
(a body that is not JSON-RPC, an unknown method or tool) are the SDK's. The key is checked before
the SDK sees the request: a key that opens no app is Dify's 401 (the admin token opens none).

The manager's task group lives as long as the server (:meth:`McpEndpoint.running`, entered by the
app's lifespan); a call's run is the app's run like any other, stopped when the call is cancelled.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.session import ServerSession
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from loopwright.app.dify.errors import error_fields
from loopwright.app.lookup import KeyedApp
from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runs import Run
from loopwright.app.run.runtime import AppRuntime
from loopwright.app.wires.mcp import (
    DEFAULT_USER,
    OUTPUT_SCHEMA,
    ProgressEncoder,
    RunProgress,
    ToolResult,
    app_tool_schema,
    tool_error,
    tool_result,
)
from loopwright.errors import LoopwrightError, UserInputError
from loopwright.server.auth import bearer_token, current_app
from loopwright.server.errors import ApiError, error_response

log = logging.getLogger("loopwright.server")

MCP_PATH = "/mcp"
MCP_METHODS = ["GET", "POST", "DELETE"]  # the SSE stream of a session, messages, a session's end
APP = "loopwright.app"  # the scope's key for the request's app


class McpEndpoint:
    """The ASGI app at ``/mcp``: the key checked, then the SDK's session manager."""

    def __init__(self, runtime: AppRuntime) -> None:
        self.runtime = runtime
        self.server: Server[Any] = Server(
            "loopwright", on_list_tools=self._list_tools, on_call_tool=self._call_tool
        )
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve MCP while this is entered (a manager runs once: each server start makes one)."""
        manager = StreamableHTTPSessionManager(self.server)
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            app, token = await self._authorized(Request(scope))
        except ApiError as exc:
            await error_response(exc.status, exc.code, exc.message)(scope, receive, send)
            return
        except LoopwrightError as exc:  # a disabled app, its API off
            code, status, message = error_fields(exc)
            await error_response(status, code, message, exc)(scope, receive, send)
            return
        manager = self._manager  # the key first: nothing is said to a caller without one
        if manager is None:  # an app served without its lifespan
            await error_response(503, "unavailable", "MCP is not served here")(scope, receive, send)
            return
        scope[APP] = app
        # A session opened with one key is used with that key only (the SDK compares these).
        digest = hashlib.sha256(token.encode()).hexdigest()
        scope["user"] = AuthenticatedUser(
            AccessToken(token=digest, client_id=app.id, scopes=[], subject=digest)
        )
        await manager.handle_request(scope, receive, send)

    async def _authorized(self, request: Request) -> tuple[KeyedApp, str]:
        """The key's app (as every route finds it) and the key."""
        return await current_app(request, self.runtime), bearer_token(request)

    def route(self) -> Route:
        """The route at ``/mcp`` (this endpoint as an ASGI app: the SDK answers itself)."""
        return Route(MCP_PATH, self, methods=MCP_METHODS)

    # --- the handlers ------------------------------------------------------------------------------

    async def _tool(self, app: KeyedApp) -> types.Tool:
        version = await self.runtime.lookup.latest_config(app.id)
        if version is None:
            raise MCPError(types.INTERNAL_ERROR, f"app {app.id} has no configuration")
        schema = app_tool_schema(app.id, app.name, app.description, version.config.user_input_form)
        return types.Tool(
            name=schema.name,
            title=app.name,
            description=schema.description,
            input_schema=schema.parameters,
            output_schema=OUTPUT_SCHEMA,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[await self._tool(_app_of(ctx))])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        app = _app_of(ctx)
        tool = await self._tool(app)
        if params.name != tool.name:
            raise MCPError(
                types.INVALID_PARAMS, f"unknown tool {params.name!r}: this key's app is {tool.name!r}"
            )
        arguments = dict(params.arguments or {})
        query = arguments.pop("query", None)
        if not isinstance(query, str) or not query.strip():
            return _result(tool_error(UserInputError("query is required: say what to ask the app")))
        progress = _wants_progress(ctx.params)
        request = MessageRequest(
            app_id=app.id,
            user=DEFAULT_USER,
            query=query.replace("\x00", ""),
            inputs=arguments,
            response_mode="streaming" if progress else "blocking",
            encoder=ProgressEncoder if progress else None,
        )
        try:
            run = await self.runtime.start(request)
        except LoopwrightError as exc:  # the form refused the inputs, the app is busy, …
            return _result(tool_error(exc))
        try:
            if progress:
                await _report(run, ctx.session)
            outcome = await run.outcome()
        except asyncio.CancelledError:
            run.stop("the MCP call was cancelled")
            raise
        return _result(tool_result(outcome))


def _app_of(ctx: ServerRequestContext[Any, Any]) -> KeyedApp:
    request = ctx.request
    app = request.scope.get(APP) if isinstance(request, Request) else None
    if not isinstance(app, KeyedApp):  # every request passed McpEndpoint.__call__
        raise MCPError(types.INTERNAL_ERROR, "the request has no app")
    return app


def _wants_progress(params: Mapping[str, Any] | None) -> bool:
    meta = (params or {}).get("_meta")
    return isinstance(meta, Mapping) and meta.get("progressToken") is not None


async def _report(run: Run, session: ServerSession) -> None:
    """``notifications/progress`` of the run's rounds and tool calls until it ends; a client that can
    no longer be told is not told again (the run goes on to its result)."""
    progress, count, telling = RunProgress(), 0, True
    async for event in run.events():
        for message in progress.said(event) if telling else ():
            count += 1
            try:
                await session.report_progress(count, None, message)
            except Exception:
                log.info("MCP progress could not be sent; the call goes on without it", exc_info=True)
                telling = False


def _result(result: ToolResult) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=result.text)],
        structured_content=result.structured,
        is_error=result.is_error,
    )
