"""Two workers on one PostgreSQL: a stream re-attached through the other worker continues live, and a
stop posted to the other worker stops the run at once — through LISTEN/NOTIFY, nothing polled."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from tests.live_server import serving
from tests.server.conftest import NewApp
from tests.server.test_run_events import COUNTING, reattach_while_running
from tests.server.test_workers import stop_through_the_other
from tests.store.test_postgres import pg_empty, pg_url

__all__ = ["pg_empty", "pg_url"]  # fixtures, used by name


@pytest.fixture
async def db(pg_empty: Database) -> AsyncIterator[Database]:
    await pg_empty.migrate()
    yield pg_empty


@pytest.fixture
async def two_workers(db: Database) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    # Two processes' worth of app on one database, each with its own runs and its own port; one
    # worker each (the relay does not depend on --workers on PostgreSQL).
    one = create_app(db, Settings(), ping_interval=0.05)
    two = create_app(db, Settings(), ping_interval=0.05)
    async with (
        serving(one) as url_one,
        serving(two) as url_two,
        httpx.AsyncClient(base_url=url_one, timeout=30) as first,
        httpx.AsyncClient(base_url=url_two, timeout=30) as second,
    ):
        for runtime in (one.state.loopwright, two.state.loopwright):
            await runtime.open()
            await runtime.relay._listener.connected.wait()
        yield first, second


async def test_a_stream_continues_live_through_the_other_worker(
    new_app: NewApp, two_workers: tuple[httpx.AsyncClient, httpx.AsyncClient]
) -> None:
    app = await new_app([COUNTING], delay=0.02)
    await reattach_while_running(*two_workers, app)


async def test_a_stop_through_the_other_worker_is_notified(
    new_app: NewApp, db: Database, two_workers: tuple[httpx.AsyncClient, httpx.AsyncClient]
) -> None:
    app = await new_app(["one two three four five six seven eight nine ten " * 10], delay=0.05)
    await stop_through_the_other(*two_workers, app, db)
