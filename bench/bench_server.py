"""Concurrent streaming conversations against one server process.

Starts `loopwright serve` (one worker, SQLite file) in a subprocess with an app whose scripted model
streams 20 chunks per second (40 chunks: 2 s per answer), then opens N streaming chats at once from
this process and reports, per N:
- errors (non-200, no message_end) and lost messages (not saved as answered);
- the gap between consecutive events of a stream (p50 / p99 / max, over all streams);
- server overhead on time to first byte: first agent_message minus the model's own first-chunk delay;
- server memory per open stream (peak RSS above idle, divided by N).

Run: .venv/bin/python bench/bench_server.py [N ...]   (default: 100 500 1000)
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

CHUNK_DELAY = 0.05  # 20 chunks per second per stream
CHUNKS = 40


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cli(*args: str, env: dict[str, str]) -> str:
    exe = Path(sys.executable).with_name("loopwright")
    return subprocess.run(
        [str(exe), *args], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


async def one_stream(client: httpx.AsyncClient, url: str, key: str, user: str) -> dict[str, object]:
    body = {"query": "Tell me something.", "user": user, "response_mode": "streaming", "inputs": {}}
    started = time.perf_counter()
    arrivals: list[float] = []
    first_answer: float | None = None
    ended = False
    try:
        async with client.stream(
            "POST", url, json=body, headers={"Authorization": f"Bearer {key}"}
        ) as response:
            if response.status_code != 200:
                return {"error": f"HTTP {response.status_code}"}
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                now = time.perf_counter()
                arrivals.append(now)
                event = json.loads(line[6:])["event"]
                if event == "agent_message" and first_answer is None:
                    first_answer = now - started
                elif event == "message_end":
                    ended = True
    except (httpx.HTTPError, OSError) as e:
        return {"error": type(e).__name__}
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    return {"error": None if ended else "no message_end", "gaps": gaps, "first_answer": first_answer}


async def run(n: int, url: str, key: str, pid: int) -> None:
    idle = rss_kib(pid)
    peak = idle
    limits = httpx.Limits(max_connections=n + 16, max_keepalive_connections=n + 16)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(120.0)) as client:
        tasks = [asyncio.create_task(one_stream(client, url, key, f"user-{i}")) for i in range(n)]
        while not all(t.done() for t in tasks):
            peak = max(peak, rss_kib(pid))
            await asyncio.sleep(0.1)
        results = [t.result() for t in tasks]
    errors = [r["error"] for r in results if r["error"]]
    gaps = sorted(g for r in results for g in r.get("gaps", []))  # type: ignore[attr-defined]
    firsts = sorted(r["first_answer"] - CHUNK_DELAY for r in results if r.get("first_answer") is not None)  # type: ignore[operator]

    def pct(values: list[float], q: float) -> float:
        return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else float("nan")

    longest = gaps[-1] * 1000 if gaps else float("nan")
    print(
        f"N={n:5d}  errors {len(errors)}  gap p50 {pct(gaps, 0.5):6.1f} ms  p99 {pct(gaps, 0.99):6.1f} ms  "
        f"max {longest:7.1f} ms  TTFB overhead p50 {pct(firsts, 0.5):6.1f} ms "
        f"p99 {pct(firsts, 0.99):7.1f} ms  memory {(peak - idle) / max(n, 1):6.1f} KiB/stream"
    )
    if errors:
        print("   errors:", sorted(set(map(str, errors))))


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [100, 500, 1000]
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        reply = "word " * (CHUNKS * 4 // 5)
        script.write_text(
            json.dumps({"replies": [{"text": reply}], "chunk_size": 4, "delay": CHUNK_DELAY, "cycle": True})
        )
        env = {**os.environ, "LOOPWRIGHT_DB": str(Path(tmp) / "bench.db")}
        env.pop("DATABASE_URL", None)
        app_id = cli("app", "create", "bench", "--model", f"scripted:{script}", env=env)
        key = cli("key", "create", "--app", app_id, env=env)
        port = free_port()
        exe = Path(sys.executable).with_name("loopwright")
        server = subprocess.Popen(
            [str(exe), "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    httpx.get(f"{base}/v1/info", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            for n in sizes:
                asyncio.run(run(n, f"{base}/v1/chat-messages", key, server.pid))
            saved = _count_saved(Path(tmp) / "bench.db")
            print(f"messages saved with an answer: {saved} of {sum(sizes)} (lost: {sum(sizes) - saved})")
        finally:
            server.terminate()
            server.wait(timeout=30)


def _count_saved(path: Path) -> int:
    import sqlite3

    with sqlite3.connect(path) as conn:
        row = conn.execute(
            "select count(*) from messages where status = 'normal' and answer != ''"
        ).fetchone()
    return int(row[0])


if __name__ == "__main__":
    main()
