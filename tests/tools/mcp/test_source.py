"""MCPSource: MCP servers in configuration."""

from __future__ import annotations

import sys

import pytest
from pydantic import ValidationError

from loopwright.tools.mcp import MCPServer, MCPSource
from loopwright.tools.mcp.http import HttpTransport
from loopwright.tools.mcp.stdio import StdioTransport
from loopwright.tools.net import NetworkPolicy


def test_a_stdio_source_builds_a_server_without_starting_it() -> None:
    source = MCPSource.model_validate(
        {
            "type": "mcp",
            "command": sys.executable,
            "args": ["-m", "mcp_server_time"],
            "env": {"TZ": "UTC"},
            "prefix": "time_",
            "name": "time",
            "tool_timeout": 5,
        }
    )
    server = source.build()
    assert isinstance(server, MCPServer) and not server.connected
    assert (server.name, server.prefix, server.tool_timeout) == ("time", "time_", 5)
    spec = server._connection.spec
    assert isinstance(spec, StdioTransport)
    assert spec.params.args == ["-m", "mcp_server_time"] and spec.params.env == {"TZ": "UTC"}


def test_an_http_source_carries_headers_token_and_policy() -> None:
    policy = NetworkPolicy.from_strings(["10.0.0.0/8"])
    source = MCPSource(
        transport="sse",
        url="https://mcp.example.com/sse?key=1",
        headers={"X-Team": "a"},
        bearer_token="s3cr3t-value",
    )
    assert "s3cr3t" not in repr(source) and "X-Team" not in repr(source)
    server = source.build(policy)
    assert server.name == "https://mcp.example.com/sse"
    spec = server._connection.spec
    assert isinstance(spec, HttpTransport)
    assert (spec.kind, spec.policy) == ("sse", policy)
    assert spec._headers == {"X-Team": "a", "Authorization": "Bearer s3cr3t-value"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"transport": "stdio"}, "needs a command"),
        ({"transport": "streamable-http"}, "needs a url"),
        ({"command": "x", "url": "http://a"}, "not 'stdio'"),
        ({"transport": "sse", "url": "http://a", "command": "x"}, "are for 'stdio'"),
        ({"transport": "websocket", "url": "http://a"}, "transport"),
        ({"command": "x", "unknown": 1}, "unknown"),
        ({"type": "openapi", "command": "x"}, "type"),
    ],
)
def test_invalid_sources_are_refused(data: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        MCPSource.model_validate(data)
