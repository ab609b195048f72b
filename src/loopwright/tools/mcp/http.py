"""Reaching an MCP server over streamable HTTP or legacy SSE, through the SSRF guard.

The ``mcp`` SDK speaks HTTP with ``httpx2`` (its own fork of httpx, over ``httpcore2``), so the guard of
:mod:`loopwright.tools.net` is applied the same way one layer down: an ``httpcore2`` network backend that
checks every address it connects to and connects to the checked address itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Literal, cast
from urllib.parse import urlsplit, urlunsplit

import httpcore2
import httpx2
from mcp.client._transport import TransportStreams
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from loopwright.tools.net import GuardedBackend, NetworkPolicy, check_url

HttpKind = Literal["streamable-http", "sse"]

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 300.0  # the server may hold a stream open between events


def guarded_client_factory(policy: NetworkPolicy) -> Any:
    """An ``httpx2`` client factory (the shape the SDK's SSE transport takes) whose clients pass every
    connection through ``tools.net.GuardedBackend`` and ignore proxies from the environment."""

    def create(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        transport = httpx2.AsyncHTTPTransport()
        pool = transport._pool
        assert isinstance(pool, httpcore2.AsyncConnectionPool)
        # httpx2 has no public hook for the network backend; the pool reads this attribute per connection.
        pool._network_backend = cast(httpcore2.AsyncNetworkBackend, GuardedBackend(policy, core=httpcore2))
        return httpx2.AsyncClient(
            transport=transport,
            headers=headers,
            timeout=timeout or httpx2.Timeout(CONNECT_TIMEOUT, read=READ_TIMEOUT),
            auth=auth,
            trust_env=False,
        )

    return create


class HttpTransport:
    """Opens a streamable HTTP or SSE connection to ``url`` with fixed headers, after checking the URL."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        kind: HttpKind,
        policy: NetworkPolicy,
        timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        if kind not in ("streamable-http", "sse"):
            raise ValueError(f"unknown MCP HTTP transport {kind!r} (use 'streamable-http' or 'sse')")
        self.url = url
        self.kind = kind
        self.policy = policy
        self.timeout = timeout
        self._headers = dict(headers)  # may hold credentials: never logged or shown
        self._factory = guarded_client_factory(policy)

    def open(self) -> AbstractAsyncContextManager[TransportStreams]:
        return self._open()

    def detail(self) -> str:
        return ""

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[TransportStreams]:
        # Checked up front for a clear error; the backend checks again at connect time (DNS rebinding).
        await check_url(self.url, self.policy)
        timeout = httpx2.Timeout(self.timeout, read=READ_TIMEOUT)
        if self.kind == "sse":
            async with sse_client(
                self.url,
                headers=self._headers,
                timeout=self.timeout,
                sse_read_timeout=READ_TIMEOUT,
                httpx_client_factory=self._factory,
            ) as streams:
                yield streams
            return
        client: httpx2.AsyncClient = self._factory(headers=self._headers, timeout=timeout)
        async with client, streamable_http_client(self.url, http_client=client) as streams:
            yield streams


def display_url(url: str) -> str:
    """``url`` without credentials, query or fragment, for names and messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
