"""Starting an MCP server as a subprocess, keeping the last lines it wrote to stderr for error messages."""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import anyio
from mcp.client._transport import TransportStreams
from mcp.client.stdio import StdioServerParameters, stdio_client

log = logging.getLogger(__name__)

_TAIL_LINES = 20
_STDERR_SETTLE = 0.5  # seconds to let a dying server's last stderr lines arrive


class _StderrTail(asyncio.Protocol):
    """Reads the server's stderr pipe on the event loop: logs each line at debug level and keeps the last
    few for error messages, bounded however much the server writes."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.lines: deque[str] = deque(maxlen=_TAIL_LINES)
        self.closed = asyncio.Event()
        self._partial = b""

    def data_received(self, data: bytes) -> None:
        *complete, self._partial = (self._partial + data).split(b"\n")
        for raw in complete:
            self._add(raw)
        if len(self._partial) > 8192:  # a line without end: keep a bounded piece of it
            self._add(self._partial)
            self._partial = b""

    def connection_lost(self, exc: Exception | None) -> None:
        if self._partial:
            self._add(self._partial)
            self._partial = b""
        self.closed.set()

    def _add(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip()
        if line:
            self.lines.append(line[:500])
            log.debug("MCP server %s stderr: %s", self.label, line)


class StdioTransport:
    """Opens a fresh server process for each connection; ``detail()`` is the stderr of the latest one."""

    def __init__(
        self,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str] | None,
        cwd: str | Path | None,
        label: str,
    ) -> None:
        self.params = StdioServerParameters(
            command=command, args=list(args), env=dict(env) if env is not None else None, cwd=cwd
        )
        self.label = label
        self._tail: _StderrTail | None = None

    def open(self) -> AbstractAsyncContextManager[TransportStreams]:
        return self._open()

    def detail(self) -> str:
        if self._tail is None or not self._tail.lines:
            return ""
        return "; stderr: " + " | ".join(self._tail.lines)

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[TransportStreams]:
        read_fd, write_fd = os.pipe()
        writer = os.fdopen(write_fd, "w")
        tail = self._tail = _StderrTail(self.label)
        pipe, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: tail, os.fdopen(read_fd, "rb"))
        try:
            async with stdio_client(self.params, errlog=writer) as streams:
                writer.close()  # the server holds its own copy; EOF arrives when it exits
                yield streams
        finally:
            writer.close()
            with anyio.move_on_after(_STDERR_SETTLE):
                await tail.closed.wait()
            pipe.close()
