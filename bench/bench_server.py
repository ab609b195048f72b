"""Simultaneous streaming conversations against one server process.

Starts `loopwright serve` (one worker, SQLite file) in a subprocess with an app whose scripted model
streams 20 chunks per second, then, per N, opens N streaming chats from this process and reports:
- errors (non-200, no message_end) and lost messages (not saved as answered);
- the gap between consecutive events of a stream (p50 / p99 / max, over all streams) and the part of
  it the server added: the gap minus the model's own 50 ms between chunks (p99);
- server overhead on time to first byte: the first agent_message minus the model's own first-chunk
  delay (p50 / p99), and how many streams were open at once at the peak;
- server memory per open stream (peak RSS above idle, divided by N).

Two ways of arriving:
- ramp (default): requests arrive at a steady rate (``--rate`` per second) and every answer lasts
  longer than the ramp, so all N streams are open together at the end of it — a loaded server
  taking new conversations;
- burst: all N requests at the same instant (the worst case: each waits for the set-up of those
  before it on one core).

The client is a minimal HTTP/1.1 reader on asyncio streams, so that it costs the second core little
and what is measured is the server.

``--metrics`` runs the sizes against a server without Prometheus metrics, then against one with
them (``LOOPWRIGHT_METRICS_TOKEN`` set, /metrics scraped once at the end): the cost of the metrics is
the difference in server CPU per event between the two.

``--wire`` picks the protocol the streams speak: Dify's Service API (default), OpenAI's Chat
Completions (``openai-chat``) or Responses (``openai-responses``), AG-UI (``ag-ui``) — the same runs,
another encoder;
compare their server CPU per model chunk (events differ in number between wires: the figure printed
per event counts each wire's own data frames, and ``µs/chunk`` divides by the model's chunks).

``--journal-off`` serves with ``LOOPWRIGHT_RESUMABLE_STREAMS=false`` (no event journal: the cost of
the journal is the difference in server CPU per event and memory per stream with and without it).
Set ``PYTHONPATH`` to the ``src`` of the tree to measure (the server inherits it).

Run: .venv/bin/python bench/bench_server.py [--burst] [--rate R] [--metrics] [--journal-off]
[--wire dify|openai-chat|openai-responses|ag-ui] [N ...]
(default sizes: 100 500 1000)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

METRICS_TOKEN = "bench-metrics"  # noqa: S105 - a bench's own local server
CHUNK_DELAY = 0.05  # 20 chunks per second per stream
CHUNK_SIZE = 4
CHUNKS_BURST = 40  # 2 s answers when everything arrives at once


@dataclass(frozen=True)
class Wire:
    """How one protocol's streaming request is made and read: its path, its body, and which data
    frames are the first answer text and the end."""

    path: str
    body: Callable[[str], dict[str, object]]
    is_text: Callable[[bytes], bool]
    is_end: Callable[[bytes], bool]


QUESTION = "Tell me something."
WIRES = {
    "dify": Wire(
        "/v1/chat-messages",
        lambda user: {"query": QUESTION, "user": user, "response_mode": "streaming", "inputs": {}},
        lambda data: json.loads(data)["event"] == "agent_message",
        lambda data: json.loads(data)["event"] == "message_end",
    ),
    "openai-chat": Wire(
        "/v1/chat/completions",
        lambda user: {
            "model": "bench",
            "messages": [{"role": "user", "content": QUESTION}],
            "stream": True,
            "user": user,
        },
        lambda data: b'"content":' in data,
        lambda data: data == b"[DONE]",
    ),
    "openai-responses": Wire(
        "/v1/responses",
        lambda user: {"model": "bench", "input": QUESTION, "stream": True, "user": user},
        lambda data: data.startswith(b'{"type":"response.output_text.delta"'),
        lambda data: data.startswith(b'{"type":"response.completed"'),
    ),
    "ag-ui": Wire(
        "/ag-ui",
        lambda user: {
            "threadId": str(uuid.uuid4()),
            "runId": str(uuid.uuid4()),
            "messages": [{"id": "question", "role": "user", "content": QUESTION}],
            "forwardedProps": {"user": user},
        },
        lambda data: data.startswith(b'{"type":"TEXT_MESSAGE_CONTENT"'),
        lambda data: data.startswith(b'{"type":"RUN_FINISHED"'),
    ),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def process_tree(pid: int) -> list[int]:
    """The process and its descendants (the workers of ``serve --workers``)."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        for child in children:
            pids.extend(process_tree(int(child)))
    return pids


