"""Events relayed to another worker: two ``loopwright serve`` processes on one PostgreSQL; ``--streams``
streams run on worker A while a follower of each re-attaches through worker B
(``GET /v1/chat-messages/{task_id}/events``). For every event, the relay latency is the time it
reached the follower through B minus the time it reached the streaming client through A (both read
here, on one clock). Reports the latency p50 / p99 (goal p50 ≤ 15 ms; the 50 ms write batching is
most of it) and the events per second relayed.

Needs a PostgreSQL URL: ``--database-url`` or ``LOOPWRIGHT_TEST_POSTGRES_URL`` (its ``public`` schema
is emptied first: use a database for benchmarks only).

Run: .venv/bin/python bench/bench_relay.py [--streams 200] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_soak import EXE, frames, free_port  # noqa: E402

CHUNKS = 100


def start(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [str(EXE), "serve", "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert server.stdout is not None
    server.stdout.readline()  # the ready line
    return server


async def timed(
    response: httpx.Response, arrivals: dict[int, float], task: list[str], known: asyncio.Event | None = None
) -> None:
    buffer = ""
    async for text in response.aiter_text():
        now = time.perf_counter()
        got, buffer = frames(buffer + text)
        for seq, event in got:
            arrivals.setdefault(seq, now)
            if not task and "task_id" in event:
                task.append(str(event["task_id"]))
                if known is not None:
                    known.set()
            if event["event"] in ("message_end", "error"):
                return


async def one(a: httpx.AsyncClient, b: httpx.AsyncClient, headers: dict[str, str]) -> list[float]:
    body = {"query": "Relay.", "user": "relay", "response_mode": "streaming", "inputs": {}}
    direct: dict[int, float] = {}
    relayed: dict[int, float] = {}
    task: list[str] = []
    async with a.stream("POST", "/v1/chat-messages", json=body, headers=headers) as r:
        known = asyncio.Event()
        reader = asyncio.create_task(timed(r, direct, task, known))
        await known.wait()
        async with b.stream("GET", f"/v1/chat-messages/{task[0]}/events?user=relay", headers=headers) as f:
            await timed(f, relayed, [])
        await reader
    return [relayed[s] - direct[s] for s in direct if s in relayed and s > 5]  # live part, past the catch-up


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
    headers = {"Authorization": f"Bearer {cli('key', 'create', '--app', app_id)}"}
    ports = [free_port(), free_port()]
    servers = [start(env, p) for p in ports]
    limits = httpx.Limits(max_connections=streams * 2)
    try:
        async with (
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports[0]}", timeout=120, limits=limits) as a,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports[1]}", timeout=120, limits=limits) as b,
        ):
            started = time.perf_counter()
            results = await asyncio.gather(*(one(a, b, headers) for _ in range(streams)))
            elapsed = time.perf_counter() - started
    finally:
        for s in servers:
            s.terminate()
            s.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    latencies = sorted(x * 1000 for r in results for x in r)
    events = sum(len(r) for r in results)
    p99 = latencies[int(len(latencies) * 0.99)] if latencies else float("nan")
    print(f"streams: {streams}  events relayed: {events}  in {elapsed:.1f} s: {events / elapsed:.0f}/s")
    print(f"relay latency to the other worker: p50 {statistics.median(latencies):.1f} ms  p99 {p99:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--database-url", default=os.environ.get("LOOPWRIGHT_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    if not args.database_url:
        sys.exit("a PostgreSQL URL is needed: --database-url or LOOPWRIGHT_TEST_POSTGRES_URL")
    asyncio.run(main(args.streams, args.database_url))
