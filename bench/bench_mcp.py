"""MCP tools: connect time and request round trips over stdio and streamable HTTP.

1. stdio: the real ``mcp-server-time`` from PyPI (a subprocess).
2. streamable HTTP: a small server written with the SDK, in its own process on 127.0.0.1 (allow-listed).

For each: the time to connect (start or reach the server, handshake), then the median and p90 of 50
round trips of
- ``tools/list`` with conversion to loopwright tools (the per-session cache is cleared each time),
- ``get_tools()`` as an agent run calls it (served from the cache),
- ``tools/call`` with conversion of the result to tool outputs.

Run: .venv/bin/python bench/bench_mcp.py
"""

from __future__ import annotations

import asyncio
import os
import platform
import socket
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from loopwright.tools.mcp import MCPServer
from loopwright.tools.net import NetworkPolicy

N = 50
HTTP_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer
s = MCPServer('bench', log_level='ERROR')

@s.tool()
def echo(text: str) -> str:
    '''Echo the text back.'''
    return text

@s.tool()
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

s.run(transport='streamable-http', host='127.0.0.1', port=int(sys.argv[1]))
"""


async def timed(fn: Callable[[], Awaitable[Any]], n: int = N) -> list[float]:
    await fn()  # warm-up
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def row(label: str, samples: list[float]) -> str:
    samples = sorted(samples)
    p90 = samples[int(len(samples) * 0.9) - 1]
    return f"  {label:<34} median {statistics.median(samples):8.3f} ms   p90 {p90:8.3f} ms"


async def measure(server: MCPServer, tool: str, args: dict[str, Any]) -> None:
    start = time.perf_counter()
    await server.connect()
    print(f"  {'connect (start + handshake)':<34} {(time.perf_counter() - start) * 1000:8.1f} ms")

    async def listing() -> None:
        server._forget()
        await server.list_tools()

    print(row("tools/list + conversion", await timed(listing)))
    print(row("get_tools() (cached)", await timed(server.get_tools)))
    print(row(f"tools/call {tool}", await timed(lambda: server.call_tool(tool, args))))
    await server.aclose()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_for_port(port: int) -> None:
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise RuntimeError(f"the HTTP MCP server did not listen on port {port}")


async def main() -> None:
    where = f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs"
    print(f"{where}; {N} samples each")

    print("stdio: mcp-server-time (PyPI)")
    stdio = MCPServer.stdio(sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"], name="time")
    await measure(stdio, "get_current_time", {"timezone": "Europe/Paris"})

    port = free_port()
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", HTTP_SERVER, str(port))
    try:
        await wait_for_port(port)
        print("streamable HTTP: SDK server in another process on 127.0.0.1")
        http = MCPServer.http(
            f"http://127.0.0.1:{port}/mcp", policy=NetworkPolicy.from_strings(["127.0.0.1"]), name="bench"
        )
        await measure(http, "add", {"a": 2, "b": 3})
    finally:
        proc.terminate()
        await proc.wait()


if __name__ == "__main__":
    asyncio.run(main())