def rss_kib(pid: int) -> int:
    """Resident memory of a process tree."""
    total = 0
    for p in process_tree(pid):
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU time of a process tree so far (robust to other load on the machine)."""
    user = system = 0
    for p in process_tree(pid):
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        user += int(fields[11])
        system += int(fields[12])
    tick = os.sysconf("SC_CLK_TCK")
    return user / tick, system / tick


def machine_speed_ms() -> float:
    """CPU time of a fixed pure-Python workload (best of 5): this VM's speed moves from run to run,
    and the 1,000-stream figures move with it, so every run reports the speed it was measured at."""
    best = math.inf
    for _ in range(5):
        started = time.process_time()
        total = 0
        for i in range(50_000):
            total += len(json.dumps({"event": "agent_message", "answer": str(i), "n": [i, i]}))
        best = min(best, time.process_time() - started)
    return best * 1000


def cli(*args: str, env: dict[str, str]) -> str:
    exe = Path(sys.executable).with_name("loopwright")
    return subprocess.run(
        [str(exe), *args], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def bench_app(folder: Path, chunks: int, features: list[str]) -> tuple[dict[str, str], str]:
    """An app in a new SQLite file under ``folder`` whose scripted model streams ``chunks`` chunks of
    4 characters at 20 a second, again for every message: the server's environment and the app's key."""
    script = folder / "script.json"
    reply = "word " * (chunks * CHUNK_SIZE // 5)
    script.write_text(
        json.dumps(
            {
                "replies": [{"text": reply}],
                "chunk_size": CHUNK_SIZE,
                "delay": CHUNK_DELAY,
                "cycle": True,
                "features": features,
            }
        )
    )
    env = {**os.environ, "LOOPWRIGHT_DB": str(folder / "bench.db")}
    env.pop("DATABASE_URL", None)
    app_id = cli("app", "create", "bench", "--model", f"scripted:{script}", env=env)
    return env, cli("key", "create", "--app", app_id, env=env)


class Counter:
    def __init__(self) -> None:
        self.open = 0
        self.peak = 0

    def enter(self) -> None:
        self.open += 1
        self.peak = max(self.peak, self.open)

    def leave(self) -> None:
        self.open -= 1


class RefusedError(Exception):
    """The server answered something other than 200."""


async def post(
    port: int, key: str, path: str, body: bytes, extra_headers: str = ""
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, dict[str, str]]:
    """POST ``body`` on a new connection and read the status and headers; the caller reads the body
    and closes the writer. Raises ``OSError`` (no connection) or ``RefusedError`` (not 200)."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n{extra_headers}"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head + body)
        status = await reader.readline()
        if b" 200 " not in status:
            raise RefusedError(f"HTTP {status.decode().strip()}")
        headers = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
    except BaseException:
        writer.close()
        raise
    return reader, writer, headers


async def read_chunk(reader: asyncio.StreamReader) -> bytes:
    """The next chunk of a chunked body (decoded by hand: the client's own cost stays out of the
    figures); empty at the body's end."""
    size = int((await reader.readline()).strip() or b"0", 16)
    return (await reader.readexactly(size + 2))[:-2] if size else b""


@dataclass(frozen=True)
class Served:
    port: int
    pid: int


