"""MCP tools: the tools of an MCP server (stdio, streamable HTTP or legacy SSE) as one toolset."""

from loopwright.tools.mcp.connection import MCPConnectionError
from loopwright.tools.mcp.server import MCPServer
from loopwright.tools.mcp.source import MCPSource

__all__ = ["MCPConnectionError", "MCPServer", "MCPSource"]
