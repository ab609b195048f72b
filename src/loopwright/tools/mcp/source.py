"""``MCPSource``: an MCP server as it is written in app configuration."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from loopwright.tools.mcp.server import MCPServer
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy


class MCPSource(BaseModel):
    """An MCP server in configuration: ``command``/``args``/``env``/``cwd`` for ``stdio``, ``url``/
    ``headers``/``bearer_token`` for ``streamable-http`` and ``sse``."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["mcp"] = "mcp"
    transport: Literal["stdio", "streamable-http", "sse"] = "stdio"
    name: str | None = None
    prefix: str = ""
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = Field(default=None, repr=False)  # may hold API keys
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = Field(default=None, repr=False)
    bearer_token: SecretStr | None = None
    connect_timeout: float = Field(default=30.0, gt=0)
    tool_timeout: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _check_transport(self) -> MCPSource:
        if self.transport == "stdio":
            if not self.command:
                raise ValueError("an MCP server with transport 'stdio' needs a command")
            if self.url or self.headers or self.bearer_token:
                raise ValueError("url, headers and bearer_token are for the HTTP transports, not 'stdio'")
        else:
            if not self.url:
                raise ValueError(f"an MCP server with transport {self.transport!r} needs a url")
            if self.command or self.args or self.env or self.cwd:
                raise ValueError(f"command, args, env and cwd are for 'stdio', not {self.transport!r}")
        return self

    def build(self, policy: NetworkPolicy = DEFAULT_POLICY) -> MCPServer:
        """The server this configuration describes (not connected yet)."""
        if self.transport == "stdio":
            assert self.command is not None
            return MCPServer.stdio(
                self.command,
                self.args,
                self.env,
                self.cwd,
                name=self.name,
                prefix=self.prefix,
                connect_timeout=self.connect_timeout,
                tool_timeout=self.tool_timeout,
            )
        assert self.url is not None
        token = self.bearer_token.get_secret_value() if self.bearer_token else None
        return MCPServer.http(
            self.url,
            self.headers,
            token,
            self.transport,
            policy,
            name=self.name,
            prefix=self.prefix,
            connect_timeout=self.connect_timeout,
            tool_timeout=self.tool_timeout,
        )