@contextmanager
def serving(env: dict[str, str], workers: int = 1) -> Iterator[Served]:
    """``loopwright serve`` on a free port, answering before this returns; stopped after."""
    port = free_port()
    exe = Path(sys.executable).with_name("loopwright")
    server = subprocess.Popen(
        [str(exe), "serve", "--port", str(port), "--workers", str(workers)],
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
        yield Served(port, server.pid)
    finally:
        server.terminate()
        server.wait(timeout=60)


async def one_stream(port: int, key: str, user: str, streams: Counter, wire: Wire) -> dict[str, object]:
    """POST a streaming chat and time every SSE event (chunked transfer decoding by hand)."""
    body = json.dumps(wire.body(user)).encode()
    started = time.perf_counter()
    arrivals: list[float] = []
    first_answer: float | None = None
    ended = False
    try:
        reader, writer, _ = await post(port, key, wire.path, body)
    except (OSError, RefusedError) as e:
        return {"error": str(e) if isinstance(e, RefusedError) else type(e).__name__}
    streams.enter()
    try:
        buffer = b""
        while not ended and (chunk := await read_chunk(reader)):
            buffer += chunk
            now = time.perf_counter()
            *frames, buffer = buffer.split(b"\n\n")
            for frame in frames:
                # the data line, after an event's number (resumable streams) or name (Responses)
                data = next((line[6:] for line in frame.split(b"\n") if line.startswith(b"data: ")), None)
                if data is None:
                    continue  # a ping
                arrivals.append(now)
                if first_answer is None and wire.is_text(data):
                    first_answer = now - started
                elif wire.is_end(data):
                    ended = True
    except (OSError, asyncio.IncompleteReadError, ValueError) as e:
        return {"error": type(e).__name__}
    finally:
        streams.leave()
        writer.close()
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    first_event = arrivals[0] - started if arrivals else None
    return {
        "error": None if ended else "no message_end",
        "gaps": gaps,
        "first_answer": first_answer,
        "first_event": first_event,
    }


def pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else float("nan")


async def run(
    n: int, port: int, key: str, pid: int, *, rate: float | None, tag: str, wire: Wire, chunks: int
) -> None:
    idle = rss_kib(pid)
    peak = idle
    cpu_before = cpu_seconds(pid)
    streams = Counter()
    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(one_stream(port, key, f"{tag}-{i}", streams, wire)))
        if rate:
            await asyncio.sleep(1 / rate)
        if i % 50 == 0:
            peak = max(peak, rss_kib(pid))
    while not all(t.done() for t in tasks):
        peak = max(peak, rss_kib(pid))
        await asyncio.sleep(0.1)
    results = [t.result() for t in tasks]
    user, system = (after - before for after, before in zip(cpu_seconds(pid), cpu_before, strict=True))
    cpu = user + system
    events = sum(len(r.get("gaps", [])) + 1 for r in results)  # type: ignore[arg-type]
    errors = [r["error"] for r in results if r["error"]]
    gaps = sorted(g for r in results for g in r.get("gaps", []))  # type: ignore[attr-defined]
    excess = [max(0.0, g - CHUNK_DELAY) for g in gaps]
    firsts = sorted(r["first_answer"] - CHUNK_DELAY for r in results if r.get("first_answer") is not None)  # type: ignore[operator]
    # The first event (the round's opening agent_thought) comes before the model's first chunk: the
    # server's set-up of the request alone.
    setups = sorted(r["first_event"] for r in results if r.get("first_event") is not None)  # type: ignore[misc]
    longest = gaps[-1] * 1000 if gaps else float("nan")
    print(
        f"N={n:5d} open at peak {streams.peak:5d}  errors {len(errors)}  "
        f"gap p50 {pct(gaps, 0.5):5.1f} p99 {pct(gaps, 0.99):6.1f} max {longest:6.1f} ms  "
        f"added p99 {pct(excess, 0.99):6.1f} ms  "
        f"TTFB overhead p50 {pct(firsts, 0.5):6.1f} p99 {pct(firsts, 0.99):7.1f} ms "
        f"(first event p50 {pct(setups, 0.5):5.1f} ms)  "
        f"memory {(peak - idle) / max(n, 1):5.1f} KiB/stream  "
        f"server CPU {cpu:5.1f} s = {cpu / max(events, 1) * 1e6:5.1f} µs/event "
        f"{cpu / max(n * chunks, 1) * 1e6:5.1f} µs/chunk ({system / max(cpu, 1e-9):.0%} system)"
    )
    if errors:
        print("   errors:", sorted(set(map(str, errors))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[100, 500, 1000])
    parser.add_argument("--burst", action="store_true", help="all N requests at once")
    parser.add_argument("--rate", type=float, default=200.0, help="arrivals per second (ramp)")
    parser.add_argument(
        "--function-calling", action="store_true", help="a tool-calling model (default: ReAct parsing)"
    )
    parser.add_argument("--workers", type=int, default=1, help="server worker processes")
    parser.add_argument(
        "--metrics", action="store_true", help="run the sizes twice: Prometheus metrics off, then on"
    )
    parser.add_argument(
        "--journal-off", action="store_true", help="serve with LOOPWRIGHT_RESUMABLE_STREAMS=false"
    )
    parser.add_argument(
        "--wire", choices=sorted(WIRES), default="dify", help="the protocol the streams speak"
    )
    args = parser.parse_args()
    largest = max(args.sizes)
    if args.burst:
        chunks = CHUNKS_BURST
    else:  # every answer outlasts the longest ramp, so all N are open together at its end
        chunks = math.ceil((largest / args.rate + 2.0) / CHUNK_DELAY)
    mode = "burst" if args.burst else f"ramp at {args.rate:g}/s"
    mode += ", function calling" if args.function_calling else ", ReAct"
    mode += f", {args.workers} worker{'s' if args.workers > 1 else ''}"
    mode += ", stream journal off" if args.journal_off else ", stream journal on"
    mode += f", wire {args.wire}"
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}; "
        f"{mode}; answers of {chunks} chunks at {1 / CHUNK_DELAY:g}/s; "
        f"reference workload {machine_speed_ms():.0f} ms (lower: a faster VM right now)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        features = ["tool-call", "stream-tool-call"] if args.function_calling else []
        env, key = bench_app(Path(tmp), chunks, features)
        if args.journal_off:
            env["LOOPWRIGHT_RESUMABLE_STREAMS"] = "false"
        # --metrics: the same sizes against a server without and then with Prometheus metrics.
        modes = [("off", None), ("on", METRICS_TOKEN)] if args.metrics else [("", None)]
        for label, token in modes:
            if label:
                print(f"-- metrics {label}")
            server_env = {**env, "LOOPWRIGHT_METRICS_TOKEN": token} if token else env
            _serve_and_run(args, server_env, key, token, tag=label, chunks=chunks)
        total = sum(args.sizes) * len(modes)
        waited = time.perf_counter()
        saved = _count_saved(Path(tmp) / "bench.db")
        while saved < total and time.perf_counter() - waited < 30:
            time.sleep(0.2)
            saved = _count_saved(Path(tmp) / "bench.db")
        print(
            f"messages saved with an answer: {saved} of {total} (lost: {total - saved}); "
            f"the last saved {time.perf_counter() - waited:.1f} s after the last message_end"
        )


def _serve_and_run(
    args: argparse.Namespace, env: dict[str, str], key: str, token: str | None, *, tag: str, chunks: int
) -> None:
    """Start a server, run every size against it, scrape /metrics once when it has them, stop it."""
    with serving(env, args.workers) as server:
        port = server.port
        for i, n in enumerate(args.sizes):
            rate = None if args.burst else args.rate
            wire = WIRES[args.wire]
            asyncio.run(run(n, port, key, server.pid, rate=rate, tag=f"{tag}r{i}", wire=wire, chunks=chunks))
        if token:
            r = httpx.get(
                f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=10
            )
            runs = sum(
                float(line.rsplit(" ", 1)[1])
                for line in r.text.splitlines()
                if line.startswith("loopwright_runs_total{")
            )
            print(
                f"   /metrics: HTTP {r.status_code}, {len(r.content)} bytes, loopwright_runs_total {runs:g}"
            )


def _count_saved(path: Path) -> int:
    import sqlite3

    with sqlite3.connect(path) as conn:
        row = conn.execute(
            "select count(*) from messages where status = 'normal' and answer != ''"
        ).fetchone()
    return int(row[0])


if __name__ == "__main__":
    main()
