"""Server CPU per event of each wire an app answers on, against Dify's: the same app, the same answers.

Starts `loopwright serve` (one worker, SQLite file) with an app whose scripted model streams 20 chunks
per second (as bench_server.py), then per wire and per N opens N requests arriving at ``--rate`` per
second (every answer outlasts the ramp: all N are open together at its end) and reports:
- errors (non-200, no end of run);
- server CPU (user + system of the server process, robust to other load) per model chunk — the same
  denominator for every wire, since each request's answer is the same number of chunks — and per
  frame the wire sent (for the streaming wires), with the difference to Dify's wire in per cent;
- time to first byte: the first answer text minus the model's own first-chunk delay (p50 / p99), for
  the streaming wires; MCP answers once, at the end: its figure is the time to the result minus the
  model's own time for the whole answer.

Wires: ``dify`` (POST /v1/chat-messages, streaming), ``ag-ui`` (POST /ag-ui), ``mcp`` (POST /mcp,
tools/call in the stateless 2026-07-28 revision, no progress: a blocking run). The client is a minimal
HTTP/1.1 reader on asyncio streams (bench_server.py's approach), so that it costs the second core
little. Set ``PYTHONPATH`` to the ``src`` of the tree to measure (the server inherits it).

Run: .venv/bin/python bench/bench_wires.py [--rate R] [--wires dify,ag-ui,mcp] [N ...] (default 500)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import bench_server
import httpx

CHUNK_DELAY = bench_server.CHUNK_DELAY
CHUNK_SIZE = 4
WIRES = ("dify", "ag-ui", "mcp")
MCP_HEADERS = {
    "Mcp-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "bench",
    "Accept": "application/json, text/event-stream",
}
MCP_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@dataclass(frozen=True)
class Wire:
    """One wire's request and how its frames read: the answer's text, the end of the run."""

    path: str
    headers: dict[str, str]
    body: Callable[[str], dict[str, object]]
    answer: bytes  # a frame holding a piece of the answer contains this
    end: tuple[bytes, ...]  # a frame (or JSON body) that ends the run contains one of these


def _wires() -> dict[str, Wire]:
    return {
        "dify": Wire(
            "/v1/chat-messages",
            {},
            lambda user: {
                "query": "Tell me something.",
                "user": user,
                "response_mode": "streaming",
                "inputs": {},
            },
            b'"event":"agent_message"',
            (b'"event":"message_end"', b'"event":"error"'),
        ),
        "ag-ui": Wire(
            "/ag-ui",
            {"Accept": "text/event-stream"},
            lambda user: {
                "threadId": str(uuid.uuid4()),
                "runId": str(uuid.uuid4()),
                "messages": [{"id": "m1", "role": "user", "content": "Tell me something."}],
                "forwardedProps": {"user": user},
            },
            b'"type":"TEXT_MESSAGE_CONTENT"',
            (b'"type":"RUN_FINISHED"', b'"type":"RUN_ERROR"'),
        ),
        "mcp": Wire(
            "/mcp",
            MCP_HEADERS,
            lambda user: {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "bench", "arguments": {"query": "Tell me something."}, "_meta": MCP_META},
            },
            b'"result"',  # the one answer, at the end
            (b'"result"', b'"error"'),
        ),
    }


async def one_request(port: int, key: str, wire: Wire, user: str) -> dict[str, object]:
    """One request of ``wire``; the time to its first answer frame and whether the run ended."""
    body = json.dumps(wire.body(user)).encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in wire.headers.items())
    head = (
        f"POST {wire.path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n{extra}"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    started = time.perf_counter()
    first_answer: float | None = None
    frames = 0
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as e:
        return {"error": type(e).__name__}
    try:
        writer.write(head + body)
        status = await reader.readline()
        if b" 200 " not in status:
            return {"error": f"HTTP {status.decode().strip()}"}
        length = None
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        if length is not None:  # one JSON body (MCP's result when it came quickly)
            data = await reader.readexactly(length)
            ended = any(marker in data for marker in wire.end)
            return {"error": None if ended else "no end", "first": time.perf_counter() - started, "frames": 0}
        buffer, ended = b"", False
        while not ended:
            size = int((await reader.readline()).strip() or b"0", 16)
            if size == 0:
                break
            buffer += await reader.readexactly(size + 2)
            buffer = buffer[:-2] if buffer.endswith(b"\r\n") else buffer
            now = time.perf_counter()
            *chunks, buffer = buffer.split(b"\n\n")
            for frame in chunks:
                if b"data: " not in frame:
                    continue  # a ping (an event line or a comment)
                frames += 1
                if first_answer is None and wire.answer in frame:
                    first_answer = now - started
                if any(marker in frame for marker in wire.end):
                    ended = True
    except (OSError, asyncio.IncompleteReadError, ValueError) as e:
        return {"error": type(e).__name__}
    finally:
        writer.close()
    return {"error": None if ended else "no end", "first": first_answer, "frames": frames}


async def run(
    name: str, wire: Wire, n: int, port: int, key: str, pid: int, rate: float, chunks: int
) -> float:
    """N requests of one wire; prints its line and returns its server CPU per model chunk (µs)."""
    cpu_before = sum(bench_server.cpu_seconds(pid))
    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(one_request(port, key, wire, f"{name}-{n}-{i}")))
        await asyncio.sleep(1 / rate)
    results = [await t for t in tasks]
    cpu = sum(bench_server.cpu_seconds(pid)) - cpu_before
    errors = [r["error"] for r in results if r["error"]]
    frames = sum(int(r.get("frames") or 0) for r in results)  # type: ignore[call-overload]
    model_time = CHUNK_DELAY if name != "mcp" else CHUNK_DELAY * chunks
    firsts = sorted(float(r["first"]) - model_time for r in results if r.get("first") is not None)  # type: ignore[arg-type]
    per_chunk = cpu / max(n * chunks, 1) * 1e6
    per_frame = f"{cpu / frames * 1e6:6.1f} µs/frame" if frames else "   (one result per call)"
    label = "TTFB overhead" if name != "mcp" else "result overhead"
    p50, p99 = bench_server.pct(firsts, 0.5), bench_server.pct(firsts, 0.99)
    print(
        f"{name:6s} N={n:5d} errors {len(errors)}  server CPU {cpu:6.1f} s = {per_chunk:6.1f} µs/chunk, "
        f"{per_frame}  {label} p50 {p50:6.1f} p99 {p99:7.1f} ms"
    )
    if errors:
        print("   errors:", sorted(set(map(str, errors))))
    return per_chunk


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[500])
    parser.add_argument("--rate", type=float, default=200.0, help="arrivals per second (ramp)")
    parser.add_argument("--wires", default=",".join(WIRES), help=f"comma-separated, of {', '.join(WIRES)}")
    args = parser.parse_args()
    chosen = [w.strip() for w in args.wires.split(",") if w.strip()]
    unknown = set(chosen) - set(WIRES)
    if unknown:
        parser.error(f"unknown wires: {', '.join(sorted(unknown))}")
    chunks = math.ceil((max(args.sizes) / args.rate + 2.0) / CHUNK_DELAY)
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}; "
        f"ramp at {args.rate:g}/s; answers of {chunks} chunks at {1 / CHUNK_DELAY:g}/s; "
        f"reference workload {bench_server.machine_speed_ms():.0f} ms (lower: a faster VM right now)"
    )
    wires = _wires()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        reply = "word " * (chunks * CHUNK_SIZE // 5)
        script.write_text(
            json.dumps(
                {
                    "replies": [{"text": reply}],
                    "chunk_size": CHUNK_SIZE,
                    "delay": CHUNK_DELAY,
                    "cycle": True,
                    "features": [],
                }
            )
        )
        env = {**os.environ, "LOOPWRIGHT_DB": str(Path(tmp) / "bench.db")}
        env.pop("DATABASE_URL", None)
        app_id = bench_server.cli("app", "create", "bench", "--model", f"scripted:{script}", env=env)
        key = bench_server.cli("key", "create", "--app", app_id, env=env)
        port = bench_server.free_port()
        exe = Path(sys.executable).with_name("loopwright")
        server = subprocess.Popen(
            [str(exe), "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(100):
                try:
                    httpx.get(f"http://127.0.0.1:{port}/v1/info", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            for n in args.sizes:
                costs = {
                    w: asyncio.run(run(w, wires[w], n, port, key, server.pid, args.rate, chunks))
                    for w in chosen
                }
                if "dify" in costs:
                    against = ", ".join(
                        f"{w} {100 * (c / costs['dify'] - 1):+.0f} %" for w, c in costs.items() if w != "dify"
                    )
                    print(f"   N={n}: CPU per model chunk against Dify's wire: {against}")
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
