"""A soak: ``--streams`` clients (1,000 by default) keep streaming from one ``loopwright serve`` worker
(SQLite file) for ``--minutes`` (10), each dropping its stream at a random point half of the time and
re-attaching (``GET /v1/chat-messages/{task_id}/events`` with ``Last-Event-ID``) for the rest.

With ``--workers N`` (N > 1) the clients go through Debian's nginx (deploy/nginx/sse-proxy.conf, round
robin, no sticky sessions) to N ``loopwright serve`` processes on one PostgreSQL database
(``--url``, default LOOPWRIGHT_TEST_POSTGRES_URL; its ``public`` schema is recreated): a re-attach
reaches any worker, most often not the one running the message.

Reports: messages, errors (non-200, a stream without message_end, ids not 1…n once each across the
drop and the re-attach), messages not stored as answered at the end, the server's RSS every
minute and at the end (the goal: the end within 10 % of minute 2), events received, and per two
minutes the gap a client saw between two deltas beyond the model's own 50 ms (p50, p99: the goal
is a stable p99).

Run: .venv/bin/python bench/bench_soak.py [--streams 1000] [--minutes 10] [--seed 1] [--workers 1] [--url …]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import sqlalchemy

from loopwright.store.db import Database

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.test_nginx_workers import NGINX, nginx_config, wait_until_up  # noqa: E402

EXE = Path(sys.executable).with_name("loopwright")
ANSWER = "soak " * 100  # 100 chunks of 5 characters at 20 a second: 5 s per answer
DELAY = 0.05  # the scripted model's delay between chunks (s)
WINDOW = 120  # seconds per line of the added-gap report


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def frames(buffer: str) -> tuple[list[tuple[int, dict[str, object]]], str]:
    *whole, rest = buffer.split("\n\n")
    out = []
    for frame in whole:
        seq, data = None, None
        for line in frame.split("\n"):
            if line.startswith("id: "):
                seq = int(line[4:])
            elif line.startswith("data: "):
                data = json.loads(line[6:])
        if seq is not None and data is not None:
            out.append((seq, data))
    return out, rest


class Tally:
    def __init__(self) -> None:
        self.messages = self.errors = self.events = self.reattached = 0
        self.samples: list[str] = []
        self.started = time.monotonic()
        self.gaps: dict[int, list[float]] = {}  # window of WINDOW seconds → added gaps (s)

    def gap(self, now: float, seconds: float) -> None:
        """A gap between two deltas of one stream, beyond the model's own delay."""
        self.gaps.setdefault(int((now - self.started) // WINDOW), []).append(seconds - DELAY)

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.samples) < 10:
            self.samples.append(what)


async def read(
    response: httpx.Response, seen: list[int], stop_after: int | None, task: list[str], tally: Tally
) -> bool:
    """Read numbered events into ``seen`` until message_end (True) or ``stop_after`` of them; the
    task id goes into ``task``; the gaps between live deltas into ``tally``."""
    buffer = ""
    last: float | None = None
    async for text in response.aiter_text():
        got, buffer = frames(buffer + text)
        now = time.monotonic()
        for seq, event in got:
            seen.append(seq)
            if event["event"] == "agent_message":
                if last is not None:
                    tally.gap(now, now - last)
                last = now
            if not task and "task_id" in event:
                task.append(str(event["task_id"]))
            if event["event"] in ("message_end", "error"):
                return event["event"] == "message_end"
            if stop_after is not None and len(seen) >= stop_after:
                return False
    return False


async def client(
    http: httpx.AsyncClient, headers: dict[str, str], rng: random.Random, deadline: float, tally: Tally
) -> None:
    body = {"query": "Soak.", "user": "soak", "response_mode": "streaming", "inputs": {}}
    while time.monotonic() < deadline:
        seen: list[int] = []
        drop = rng.randint(1, 90) if rng.random() < 0.5 else None
        try:
            async with http.stream("POST", "/v1/chat-messages", json=body, headers=headers) as r:
                if r.status_code != 200:
                    tally.error(f"POST {r.status_code}")
                    continue
                task: list[str] = []
                ended = await read(r, seen, drop, task, tally)
            if not ended and task:
                # re-attach after the last event seen
                tally.reattached += 1
                url = f"/v1/chat-messages/{task[0]}/events?user=soak"
                async with http.stream("GET", url, headers={**headers, "Last-Event-ID": str(seen[-1])}) as r2:
                    ended = r2.status_code == 200 and await read(r2, seen, None, task, tally)
            tally.messages += 1
            tally.events += len(seen)
            if not ended:
                tally.error("no message_end")
            elif seen != list(range(1, len(seen) + 1)):
                tally.error("ids not 1..n once each")
        except (httpx.HTTPError, OSError) as exc:
            tally.error(type(exc).__name__)


def start_server(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    """``loopwright serve`` on ``port``, once it has printed its ready line."""
    command = [str(EXE), "serve", "--port", str(port)]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert server.stdout is not None
    server.stdout.readline()
    return server


async def fresh_database(url: str) -> None:
    """An empty ``public`` schema on the PostgreSQL database the workers share."""
    db = Database(url)
    try:
        async with db.engine.begin() as conn:
            await conn.execute(sqlalchemy.text("DROP SCHEMA IF EXISTS public CASCADE"))
            await conn.execute(sqlalchemy.text("CREATE SCHEMA public"))
    finally:
        await db.close()


async def stored_by_status(url: str) -> dict[str, int]:
    db = Database(url)
    try:
        async with db.engine.connect() as conn:
            rows = await conn.execute(
                sqlalchemy.text("SELECT status, count(*) FROM messages GROUP BY status")
            )
            return {str(status): int(n) for status, n in rows.all()}
    finally:
        await db.close()


@contextmanager
def workers_behind(
    env: dict[str, str], tmp: Path, workers: int, streams: int
) -> Iterator[tuple[int, list[int]]]:
    """``workers`` servers (their pids), behind nginx when there are several; yields the port the
    clients use and the servers' pids."""
    ports = [free_port() for _ in range(workers)]
    servers = [start_server(env, port) for port in ports]
    proxy: subprocess.Popen[bytes] | None = None
    try:
        front = ports[0]
        if workers > 1:
            front = free_port()
            (tmp / "nginx").mkdir()
            # a stream holds two of nginx's connections (the client's, the worker's), and a dropped
            # one may still hold them while its re-attach opens two more
            conf = nginx_config(tmp / "nginx", front, ports, connections=streams * 4 + 64)
            command = [NGINX, "-c", str(conf), "-p", str(tmp / "nginx"), "-e", str(tmp / "nginx/error.log")]
            proxy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_until_up(f"http://127.0.0.1:{front}/health", proxy)
        yield front, [server.pid for server in servers]
    finally:
        for process in [*servers, *([proxy] if proxy else [])]:
            process.terminate()
        for process in [*servers, *([proxy] if proxy else [])]:
            process.wait(timeout=60)


async def main(streams: int, minutes: float, seed: int, workers: int, url: str | None) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="loopwright-soak-"))
    script = tmp / "script.json"
    script.write_text(json.dumps({"replies": [ANSWER], "cycle": True, "chunk_size": 5, "delay": DELAY}))
    if workers > 1:
        if not url:
            raise SystemExit("several workers share a PostgreSQL database: give --url postgresql+asyncpg://…")
        await fresh_database(url)
    else:
        url = f"sqlite+aiosqlite:///{tmp / 'soak.db'}"
    env = {**os.environ, "DATABASE_URL": url}

    def cli(*args: str) -> str:
        return subprocess.run(
            [str(EXE), *args], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()

    app_id = cli("app", "create", "soak", "--model", f"scripted:{script}")
    headers = {"Authorization": f"Bearer {cli('key', 'create', '--app', app_id)}"}
    tally = Tally()
    rng = random.Random(seed)
    started = time.monotonic()
    deadline = started + minutes * 60
    limits = httpx.Limits(max_connections=streams * 2, max_keepalive_connections=streams)
    rss: dict[str, list[float]] = {}

    with workers_behind(env, tmp, workers, streams) as (port, pids):

        async def sample() -> None:
            # every minute (or fifth of the run), up to the deadline
            step = min(60.0, minutes * 60 / 5)
            elapsed = 0.0
            while time.monotonic() + step <= deadline:
                await asyncio.sleep(step)
                elapsed += step
                rss[f"minute {elapsed / 60:g}"] = [rss_mb(pid) for pid in pids]

        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120, limits=limits) as http:
            sampler = asyncio.create_task(sample())
            await asyncio.gather(
                *(client(http, headers, random.Random(rng.random()), deadline, tally) for _ in range(streams))
            )
            await sampler
        rss["end"] = [rss_mb(pid) for pid in pids]
    by_status = await stored_by_status(url)
    shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"streams: {streams}  workers: {workers}  minutes: {minutes}  messages: {tally.messages}  "
        f"re-attached: {tally.reattached}"
    )
    print(f"events: {tally.events}  errors: {tally.errors}  stored by status: {by_status}")
    each = " + ".join
    print("server RSS (MB): " + ", ".join(f"{k} {each(f'{v:.0f}' for v in vs)}" for k, vs in rss.items()))
    for window, gaps in sorted(tally.gaps.items()):
        gaps.sort()
        p50, p99 = gaps[len(gaps) // 2], gaps[min(len(gaps) - 1, int(len(gaps) * 0.99))]
        first = window * WINDOW / 60
        span = f"{first:.0f}-{first + WINDOW / 60:.0f}"
        print(f"  minutes {span}: added gap p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms")
    for s in tally.samples:
        print("  ", s)
    return 1 if tally.errors or set(by_status) - {"normal"} else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="servers behind nginx (several: PostgreSQL)")
    parser.add_argument("--url", default=os.environ.get("LOOPWRIGHT_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.streams, args.minutes, args.seed, args.workers, args.url)))
