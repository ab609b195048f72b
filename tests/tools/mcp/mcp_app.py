"""A small MCP server (the SDK's own ``MCPServer``, formerly FastMCP) for the HTTP tests."""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import Image, MCPServer

# A 1×1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


class Record:
    """What the server saw: request headers, cancelled slow calls."""

    def __init__(self) -> None:
        self.authorization: list[str] = []
        self.cancelled = 0
        self.slow_started = anyio.Event()


def build_server(record: Record) -> MCPServer:
    server = MCPServer("test-server", log_level="WARNING")

    @server.tool(description="Echo the text back.")
    def echo(text: str, times: int = 1) -> str:
        return " ".join([text] * times)

    @server.tool(description="Return a JSON document as text.")
    def lookup(key: str) -> types.CallToolResult:
        body = {"key": key, "values": [1, 2, 3]}
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(body))])

    @server.tool(description="Draw a picture.")
    def draw() -> Image:
        return Image(data=PNG, format="png")

    @server.tool(description="Weather with structured content only.")
    def weather(city: str) -> types.CallToolResult:
        data = {"city": city, "temperature": 21.5}
        return types.CallToolResult(
            content=[types.TextContent(text=f"It is 21.5 °C in {city}.")], structured_content=data
        )

    @server.tool(description="Everything else a result may hold.")
    def assorted() -> types.CallToolResult:
        return types.CallToolResult(
            content=[
                types.AudioContent(data=base64.b64encode(WAV).decode(), mime_type="audio/wav"),
                types.EmbeddedResource(
                    resource=types.TextResourceContents(uri="file:///notes.txt", text="some notes")
                ),
                types.EmbeddedResource(
                    resource=types.BlobResourceContents(
                        uri="file:///report.pdf",
                        blob=base64.b64encode(b"%PDF-1.4").decode(),
                        mime_type="application/pdf",
                    )
                ),
                types.ResourceLink(uri="https://example.com/doc", name="doc"),
            ]
        )

    @server.tool(description="Always fails.")
    def broken() -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text="the disk is full")], is_error=True)

    @server.tool(description="Takes its time.")
    async def slow(seconds: float) -> str:
        record.slow_started.set()
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            record.cancelled += 1
            raise
        return "finally done"

    return server


def recording_headers(app: ASGIApp, record: Record) -> ASGIApp:
    """Wrap ``app`` to note each request's Authorization header."""

    async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            record.authorization.append(headers.get(b"authorization", b"").decode())
        await app(scope, receive, send)

    return wrapped
