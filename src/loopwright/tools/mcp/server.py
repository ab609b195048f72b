"""``MCPServer``: an MCP server as a toolset an agent accepts as one item."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import mcp_types
from mcp import Client, MCPError
from pydantic import ValidationError

from loopwright.tools.base import Tool, ToolContext, ToolError, ToolInvokeError, ToolOutput
from loopwright.tools.mcp.connection import (
    Connection,
    MCPConnectionError,
    TransportSpec,
    describe,
    is_transport_failure,
)
from loopwright.tools.mcp.convert import result_outputs, tool_parameters
from loopwright.tools.mcp.http import HttpKind, HttpTransport, display_url
from loopwright.tools.mcp.stdio import StdioTransport
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_MAX_PAGES = 100


class MCPServer:
    """The tools of one MCP server. Build it with :meth:`stdio` or :meth:`http`.

    The session opens on first use (``get_tools``, a tool call, or ``connect``), is shared by every run
    and call, is reopened once when it broke (the process died, the connection dropped) and is closed
    by ``aclose`` (or leaving ``async with``). Tools keep the server's names, after ``prefix``.
    """

    def __init__(
        self,
        spec: TransportSpec,
        *,
        name: str,
        prefix: str = "",
        connect_timeout: float = 30.0,
        tool_timeout: float | None = None,
    ) -> None:
        self.name = name
        self.prefix = prefix
        self.tool_timeout = tool_timeout
        self._connection = Connection(name, spec, connect_timeout=connect_timeout, on_change=self._forget)
        self._tools: tuple[Client, list[Tool]] | None = None

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        *,
        name: str | None = None,
        prefix: str = "",
        connect_timeout: float = 30.0,
        tool_timeout: float | None = None,
    ) -> MCPServer:
        """A server started as ``command args…``, speaking MCP on its stdin/stdout. ``env`` is added to a
        minimal inherited environment (HOME, PATH, …), not to the whole of ours."""
        label = name or _stdio_label(command, args)
        spec = StdioTransport(command, args, env, cwd, label)
        return cls(
            spec, name=label, prefix=prefix, connect_timeout=connect_timeout, tool_timeout=tool_timeout
        )

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        bearer_token: str | None = None,
        transport: HttpKind = "streamable-http",
        policy: NetworkPolicy = DEFAULT_POLICY,
        *,
        name: str | None = None,
        prefix: str = "",
        connect_timeout: float = 30.0,
        tool_timeout: float | None = None,
    ) -> MCPServer:
        """A server at ``url`` over streamable HTTP (or ``transport="sse"``, the legacy HTTP+SSE transport).
        Every connection passes the SSRF guard: private and loopback addresses need ``policy`` to allow
        them."""
        all_headers = dict(headers or {})
        if bearer_token:
            all_headers["Authorization"] = f"Bearer {bearer_token}"
        spec = HttpTransport(url, all_headers, transport, policy)
        label = name or display_url(url)
        return cls(
            spec, name=label, prefix=prefix, connect_timeout=connect_timeout, tool_timeout=tool_timeout
        )

    def __repr__(self) -> str:
        return f"MCPServer(name={self.name!r}, prefix={self.prefix!r})"

    # --- lifecycle ----------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connection.connected

    async def connect(self) -> None:
        """Open the session now (also after ``aclose``). Raises :class:`MCPConnectionError` with the
        reason: the command failed, the server exited (with its last stderr lines), the address was
        refused, the connection was refused or timed out."""
        await self._connection.client(reopen=True)

    async def aclose(self) -> None:
        """Close the session and stop the server process; calls fail afterwards until ``connect``."""
        self._tools = None
        await self._connection.close()

    async def __aenter__(self) -> MCPServer:
        await self.connect()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # --- tools --------------------------------------------------------------------------------------

    async def get_tools(self) -> list[Tool]:
        """The server's tools. A server that cannot be reached contributes none: the failure is logged as
        a warning and the agent runs without them."""
        try:
            return await self.list_tools()
        except ToolError as exc:
            log.warning("MCP server %s: running without its tools: %s", self.name, exc)
            return []

    async def list_tools(self) -> list[Tool]:
        """The server's tools (cached per session, refreshed when the server says they changed);
        raises :class:`MCPConnectionError` or :class:`ToolInvokeError`."""
        cached = self._tools
        if cached is not None and cached[0] is self._connection.current():
            return cached[1]
        client, listing = await self._request(_list_all_tools)
        tools = [self._make_tool(t) for t in listing]
        self._tools = (client, tools)
        return tools

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> list[ToolOutput]:
        """Call the server's tool ``name`` (its own name, without prefix) and convert the result.
        An ``isError`` result raises :class:`ToolInvokeError` with the server's text."""
        args = dict(arguments or {})

        async def call(client: Client) -> mcp_types.CallToolResult:
            return await client.call_tool(name, args)

        _, result = await self._request(call)
        return result_outputs(result)

    def _make_tool(self, spec: mcp_types.Tool) -> Tool:
        remote = spec.name
        params = tool_parameters(spec.input_schema)
        required = {p.name for p in params if p.required}

        async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
            # As Dify does, unset optional arguments are left out rather than sent as null or "".
            sent = {k: v for k, v in args.items() if v is not None and (v != "" or k in required)}
            for output in await self.call_tool(remote, sent):
                yield output

        return Tool(
            name=f"{self.prefix}{remote}",
            description=spec.description or spec.title or "",
            parameters=params,
            invoke=invoke,
            timeout=self.tool_timeout,
            label=spec.title or remote,
        )

    # --- requests with one reconnect ------------------------------------------------------------------

    async def _request(self, op: Callable[[Client], Awaitable[_T]]) -> tuple[Client, _T]:
        client = await self._connection.client()
        try:
            return client, await op(client)
        except Exception as exc:
            if not self._connection.is_broken(client, exc):
                raise _tool_error(exc) from exc
            log.info("MCP server %s: session lost (%s); reconnecting", self.name, describe(exc))
        client = await self._connection.reconnect(client)
        try:
            return client, await op(client)
        except Exception as exc:
            raise _tool_error(exc) from exc

    def _forget(self) -> None:
        self._tools = None


async def _list_all_tools(client: Client) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _tool_error(exc: Exception) -> ToolError:
    if isinstance(exc, ToolError):
        return exc
    if isinstance(exc, MCPError):
        return ToolInvokeError(f"MCP error {exc.code}: {exc.message}")
    if isinstance(exc, ValidationError):
        return ToolInvokeError(
            f"the MCP server sent an invalid result: {exc.error_count()} validation errors"
        )
    if is_transport_failure(exc):
        return MCPConnectionError(f"the connection to the MCP server failed: {describe(exc)}")
    return ToolInvokeError(f"MCP request failed: {describe(exc)}")


def _stdio_label(command: str, args: Sequence[str]) -> str:
    words = [os.path.basename(command), *args]
    return " ".join(words)[:80]
