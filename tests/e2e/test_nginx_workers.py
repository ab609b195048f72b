"""Scale-out as deployed: two ``loopwright serve`` processes on one PostgreSQL behind nginx (Debian's,
with deploy/nginx/sse-proxy.conf), all on 127.0.0.1. A stream goes through nginx to one worker; the
client re-attaches through the *other* worker and continues live; a stop sent to that other worker
stops the run at once.

Needs ``LOOPWRIGHT_TEST_POSTGRES_URL`` (``scripts/ci-postgres``) and nginx (``scripts/ci-nginx``);
skipped without them, except under CI, where they must be there.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from loopwright.store.db import Database
from loopwright.store.models import Message, RunStream, Worker
from tests.reliability.test_kill import free_port
from tests.sse import ACCEPT_SSE, numbered
from tests.store.test_postgres import _reset, pg_url

__all__ = ["pg_url"]  # a fixture, used by name

EXE = Path(sys.executable).with_name("loopwright")
DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "nginx"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


@pytest.fixture
def nginx_binary() -> str:
    if Path(NGINX).exists():
        return NGINX
    reason = "nginx is not installed (`bash scripts/ci-nginx`)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; under CI it must be", pytrace=False)
    pytest.skip(reason)


def wait_until_up(url: str, process: subprocess.Popen[bytes], headers: dict[str, str] | None = None) -> None:
    for _ in range(1200):
        try:
            if httpx.get(url, headers=headers, timeout=5).status_code < 500:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            raise AssertionError(f"{process.args} exited before it answered")
        time.sleep(0.05)
    raise AssertionError(f"{url} did not answer")


@contextmanager
def started(command: list[str], env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def nginx_config(tmp: Path, port: int, upstreams: list[int], connections: int = 256) -> Path:
    servers = "".join(f"        server 127.0.0.1:{p};\n" for p in upstreams)
    user = "user root;\n" if os.geteuid() == 0 else ""
    temp = "".join(
        f"    {kind}_temp_path {tmp}/{kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = tmp / "nginx.conf"
    conf.write_text(
        f"""{user}worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
worker_rlimit_nofile {connections + 64};
events {{ worker_connections {connections}; }}
http {{
    access_log off;
{temp}    upstream loopwright {{
{servers}        keepalive 8;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://loopwright;
            include {DEPLOY / "sse-proxy.conf"};
        }}
    }}
}}
"""
    )
    return conf


async def worker_running(db: Database, task_id: str) -> int:
    """The pid of the process running a task (its stream names its worker)."""
    for _ in range(200):
        await db.writer.flush()
        async with db.sessionmaker() as s:
            stream = await s.get(RunStream, task_id)
            worker = await s.get(Worker, stream.worker_id) if stream and stream.worker_id else None
        if worker is not None:
            return worker.pid
        await asyncio.sleep(0.05)
    raise AssertionError("the run's stream never named its worker")


async def test_two_workers_behind_nginx_stream_reattach_and_stop(
    tmp_path: Path, pg_url: str, nginx_binary: str
) -> None:
    db = Database(pg_url)
    await _reset(db)
    await db.migrate()
    script = tmp_path / "script.json"
    script.write_text('{"replies": ["' + "counting " * 400 + '"], "chunk_size": 9, "delay": 0.05}')
    env = {**os.environ, "DATABASE_URL": pg_url}

    def cli(*args: str) -> str:
        done = subprocess.run([str(EXE), *args], env=env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    app_id = cli("app", "create", "counter", "--model", f"scripted:{script}")
    headers = {"Authorization": f"Bearer {cli('key', 'create', '--app', app_id)}"}
    ports = [free_port(), free_port()]
    front = free_port()
    (tmp_path / "nginx").mkdir()
    conf = nginx_config(tmp_path / "nginx", front, ports)
    with (
        started([str(EXE), "serve", "--port", str(ports[0])], env) as one,
        started([str(EXE), "serve", "--port", str(ports[1])], env) as two,
        started(
            [
                nginx_binary,
                "-c",
                str(conf),
                "-p",
                str(tmp_path / "nginx"),
                "-e",
                str(tmp_path / "nginx/error.log"),
            ]
        ) as proxy,
    ):
        for port, process in [(ports[0], one), (ports[1], two), (front, proxy)]:
            wait_until_up(f"http://127.0.0.1:{port}/health", process)
        pids = {one.pid: ports[0], two.pid: ports[1]}
        body = {"query": "Count.", "user": "alice", "response_mode": "streaming", "inputs": {}}
        async with httpx.AsyncClient(timeout=30) as client:
            async with client.stream(
                "POST",
                f"http://127.0.0.1:{front}/v1/chat-messages",
                json=body,
                headers={**headers, **ACCEPT_SSE},
            ) as r:
                seen: list[tuple[int | None, dict[str, object]]] = []
                buffer = ""
                async for text in r.aiter_text():  # unbuffered: events arrive while the run goes on
                    buffer += text
                    *frames, buffer = buffer.split("\n\n")
                    seen.extend(e for f in frames for e in numbered(f + "\n\n") if e[0] is not None)
                    if len(seen) >= 5:
                        break
            task_id = str(seen[0][1]["task_id"])
            running = pids[await worker_running(db, task_id)]
            other = f"http://127.0.0.1:{ports[1] if running == ports[0] else ports[0]}"
            reattach = {**headers, "Last-Event-ID": str(seen[-1][0])}
            async with client.stream(
                "GET", f"{other}/v1/chat-messages/{task_id}/events?user=alice", headers=reattach
            ) as r:
                assert r.status_code == 200
                rest: list[tuple[int | None, dict[str, object]]] = []
                buffer = ""
                stopped = False
                async for text in r.aiter_text():
                    buffer += text
                    *frames, buffer = buffer.split("\n\n")
                    rest.extend(e for f in frames for e in numbered(f + "\n\n") if e[0] is not None)
                    if len(rest) >= 3 and not stopped:  # it continues live: now stop it through this worker
                        stop = await client.post(
                            f"{other}/v1/chat-messages/{task_id}/stop",
                            json={"user": "alice"},
                            headers=headers,
                        )
                        assert stop.json() == {"result": "success"}
                        stopped = True
    ids = [seq for seq, _ in seen + rest]
    assert ids == list(range(1, len(ids) + 1))  # every event once, in order, across the two workers
    assert rest[-1][1]["event"] == "message_end"
    async with db.sessionmaker() as s:
        message = (await s.scalars(select(Message).where(Message.id == str(seen[0][1]["message_id"])))).one()
    assert message.status == "stopped" and 0 < len(message.answer) < len("counting " * 400)
    await db.close()
