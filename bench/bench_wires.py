"""Server CPU of each wire an app answers on, side by side on one server: the same app, the same answers.

Starts `loopwright serve` (one worker, SQLite file) with an app whose scripted model streams 20 chunks
per second (as bench_server.py), then per N and per wire opens N requests arriving at ``--rate`` per
second (every answer outlasts the ramp: all N are open together at its end) and reports:
- errors (non-200, no end of run);
- server CPU (user + system of the server process) per model chunk — the same denominator for every
  wire, since each request's answer is the same number of chunks — and its difference to Dify's wire;
- time to first byte: the first answer text minus the model's own first-chunk delay (p50 / p99) for
  the streaming wires; MCP answers once, at the end: its figure is the time to the result minus the
  model's own time for the whole answer.

The streaming wires are bench_server.py's (``--wire`` there runs one of them alone, with gaps and
memory): ``dify``, ``openai-chat``, ``openai-responses``, ``ag-ui``, read by its client. ``mcp`` is
``POST /mcp``, ``tools/call`` in the stateless 2026-07-28 revision without progress (a blocking run),
read here: its answer is one JSON body (an SSE stream when the call outlasts the SDK's 15 s ping).
Set ``PYTHONPATH`` to the ``src`` of the tree to measure (the server inherits it).

Run: .venv/bin/python bench/bench_wires.py [--rate R] [--wires dify,ag-ui,mcp] [N ...] (default 500)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import tempfile
import time
from pathlib import Path

import bench_server

CHUNK_DELAY = bench_server.CHUNK_DELAY
MCP = "mcp"
DEFAULT_WIRES = ("dify", "ag-ui", MCP)
MCP_HEADERS = (
    "Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: bench\r\n"
    "Accept: application/json, text/event-stream\r\n"
)
MCP_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def one_call(port: int, key: str) -> dict[str, object]:
    """One MCP ``tools/call``; the time to its result and whether it came."""
    params = {"name": "bench", "arguments": {"query": bench_server.QUESTION}, "_meta": MCP_META}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
    started = time.perf_counter()
    try:
        reader, writer, headers = await bench_server.post(port, key, "/mcp", body, MCP_HEADERS)
    except (OSError, bench_server.RefusedError) as e:
        return {"error": str(e) if isinstance(e, bench_server.RefusedError) else type(e).__name__}
    try:
        if "content-length" in headers:
            data = await reader.readexactly(int(headers["content-length"]))
        else:  # an SSE stream (a call past the SDK's ping interval): read to the result
            data = b""
            while (
                b'"result"' not in data
                and b'"error"' not in data
                and (chunk := await bench_server.read_chunk(reader))
            ):
                data += chunk
    except (OSError, asyncio.IncompleteReadError, ValueError) as e:
        return {"error": type(e).__name__}
    finally:
        writer.close()
    answered = b'"result"' in data and b'"isError":true' not in data
    return {"error": None if answered else "no result", "first_answer": time.perf_counter() - started}


async def run(wire: str, n: int, port: int, key: str, pid: int, rate: float, chunks: int) -> float:
    """N requests of one wire; prints its line and returns its server CPU per model chunk (µs)."""
    cpu_before = sum(bench_server.cpu_seconds(pid))
    streams = bench_server.Counter()
    tasks = []
    for i in range(n):
        if wire == MCP:
            request = one_call(port, key)
        else:
            request = bench_server.one_stream(port, key, f"{wire}-{n}-{i}", streams, bench_server.WIRES[wire])
        tasks.append(asyncio.create_task(request))
        await asyncio.sleep(1 / rate)
    results = [await t for t in tasks]
    cpu = sum(bench_server.cpu_seconds(pid)) - cpu_before
    errors = [r["error"] for r in results if r["error"]]
    model_time = CHUNK_DELAY * (chunks if wire == MCP else 1)
    firsts = sorted(float(r["first_answer"]) - model_time for r in results if r.get("first_answer"))  # type: ignore[arg-type]
    per_chunk = cpu / max(n * chunks, 1) * 1e6
    p50, p99 = bench_server.pct(firsts, 0.5), bench_server.pct(firsts, 0.99)
    label = "result overhead" if wire == MCP else "TTFB overhead"
    print(
        f"{wire:17s} N={n:5d} errors {len(errors)}  server CPU {cpu:6.1f} s = {per_chunk:6.1f} µs/chunk  "
        f"{label} p50 {p50:6.1f} p99 {p99:7.1f} ms"
    )
    if errors:
        print("   errors:", sorted(set(map(str, errors))))
    return per_chunk


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[500])
    parser.add_argument("--rate", type=float, default=200.0, help="arrivals per second (ramp)")
    known = (*bench_server.WIRES, MCP)
    parser.add_argument(
        "--wires", default=",".join(DEFAULT_WIRES), help=f"comma-separated, of {', '.join(known)}"
    )
    args = parser.parse_args()
    chosen = [w.strip() for w in args.wires.split(",") if w.strip()]
    unknown = set(chosen) - set(known)
    if unknown:
        parser.error(f"unknown wires: {', '.join(sorted(unknown))}")
    chunks = math.ceil((max(args.sizes) / args.rate + 2.0) / CHUNK_DELAY)
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}; "
        f"ramp at {args.rate:g}/s; answers of {chunks} chunks at {1 / CHUNK_DELAY:g}/s; "
        f"reference workload {bench_server.machine_speed_ms():.0f} ms (lower: a faster VM right now)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        env, key = bench_server.bench_app(Path(tmp), chunks, [])
        with bench_server.serving(env) as server:
            for n in args.sizes:
                costs = {
                    w: asyncio.run(run(w, n, server.port, key, server.pid, args.rate, chunks)) for w in chosen
                }
                if "dify" in costs:
                    against = ", ".join(
                        f"{w} {100 * (c / costs['dify'] - 1):+.0f} %" for w, c in costs.items() if w != "dify"
                    )
                    print(f"   N={n}: server CPU per model chunk against Dify's wire: {against}")


if __name__ == "__main__":
    main()
