"""PostgreSQL stopped mid-run and started again — on a private cluster this test makes itself in a
temporary directory (initdb/pg_ctl), never a shared one: requests made while it is down fail with a
clear error instead of hanging, and the server recovers without a restart (new messages are answered
and stored, a stream re-attaches, the LISTEN connection is back).

With each executor: a run whose answer ends while the database is down cannot save its end, and the
next heartbeat marks it interrupted (with the durable executor, its workflow's last step waits for
the database and then ends). With the durable executor, a run that reaches a step boundary where it
must wait for DBOS's record (before a tool call) waits there for the database, then goes on and ends
answered; new runs' workflows end ``SUCCESS``."""

from __future__ import annotations

import asyncio
import contextlib
import glob
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopwright.app.run.runtime import AppRuntime
from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import utcnow
from tests.live_server import serving
from tests.reliability.test_kill import free_port
from tests.sse import ACCEPT_SSE, numbered

BODY = {"query": "Count.", "user": "alice", "response_mode": "streaming", "inputs": {}}
COUNTING = "counting " * 60  # a long streamed answer (the database stops while it streams)
FEATURES = ["tool-call", "stream-tool-call"]
ADDING = {"text": COUNTING, "tool_calls": [["calculator", {"expression": "2+3"}]]}
ANSWER = "Five. " * 30


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


@dataclass
class Served:
    """A server on the private cluster, an HTTP client of it and the key of its one app."""

    client: httpx.AsyncClient
    headers: dict[str, str]
    runtime: AppRuntime
    db: Database

    async def stored_stream(self, task_id: str) -> list[tuple[int, dict[str, Any]]]:
        """The stream of ``task_id`` as a client re-attaching from its start gets it."""
        r = await self.client.get(f"/v1/chat-messages/{task_id}/events?user=alice", headers=self.headers)
        assert r.status_code == 200, r.text
        return [(s, e) for s, e in numbered(r.text) if s is not None]

    async def history(self, conversation_id: str) -> list[dict[str, Any]]:
        params = {"user": "alice", "conversation_id": conversation_id}
        r = await self.client.get("/v1/messages", params=params, headers=self.headers)
        assert r.status_code == 200, r.text
        data: list[dict[str, Any]] = r.json()["data"]
        return data


def settings_for(executor: str, monkeypatch: pytest.MonkeyPatch) -> Settings:
    if executor == "durable":
        pytest.importorskip("dbos")
        monkeypatch.setenv("LOOPWRIGHT_DBOS_SCHEMA", "dbos_outage")  # DBOS's tables on the private cluster
        monkeypatch.delenv("LOOPWRIGHT_DBOS_URL", raising=False)
    return Settings(executor=executor)


@asynccontextmanager
async def served_on(
    cluster: Cluster, tmp_path: Path, settings: Settings, script: dict[str, Any], **config: Any
) -> AsyncIterator[Served]:
    """A real server on the cluster with one app answering from ``script`` (the scripted model)."""
    db = Database(cluster.url)
    await db.migrate()
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "counter", {"model": f"scripted:{path}", **config})
        headers = {"Authorization": f"Bearer {(await repo.create_api_key(s, app.id)).token}", **ACCEPT_SSE}
    server = create_app(db, settings, ping_interval=0.5)
    runtime = server.state.loopwright
    try:
        async with serving(server) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
            await runtime.open()
            yield Served(client, headers, runtime, db)
    finally:
        await db.close()


class Cut:
    """The stream of the message the outage cuts, as its client reads it."""

    def __init__(self, texts: AsyncIterator[str]) -> None:
        self._texts = texts
        self.body = ""

    async def read_until(self, done: Callable[[Cut], bool]) -> None:
        while not done(self):
            self.body += await anext(self._texts)

    async def read_to_end(self) -> None:
        self.body += "".join([text async for text in self._texts])

    @property
    def events(self) -> list[tuple[int, dict[str, Any]]]:
        return [(s, e) for s, e in numbered(self.body) if s is not None]

    @property
    def shown(self) -> str:
        """The answer the client shows so far."""
        return "".join(e["answer"] for _, e in self.events if e["event"] == "agent_message")


@asynccontextmanager
async def stream_cut_by_the_outage(served: Served, cluster: Cluster) -> AsyncIterator[Cut]:
    """A message streamed until five events came and are stored; then the database stops."""
    async with served.client.stream("POST", "/v1/chat-messages", json=BODY, headers=served.headers) as r:
        cut = Cut(r.aiter_text())
        await cut.read_until(lambda c: c.body.count("id: ") >= 5)
        await served.runtime.journal.settled()  # its first rows and events are in
        await served.db.writer.flush()
        await asyncio.to_thread(cluster.stop)  # the database goes away mid-stream
        yield cut


async def fails_clearly(served: Served) -> None:
    """A new message while the database is down: a clear error, not a hang."""
    down = await served.client.post("/v1/chat-messages", json=BODY, headers=served.headers)
    assert down.status_code >= 500 and down.json()["message"]


async def answered(client: httpx.AsyncClient, headers: dict[str, str]) -> httpx.Response:
    """Post until the server answers 200 (the first request after the restart may meet a dead pooled
    connection, which the pool then drops); at most 30 tries, one a second."""
    for _ in range(30):
        r = await client.post("/v1/chat-messages", json=BODY, headers=headers)
        if r.status_code == 200:
            return r
        await asyncio.sleep(1)
    raise AssertionError(f"the server did not recover: {r.status_code} {r.text}")


