"""Events relayed to another worker: two ``loopwright serve`` processes on one PostgreSQL; ``--streams``
streams run on worker A while a follower of each re-attaches through worker B
(``GET /v1/chat-messages/{task_id}/events``) as soon as it knows the task. For every event, the relay
latency is the time it reached the follower through B minus the time it reached the streaming client
through A (both read here, on one clock; the first ``SKIP`` events, the follower's catch-up, are left
out). Each stream is ``CHUNKS`` deltas 50 ms apart (20 events/s), so N streams make ~20 × N events/s.

Prints, on one line each:
- the relay latency p50 / p90 / p99 (goal p50 ≤ 15 ms) and the events per second relayed (goal
  ≥ 2,000/s: ``--streams 100`` or more);
- the database writes: chunk rows and chunk writes (transactions that wrote chunks: one per distinct
  ``created_at``) per second, over the time the streams ran;
- the two servers' CPU (user + system) per event relayed, µs — A records and writes, B relays;
- that every follower got every event once, in order (the SSE ids), and the same events as the client;
- how many re-attaches came too early (404: the stream's row is written behind the run's first
  events) and were retried 20 ms later.

The client is a minimal HTTP/1.1 reader on asyncio streams (as in ``bench_server.py``), so that what
is measured is the servers, not the client's parsing. Set ``PYTHONPATH`` to the ``src`` of the tree to
measure (the servers inherit it).

Needs a PostgreSQL URL: ``--database-url`` or ``LOOPWRIGHT_TEST_POSTGRES_URL`` (its ``public`` schema
is emptied first: use a database for benchmarks only).

Run: .venv/bin/python bench/bench_relay.py [--streams 100] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_server import cpu_seconds  # noqa: E402
from bench.bench_soak import EXE, free_port  # noqa: E402

CHUNKS = 100
SKIP = 5  # the first events: the follower's catch-up from the store, not the live relay


def start(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [str(EXE), "serve", "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert server.stdout is not None
    server.stdout.readline()  # the ready line
    return server


class Stream:
    """The numbered events of one SSE response: arrival time by id, the ids in the order they came,
    the event names, and the task id (set ``known`` once it is)."""

    def __init__(self) -> None:
        self.arrivals: dict[int, float] = {}
        self.order: list[int] = []
        self.names: dict[int, bytes] = {}
        self.task_id = ""
        self.known = asyncio.Event()
        self.retries = 0  # re-attaches answered 404: too early


class NotYet(Exception):
    """A 404: the stream's row is written behind the run's first events, and was not there yet."""


async def read_sse(port: int, request: bytes, into: Stream) -> None:
    """Send ``request`` and read the SSE response (chunked transfer decoded by hand) until an event
    ``message_end`` or ``error``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        status = await reader.readline()
        if b" 404 " in status:
            raise NotYet
        if b" 200 " not in status:
            raise RuntimeError(f"HTTP {status.decode().strip()}")
        while (await reader.readline()) not in (b"\r\n", b""):
            pass  # headers
        buffer = b""
        while True:
            size = int((await reader.readline()).strip() or b"0", 16)
            if size == 0:
                return
            buffer += (await reader.readexactly(size + 2))[:-2]
            now = time.perf_counter()
            *frames, buffer = buffer.split(b"\n\n")
            for frame in frames:
                if not frame.startswith(b"id: "):
                    continue  # a ping
                line, _, data = frame.partition(b"\n")
                seq = int(line[4:])
                into.arrivals.setdefault(seq, now)
                into.order.append(seq)
                name = data[data.index(b'"event":"') + 9 :].split(b'"', 1)[0]
                into.names[seq] = name
                if not into.task_id:
                    into.task_id = str(json.loads(data[6:])["task_id"])
                    into.known.set()
                if name in (b"message_end", b"error"):
                    return
    finally:
        writer.close()


