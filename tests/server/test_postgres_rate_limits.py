"""Rate and stream limits counted across the workers of one PostgreSQL database
(app.run.rate_limits.SharedLimiter, store.rate_counters): two real servers share every count, a killed
worker's stream leases expire, and with every limit off nothing is read or written for them."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from loopwright.app.run.rate_limits import (
    CALLER_KEY,
    LEASE_SECONDS,
    Limiter,
    LimitSettings,
    SharedLimiter,
    key_digest,
)
from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from tests.live_server import serving
from tests.server.conftest import ServiceApp
from tests.store.test_postgres import pg_empty, pg_url

__all__ = ["pg_empty", "pg_url"]  # fixtures, used by name


class Clock:
    """Wall-clock seconds that only the test moves (both servers' minutes agree)."""

    def __init__(self) -> None:
        self.now = (time.time() // 60) * 60 + 10.0  # 10 s into a minute: 50 s until it turns

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def pg(pg_empty: Database) -> AsyncIterator[Database]:
    await pg_empty.migrate()
    yield pg_empty


async def _app(pg: Database, tmp_path: Path) -> ServiceApp:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": ["hi"] * 20}), encoding="utf-8")
    async with pg.transaction() as s:
        app, _ = await repo.create_app(s, "limited", {"model": f"scripted:{script}", "tools": []})
        key = await repo.create_api_key(s, app.id)
        return ServiceApp(app.id, key.token)


@contextmanager
def statements(engine: AsyncEngine) -> Iterator[list[str]]:
    """Every SQL statement sent on ``engine`` meanwhile."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, sql: str, *_: Any) -> None:
        seen.append(sql)

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)


def _chat(user: str, mode: str = "streaming") -> dict[str, Any]:
    return {"query": "hi", "inputs": {}, "user": user, "response_mode": mode}


async def test_limits_hold_across_two_servers(pg: Database, tmp_path: Path) -> None:
    settings = Settings(rate_limit_per_key=3, rate_limit_per_user=2)
    one, two = create_app(pg, settings), create_app(pg, settings)
    assert isinstance(one.state.loopwright.limiter, SharedLimiter)  # chosen for PostgreSQL
    clock = Clock()
    for server in (one, two):
        server.state.loopwright.use_limiter(SharedLimiter(pg, LimitSettings.of(settings), clock=clock))
    app = await _app(pg, tmp_path)
    async with (
        serving(one) as url_one,
        serving(two) as url_two,
        httpx.AsyncClient(base_url=url_one, headers=app.headers) as first,
        httpx.AsyncClient(base_url=url_two, headers=app.headers) as second,
    ):
        # the key's 3 a minute, spent on both servers
        statuses = [(await c.get("/v1/info")).status_code for c in (first, second, first, second, first)]
        assert statuses == [200, 200, 200, 429, 429]
        refused = await second.get("/v1/parameters")
        assert refused.json()["code"] == "too_many_requests" and refused.headers["retry-after"] == "50"

        clock.now += 60  # the next minute: the key counts again, and the end user's 2 a minute hold
        first_ask = await first.post("/v1/chat-messages", json=_chat("alice", "blocking"))
        second_ask = await second.post("/v1/chat-messages", json=_chat("alice", "blocking"))
        third_ask = await first.post("/v1/chat-messages", json=_chat("alice", "blocking"))
        assert [first_ask.status_code, second_ask.status_code] == [200, 200]
        assert third_ask.status_code == 429 and "this end user" in third_ask.json()["message"]


async def test_a_stream_held_on_one_server_counts_on_the_other(pg: Database, tmp_path: Path) -> None:
    settings = Settings(stream_limit_per_user=1, stream_limit_per_key=2)
    one, two = create_app(pg, settings), create_app(pg, settings)
    clock = Clock()
    limiters = [SharedLimiter(pg, LimitSettings.of(settings), clock=clock) for _ in range(2)]
    for server, limiter in zip((one, two), limiters, strict=True):
        server.state.loopwright.use_limiter(limiter)
    app = await _app(pg, tmp_path)
    async with (
        serving(one) as url_one,
        serving(two) as url_two,
        httpx.AsyncClient(base_url=url_one, headers=app.headers) as first,
        httpx.AsyncClient(base_url=url_two, headers=app.headers) as second,
    ):
        token = CALLER_KEY.set(key_digest(app.key))
        try:  # alice's stream on the first worker, as its run would hold it
            held = await limiters[0].start_run(app.id, "alice", streaming=True)
        finally:
            CALLER_KEY.reset(token)
        assert held is not None
        refused = await second.post("/v1/chat-messages", json=_chat("alice"))
        assert (refused.status_code, refused.json()["code"]) == (429, "too_many_requests")
        assert refused.headers["retry-after"] == "1"
        # bob's stream is the key's second: allowed, and given back when its run ends
        answered = await second.post("/v1/chat-messages", json=_chat("bob"))
        assert answered.status_code == 200 and "message_end" in answered.text
        await two.state.loopwright.settled()
        await limiters[1].released()
        assert await limiters[0].streams("key:" + key_digest(app.key)) == 1  # alice's only
        held()
        await limiters[0].released()
        answered = await first.post("/v1/chat-messages", json=_chat("alice"))
        assert answered.status_code == 200 and "message_end" in answered.text


HOLDER = """
import asyncio, sys
from loopwright.app.run.rate_limits import LimitSettings, SharedLimiter
from loopwright.store.db import Database

async def main():
    limiter = SharedLimiter(Database(sys.argv[1]), LimitSettings(user_streams=1))
    await limiter.start_run(sys.argv[2], "alice", streaming=True)
    print("held", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_a_killed_workers_stream_leases_expire(pg: Database, tmp_path: Path) -> None:
    settings = Settings(stream_limit_per_user=1)
    server = create_app(pg, settings)
    clock = Clock()
    limiter = SharedLimiter(pg, LimitSettings.of(settings), clock=clock)
    server.state.loopwright.use_limiter(limiter)
    app = await _app(pg, tmp_path)
    # another worker: a process that takes alice's stream, then is killed (nothing given back)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLDER, pg.url, app.id, stdout=asyncio.subprocess.PIPE, env=env
    )
    assert holder.stdout is not None
    try:
        assert await asyncio.wait_for(holder.stdout.readline(), 60) == b"held\n"
    finally:
        holder.send_signal(signal.SIGKILL)
        await holder.wait()
    clock.now = time.time()  # not earlier than the lease was taken
    async with serving(server) as url, httpx.AsyncClient(base_url=url, headers=app.headers) as client:
        refused = await client.post("/v1/chat-messages", json=_chat("alice"))
        assert refused.status_code == 429  # its lease is still live: its heartbeat could be late
        clock.now += LEASE_SECONDS + 1  # no heartbeat renewed it since
        assert await limiter.streams(f"user:{app.id}:alice") == 0
        await limiter.renew()  # this worker's heartbeat deletes the expired lease
        answered = await client.post("/v1/chat-messages", json=_chat("alice"))
        assert answered.status_code == 200 and "message_end" in answered.text


async def test_with_limits_off_no_statement_counts(pg: Database, tmp_path: Path) -> None:
    server = create_app(pg, Settings())
    runtime = server.state.loopwright
    assert type(runtime.limiter) is Limiter and not runtime.limiter.on
    app = await _app(pg, tmp_path)
    async with serving(server) as url, httpx.AsyncClient(base_url=url, headers=app.headers) as client:
        assert (await client.get("/v1/info")).status_code == 200  # the key is read and cached
        with statements(pg.engine) as sent:
            for _ in range(5):
                assert (await client.get("/v1/info")).status_code == 200
            answered = await client.post("/v1/chat-messages", json=_chat("alice"))
            assert answered.status_code == 200
            await runtime.settled()
        await runtime.lease.beat()
    limit_tables = [sql for sql in sent if "rate_windows" in sql or "stream_leases" in sql]
    assert sent and limit_tables == []  # the run wrote its rows; nothing touched the limits' tables


async def test_the_counters_are_unlogged(pg: Database) -> None:
    # no write-ahead log: a counted request waits for no WAL flush (the migration says why)
    async with pg.engine.connect() as conn:
        kinds = await conn.execute(
            text("SELECT relname, relpersistence::text FROM pg_class WHERE relname = ANY(:names)"),
            {"names": ["rate_windows", "stream_leases"]},
        )
        assert dict(kinds.all()) == {"rate_windows": "u", "stream_leases": "u"}
