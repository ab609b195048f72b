"""One MCP session at a time, owned by a background task.

The SDK's transports and ``Client`` are anyio context managers that must be entered and exited in the
same task, so each session lives inside one long-lived task that enters them, hands the connected
``Client`` out through a future and waits to be told to stop. Callers in any task talk to that
``Client``; MCP matches replies to requests by id, so concurrent calls share it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

import anyio
import httpx2
import mcp_types
from mcp import Client, MCPError
from mcp.client._transport import TransportStreams
from mcp.client.session import IncomingMessage

from loopwright.tools.base import ToolError, ToolInvokeError

log = logging.getLogger(__name__)

CLIENT_INFO = mcp_types.Implementation(name="loopwright", version="0.1.0")
RETRY_AFTER = 10.0  # after a failed attempt, calls fail fast for this long instead of trying again
STOP_TIMEOUT = 10.0  # stdio shutdown alone may take 2 s (stdin close) + 2 s (SIGTERM) + 2 s (SIGKILL)

_BROKEN_PIPES = (
    OSError,
    EOFError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    httpx2.TransportError,
)


class MCPConnectionError(ToolInvokeError):
    """The MCP server could not be started or reached; the message says why."""


class TransportSpec(Protocol):
    """How to open one connection to a server (a new process, a new HTTP session)."""

    def open(self) -> AbstractAsyncContextManager[TransportStreams]: ...

    def detail(self) -> str:
        """More about the last failure for error messages (a stdio server's last stderr lines)."""
        ...


@dataclass(slots=True)
class _Link:
    ready: asyncio.Future[Client]
    stop: asyncio.Event
    task: asyncio.Task[None]

    def alive(self) -> bool:
        return not self.task.done()

    def client(self) -> Client | None:
        ready = self.ready
        if ready.done() and not ready.cancelled() and ready.exception() is None:
            return ready.result()
        return None


class Connection:
    """Opens a session lazily, hands out its client, reopens it when it broke, closes it on request."""

    def __init__(
        self,
        label: str,
        spec: TransportSpec,
        *,
        connect_timeout: float = 30.0,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.label = label
        self.spec = spec
        self.connect_timeout = connect_timeout
        self._on_change = on_change
        self._link: _Link | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self._retiring: set[asyncio.Task[None]] = set()
        # (until when, why) after a failed attempt: agent runs must not each wait out a dead server.
        self._failure: tuple[float, str] | None = None

    @property
    def connected(self) -> bool:
        link = self._link
        return link is not None and link.alive() and link.client() is not None

    async def client(self, *, reopen: bool = False) -> Client:
        """The live client, connecting first if needed (``reopen``: even after ``close`` or a recent
        failure). Raises :class:`MCPConnectionError`."""
        link = self._link
        if link is not None and link.alive() and (client := link.client()) is not None:
            return client
        async with self._lock:
            if reopen:
                self._closed = False
            if self._closed:
                raise MCPConnectionError(f"the connection to MCP server {self.label!r} has been closed")
            link = self._link
            if link is None or not link.alive():
                failure = self._failure
                if failure is not None and not reopen and time.monotonic() < failure[0]:
                    raise MCPConnectionError(failure[1])
                if link is not None:
                    await self._retire(link)
                link = self._link = self._start()
        return await self._wait(link)

    async def reconnect(self, broken: Client) -> Client:
        """A new session replacing ``broken`` (or the one that already replaced it)."""
        async with self._lock:
            if self._closed:
                raise MCPConnectionError(f"the connection to MCP server {self.label!r} has been closed")
            link = self._link
            if link is None or link.client() is broken or not link.alive():
                if link is not None:
                    await self._retire(link)
                link = self._link = self._start()
        return await self._wait(link)

    def current(self) -> Client | None:
        """The live client, if a session is open."""
        link = self._link
        return link.client() if link is not None and link.alive() else None

    def is_broken(self, client: Client, exc: BaseException) -> bool:
        """Whether ``exc``, raised by a request on ``client``, means the session itself is gone."""
        return self.current() is not client or is_transport_failure(exc)

    async def close(self) -> None:
        """Stop the session (and the server process, for stdio). Later calls fail until reopened."""
        async with self._lock:
            self._closed = True
            link, self._link = self._link, None
        if link is not None:
            await self._retire(link)
        if self._retiring:
            await asyncio.wait(self._retiring, timeout=STOP_TIMEOUT)

    # --- the background task ----------------------------------------------------------------------

    def _start(self) -> _Link:
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        # A failure nobody awaited (the caller was cancelled) is reported here, not at garbage collection.
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        stop = asyncio.Event()
        task = asyncio.create_task(self._run(ready, stop), name=f"mcp-session:{self.label}")
        return _Link(ready, stop, task)

    async def _run(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as scope:
                async with Client(
                    self.spec.open(), cache=None, client_info=CLIENT_INFO, message_handler=self._on_message
                ) as client:
                    scope.deadline = math.inf  # connected: the session lasts until told to stop
                    if not ready.done():
                        ready.set_result(client)
                    await stop.wait()
            if not ready.done():
                ready.set_exception(TimeoutError(f"no answer within {self.connect_timeout:g} s"))
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not stop.is_set():
                log.warning("MCP server %s: the session ended: %s", self.label, describe(exc))
        finally:
            if not ready.done():  # cancelled while connecting
                ready.set_exception(MCPConnectionError("the connection attempt was cancelled"))

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification) and self._on_change is not None:
            self._on_change()
        elif isinstance(message, Exception):
            log.debug("MCP server %s: transport error: %s", self.label, describe(message))

    async def _wait(self, link: _Link) -> Client:
        try:
            # Shielded: a caller that gives up must not cancel the attempt other callers share.
            client = await asyncio.shield(link.ready)
        except Exception as exc:
            reason = describe(exc)
            root = root_cause(exc)
            if isinstance(root, MCPError) and root.code == mcp_types.CONNECTION_CLOSED:
                reason = "the server closed the connection before the handshake finished (did it exit?)"
            message = f"cannot connect to MCP server {self.label!r}: {reason}{self.spec.detail()}"
            if link is self._link:
                self._failure = (time.monotonic() + RETRY_AFTER, message)
            raise MCPConnectionError(message) from exc
        self._failure = None
        return client

    async def _retire(self, link: _Link) -> None:
        if not link.ready.done():
            link.task.cancel()
        link.stop.set()
        self._retiring.add(link.task)
        link.task.add_done_callback(self._retiring.discard)
        done, _ = await asyncio.wait({link.task}, timeout=STOP_TIMEOUT)
        if not done:
            log.warning("MCP server %s: the session did not stop within %g s", self.label, STOP_TIMEOUT)
            link.task.cancel()
            await asyncio.wait({link.task}, timeout=STOP_TIMEOUT)


def is_transport_failure(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection is gone, rather than that one request failed."""
    root = root_cause(exc)
    if isinstance(root, MCPError):
        # The streamable HTTP transport reports a server that forgot our session as "Session terminated".
        closed = root.code == mcp_types.CONNECTION_CLOSED
        return closed or (root.code == mcp_types.INVALID_REQUEST and root.message == "Session terminated")
    return isinstance(root, _BROKEN_PIPES)


def root_cause(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        real = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (real or list(exc.exceptions))[0]
    return exc


def describe(exc: BaseException) -> str:
    """A one-line reason for ``exc`` fit for an error message."""
    root = root_cause(exc)
    text = str(root).strip()
    if isinstance(root, MCPError | ToolError | TimeoutError) and text:
        return text
    return f"{type(root).__name__}: {text}" if text else type(root).__name__
