"""Several workers on one database: a stop that reaches a worker without the run still stops it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from loopwright.store.models import Message
from tests.live_server import serving
from tests.server.conftest import NewApp, ServiceApp
from tests.sse import aiter_sse


async def test_a_stop_posted_to_another_worker_stops_the_run(new_app: NewApp, db: Database) -> None:
    app = await new_app(["one two three four five six seven eight nine ten " * 10], delay=0.05)
    # Two workers: two apps on the same database, each with its own runs, each on its own port.
    one = create_app(db, Settings(), ping_interval=0.05, workers=2)
    two = create_app(db, Settings(), ping_interval=0.05, workers=2)
    async with (
        serving(one) as url_one,
        serving(two) as url_two,
        httpx.AsyncClient(base_url=url_one) as first,
        httpx.AsyncClient(base_url=url_two) as other,
    ):
        await stop_through_the_other(first, other, app, db)


async def stop_through_the_other(
    first: httpx.AsyncClient, second: httpx.AsyncClient, app: ServiceApp, db: Database
) -> None:
    body = {"query": "Count.", "user": "alice", "response_mode": "streaming", "inputs": {}}
    async with first.stream("POST", "/v1/chat-messages", json=body, headers=app.headers) as r:
        stream = aiter_sse(r.aiter_lines(), pings=False)
        task_id = (await anext(stream))["task_id"]
        wrong = await second.post(
            f"/v1/chat-messages/{task_id}/stop", json={"user": "mallory"}, headers=app.headers
        )
        stop = await second.post(
            f"/v1/chat-messages/{task_id}/stop", json={"user": "alice"}, headers=app.headers
        )
        assert wrong.json() == stop.json() == {"result": "success"}
        events = [e async for e in stream]
    assert events[-1]["event"] == "message_end"
    async with db.transaction() as s:
        message = await s.get(Message, events[-1]["message_id"])
    assert message is not None and message.status == "stopped"  # stopped long before its 5 s end
    assert len(message.answer) < 200


def test_serve_refuses_zero_workers(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("loopwright")
    done = subprocess.run([str(exe), "serve", "--workers", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "workers" in done.stderr


def test_serve_with_two_workers_answers(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("loopwright")
    env = {**os.environ, "LOOPWRIGHT_DB": str(tmp_path / "w.db")}
    env.pop("DATABASE_URL", None)

    def cli(*args: str) -> str:
        return subprocess.run(
            [str(exe), *args], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()

    key = cli("key", "create", "--app", cli("app", "create", "w", "--model", "local"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [str(exe), "serve", "--port", str(port), "--workers", "2"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        headers = {"Authorization": f"Bearer {key}"}
        for _ in range(600):
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/v1/info", headers=headers, timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        assert r.status_code == 200 and r.json()["name"] == "w"
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert "Started parent process" in err.decode()