async def a_new_message_is_answered(served: Served) -> list[dict[str, Any]]:
    """After the restart: a new message is answered and stored, its stream replays the same, and the
    LISTEN connection is back. Returns its events; with the durable executor its workflow succeeded."""
    r = await answered(served.client, served.headers)
    after = [e for s, e in numbered(r.text) if s is not None]
    assert after[-1]["event"] == "message_end"
    await served.runtime.journal.settled()
    assert [e for _, e in await served.stored_stream(after[0]["task_id"])] == after
    await asyncio.wait_for(served.runtime.relay._listener.connected.wait(), 30)
    assert [m["status"] for m in await served.history(after[0]["conversation_id"])] == ["normal"]
    if served.runtime.durable is not None:
        assert await workflow_result(after[0]["task_id"]) == "normal"
    return after


async def workflow_result(task_id: str) -> Any:
    """The result of the run's DBOS workflow, once it has ended; it must have succeeded."""
    from tests.app.test_durable import workflow

    handle = await workflow(task_id)  # a run that answers at once may be saved before its start is
    result = await asyncio.wait_for(handle.get_result(), 30)
    status = await handle.get_status()
    assert status.status == "SUCCESS", status
    return result


async def next_heartbeat(runtime: AppRuntime) -> None:
    runtime.lease._clock = lambda: utcnow() + timedelta(minutes=5)  # a few beats later
    await runtime.lease.beat()


@pytest.mark.parametrize("executor", ["in-process", "durable"])
async def test_the_server_survives_the_database_going_away_and_coming_back(
    executor: str, tmp_path: Path, cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = {"replies": [COUNTING] * 10, "delay": 0.02}
    async with served_on(cluster, tmp_path, settings_for(executor, monkeypatch), script) as served:
        async with stream_cut_by_the_outage(served, cluster) as cut:
            await cut.read_to_end()  # the answer streams on from memory
        events = [e for _, e in cut.events]
        assert events[-1]["event"] in ("message_end", "error")  # the stream ends, one way or the other
        await fails_clearly(served)
        await asyncio.to_thread(cluster.start)
        await a_new_message_is_answered(served)
        if executor == "durable":  # the cut run's workflow: its end waited for the database
            await workflow_result(events[0]["task_id"])
        # The run cut by the outage could not save its end: the next heartbeat says so, clearly, on
        # its message and its stream (whose stored events replay first).
        await next_heartbeat(served.runtime)
        [message] = await served.history(events[0]["conversation_id"])
        assert message["status"] == "error" and message["error"].startswith("interrupted:")
        stored = await served.stored_stream(events[0]["task_id"])
        assert [s for s, _ in stored] == list(range(1, len(stored) + 1))
        assert stored[-1][1]["event"] == "error" and stored[-1][1]["message"].startswith("interrupted:")


async def test_a_durable_run_waits_for_the_database_at_its_next_step_and_ends_answered(
    tmp_path: Path, cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model's reply streams on from memory while the database is down; the tool call it asks
    for waits until DBOS has recorded the reply — until the database is back — then the run goes on
    and its message ends answered, with its thoughts. What the run streamed while the database was
    down was not stored (the journal's writes failed): a client re-attaching misses it."""
    script = {"replies": [ADDING, ANSWER] * 3, "features": FEATURES, "delay": 0.02}
    settings = settings_for("durable", monkeypatch)
    tools = [{"name": "calculator"}]
    async with served_on(cluster, tmp_path, settings, script, tools=tools) as served:
        async with stream_cut_by_the_outage(served, cluster) as cut:
            await cut.read_until(lambda c: c.shown == COUNTING)  # the reply is out; its call waits
            task_id = cut.events[0][1]["task_id"]
            await fails_clearly(served)
            assert task_id in [t for t, _ in served.runtime.runs.running()]
            assert not any(e["event"] == "agent_thought" and e["observation"] for _, e in cut.events)
            await asyncio.to_thread(cluster.start)
            await cut.read_to_end()
        live = cut.events
        assert [s for s, _ in live] == list(range(1, len(live) + 1))
        assert live[-1][1]["event"] == "message_end" and all(e["event"] != "error" for _, e in live)
        assert cut.shown == COUNTING + ANSWER
        assert await workflow_result(task_id) == "normal"
        conversation_id = live[0][1]["conversation_id"]
        [message] = await served.history(conversation_id)
        # every round's text, joined (as Dify saves a function-calling run's answer)
        joined = COUNTING + "\n" + ANSWER.strip()
        assert (message["status"], message["answer"], message["error"]) == ("normal", joined, None)
        thoughts = [(t["tool"], t["observation"]) for t in message["agent_thoughts"]]
        assert thoughts == [("calculator", json.dumps({"calculator": "5"})), ("", "")]
        await a_new_message_is_answered(served)
        await next_heartbeat(served.runtime)  # it marks nothing: the run ended and was saved
        assert await served.history(conversation_id) == [message]
        # Its stored stream: the events stored before the outage and every one from the tool call on
        # (after the database came back), each once, in order, as the client saw them live.
        stored = await served.stored_stream(task_id)
        assert stored == [(s, e) for s, e in live if s in dict(stored)]
        resumed = next(i for i, (_, e) in enumerate(live) if e["event"] == "agent_thought" and e["tool"])
        assert stored[:5] == live[:5] and stored[-len(live[resumed:]) :] == live[resumed:]
