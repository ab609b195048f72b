"""PostgreSQL stopped mid-run and started again — on a private cluster this test makes itself in a
temporary directory (initdb/pg_ctl), never a shared one: requests made while it is down fail with a
clear error instead of hanging, and the server recovers without a restart (new messages are answered
and stored, a stream re-attaches, the LISTEN connection is back)."""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import utcnow
from tests.live_server import serving
from tests.reliability.test_kill import free_port
from tests.sse import numbered

BODY = {"query": "Count.", "user": "alice", "response_mode": "streaming", "inputs": {}}


def pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        if os.environ.get("CI"):
            pytest.fail(
                "PostgreSQL's binaries are missing (scripts/ci-postgres installs them)", pytrace=False
            )
        pytest.skip("PostgreSQL's binaries are not installed")
    return Path(found[-1]).parent


class Cluster:
    """A private PostgreSQL cluster in a temporary directory, on a free loopback port."""

    def __init__(self, bindir: Path, root: Path) -> None:
        self.bindir, self.root, self.port = bindir, root, free_port()
        self.as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self.url = f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    def run(self, *args: str) -> None:
        subprocess.run([*self.as_owner, *args], check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        if self.as_owner:
            shutil.chown(self.root, "postgres")
        self.run(str(self.bindir / "initdb"), "-D", str(self.root / "data"), "-U", "postgres", "--auth=trust")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.root / "log")
        self.run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.root / "data"),
            "-l",
            log,
            "-o",
            options,
            "-w",
            "start",
        )

    def stop(self) -> None:
        self.run(str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    bindir = pg_bin()
    root = Path(tempfile.mkdtemp(prefix="loopwright-pg-"))
    c = Cluster(bindir, root)
    try:
        c.init()
        c.start()
        yield c
    finally:
        with contextlib.suppress(Exception):
            c.stop()
        shutil.rmtree(root, ignore_errors=True)


async def answered(client: httpx.AsyncClient, headers: dict[str, str]) -> httpx.Response:
    """Post until the server answers 200 (the first request after the restart may meet a dead pooled
    connection, which the pool then drops); at most 30 tries, one a second."""
    for _ in range(30):
        r = await client.post("/v1/chat-messages", json=BODY, headers=headers)
        if r.status_code == 200:
            return r
        await asyncio.sleep(1)
    raise AssertionError(f"the server did not recover: {r.status_code} {r.text}")


async def test_the_server_survives_the_database_going_away_and_coming_back(
    tmp_path: Path, cluster: Cluster
) -> None:
    db = Database(cluster.url)
    await db.migrate()
    script = tmp_path / "script.json"
    script.write_text(
        '{"replies": ' + str(['"' + "counting " * 60 + '"'] * 10).replace("'", "") + ', "delay": 0.02}'
    )
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "counter", {"model": f"scripted:{script}"})
        headers = {"Authorization": f"Bearer {(await repo.create_api_key(s, app.id)).token}"}
    server = create_app(db, Settings(), ping_interval=0.5)
    runtime = server.state.loopwright
    async with serving(server) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
        await runtime.open()
        async with client.stream("POST", "/v1/chat-messages", json=BODY, headers=headers) as r:
            body = ""
            texts = r.aiter_text()
            while body.count("id: ") < 5:
                body += await anext(texts)
            await runtime.journal.settled()  # its first rows and events are in
            await db.writer.flush()
            await asyncio.to_thread(cluster.stop)  # the database goes away mid-stream
            body += "".join([text async for text in texts])
        events = [e for s, e in numbered(body) if s is not None]
        assert events[-1]["event"] in ("message_end", "error")  # the stream ends, one way or the other
        down = await client.post("/v1/chat-messages", json=BODY, headers=headers)
        assert down.status_code >= 500 and down.json()["message"]  # a clear error, not a hang
        await asyncio.to_thread(cluster.start)
        r = await answered(client, headers)
        after = [e for s, e in numbered(r.text) if s is not None]
        assert after[-1]["event"] == "message_end"
        await runtime.journal.settled()
        task_id = after[0]["task_id"]
        replay = await client.get(f"/v1/chat-messages/{task_id}/events?user=alice", headers=headers)
        assert [e for s, e in numbered(replay.text) if s is not None] == after
        await asyncio.wait_for(runtime.relay._listener.connected.wait(), 30)
        params = {"user": "alice", "conversation_id": after[0]["conversation_id"]}
        history = (await client.get("/v1/messages", params=params, headers=headers)).json()["data"]
        assert [m["status"] for m in history] == ["normal"]
        # The run cut by the outage could not save its end: the next heartbeat says so, clearly, on
        # its message and its stream (whose stored events replay first).
        runtime.lease._clock = lambda: utcnow() + timedelta(minutes=5)  # a few beats later
        await runtime.lease.beat()
        params["conversation_id"] = events[0]["conversation_id"]
        cut = await client.get("/v1/messages", params=params, headers=headers)
        assert cut.status_code == 200, cut.text
        [message] = cut.json()["data"]
        assert message["status"] == "error" and message["error"].startswith("interrupted:")
        replay = await client.get(
            f"/v1/chat-messages/{events[0]['task_id']}/events?user=alice", headers=headers
        )
        stored = [(s, e) for s, e in numbered(replay.text) if s is not None]
        assert [s for s, _ in stored] == list(range(1, len(stored) + 1))
        assert stored[-1][1]["event"] == "error" and stored[-1][1]["message"].startswith("interrupted:")
    await db.close()