async def one(ports: list[int], key: str) -> tuple[Stream, Stream]:
    body = json.dumps(
        {"query": "Relay.", "user": "relay", "response_mode": "streaming", "inputs": {}}
    ).encode()
    post = (
        f"POST /v1/chat-messages HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    direct, relayed = Stream(), Stream()
    reader = asyncio.create_task(read_sse(ports[0], post, direct))
    await direct.known.wait()
    get = (
        f"GET /v1/chat-messages/{direct.task_id}/events?user=relay HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {key}\r\n\r\n"
    ).encode()
    for _ in range(100):
        try:
            await read_sse(ports[1], get, relayed)
            break
        except NotYet:
            relayed.retries += 1
            await asyncio.sleep(0.02)
    await reader
    return direct, relayed


def pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


async def chunk_writes(url: str) -> tuple[int, int]:
    """Chunk rows, and chunk writes (one ``created_at`` per write)."""
    from sqlalchemy import text

    from loopwright.store.db import Database

    db = Database(url)
    try:
        async with db.engine.connect() as conn:
            row = (
                await conn.execute(text("SELECT count(*), count(DISTINCT created_at) FROM run_events"))
            ).one()
    finally:
        await db.close()
    return int(row[0]), int(row[1])


async def main(streams: int, url: str) -> None:
    from sqlalchemy import text

    from loopwright.store.db import Database

    db = Database(url)
    async with db.engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await db.close()
    tmp = Path(tempfile.mkdtemp(prefix="loopwright-relay-"))
    script = tmp / "script.json"
    script.write_text(
        json.dumps({"replies": ["relay " * CHUNKS] * (streams + 10), "chunk_size": 6, "delay": 0.05})
    )
    env = {**os.environ, "DATABASE_URL": url}

    def cli(*args: str) -> str:
        return subprocess.run(
            [str(EXE), *args], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()

    app_id = cli("app", "create", "relay", "--model", f"scripted:{script}")
    key = cli("key", "create", "--app", app_id)
    ports = [free_port(), free_port()]
    servers = [start(env, p) for p in ports]
    try:
        cpu_before = [sum(cpu_seconds(s.pid)) for s in servers]
        started = time.perf_counter()
        results = await asyncio.gather(*(one(ports, key) for _ in range(streams)))
        elapsed = time.perf_counter() - started
        cpu = [sum(cpu_seconds(s.pid)) - before for s, before in zip(servers, cpu_before, strict=True)]
    finally:
        for s in servers:
            s.terminate()
            s.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    rows, writes = await chunk_writes(url)
    latencies = sorted(
        (relayed.arrivals[s] - direct.arrivals[s]) * 1000
        for direct, relayed in results
        for s in direct.arrivals
        if s in relayed.arrivals and s > SKIP
    )
    events = sum(len(relayed.order) for _, relayed in results)
    whole = sum(
        relayed.order == list(range(1, len(direct.order) + 1)) and relayed.names == direct.names
        for direct, relayed in results
    )
    print(
        f"streams: {streams}  events relayed: {events} in {elapsed:.1f} s = {events / elapsed:,.0f} events/s"
    )
    print(
        f"relay latency to the other worker: p50 {pct(latencies, 0.5):.1f} ms"
        f"  p90 {pct(latencies, 0.9):.1f} ms  p99 {pct(latencies, 0.99):.1f} ms  (goal p50 <= 15 ms)"
    )
    print(
        f"database: {rows} chunk rows = {rows / elapsed:,.0f} rows/s, {writes} chunk writes = "
        f"{writes / elapsed:,.0f} writes/s"
    )
    print(
        f"server CPU: A (runs, records) {cpu[0] / max(events, 1) * 1e6:.1f} µs/event, "
        f"B (relays) {cpu[1] / max(events, 1) * 1e6:.1f} µs/event"
    )
    print(f"followers that got every event once, in order, as sent live: {whole} of {streams}")
    retried = sum(relayed.retries for _, relayed in results)
    if retried:
        print(f"re-attaches answered 404 because the stream's row was not written yet, retried: {retried}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--database-url", default=os.environ.get("LOOPWRIGHT_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    if not args.database_url:
        sys.exit("a PostgreSQL URL is needed: --database-url or LOOPWRIGHT_TEST_POSTGRES_URL")
    asyncio.run(main(args.streams, args.database_url))
