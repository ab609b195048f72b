"""Revocation takes effect at once: a key revoked, an app disabled or deleted — by the CLI's code on its
own connection, as another process would — is refused on the very next request, on every server of the
database (SQLite: the revocation counter beside the file; PostgreSQL: NOTIFY)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from loopwright.app.admin.apps import delete_app, revoke_key, set_app_access
from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from loopwright.store.revocations import counter_path
from tests.live_server import serving
from tests.server.conftest import NewApp, ServiceApp
from tests.store.test_postgres import pg_empty, pg_url

__all__ = ["pg_empty", "pg_url"]  # fixtures, used by name


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    """A migrated SQLite file (the admin functions, opening it as the CLI does, migrate it)."""
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'test.db'}")
    await database.migrate()
    yield database
    await database.close()


async def _statuses(clients: tuple[httpx.AsyncClient, ...], app: ServiceApp) -> list[int]:
    return [(await c.get("/v1/info", headers=app.headers)).status_code for c in clients]


async def _revocations_refused_at_once(
    clients: tuple[httpx.AsyncClient, ...], new_app: NewApp, url: str
) -> None:
    # Each server has the key cached (a first request), then another connection revokes it.
    app = await new_app(["hi"])
    assert await _statuses(clients, app) == [200] * len(clients)
    assert await revoke_key(app.key, database_url=url)
    assert await _statuses(clients, app) == [401] * len(clients)

    app = await new_app(["hi"])
    assert await _statuses(clients, app) == [200] * len(clients)
    await set_app_access(app.id, enabled=False, database_url=url)
    assert await _statuses(clients, app) == [403] * len(clients)
    await set_app_access(app.id, enabled=True, database_url=url)
    assert await _statuses(clients, app) == [200] * len(clients)
    await set_app_access(app.id, enabled=False, api_only=True, database_url=url)
    assert await _statuses(clients, app) == [403] * len(clients)

    app = await new_app(["hi"])
    assert await _statuses(clients, app) == [200] * len(clients)
    await delete_app(app.id, database_url=url)
    assert await _statuses(clients, app) == [401] * len(clients)


async def test_revocations_on_sqlite_are_refused_at_once_by_every_worker(
    db: Database, new_app: NewApp
) -> None:
    # Two workers' apps on one SQLite file; the revocations come through a third connection.
    one, two = create_app(db, Settings()), create_app(db, Settings())
    async with (
        serving(one) as url_one,
        serving(two) as url_two,
        httpx.AsyncClient(base_url=url_one) as first,
        httpx.AsyncClient(base_url=url_two) as second,
    ):
        await _revocations_refused_at_once((first, second), new_app, db.url)
    path = counter_path(db.url)
    assert path is not None and path.stat().st_size == 5  # one count per revocation, none lost


async def test_an_unknown_key_revoked_counts_nothing(db: Database) -> None:
    assert not await revoke_key("app-no-such-key", database_url=db.url)
    path = counter_path(db.url)
    assert path is not None and not path.exists()


@pytest.fixture
async def pg(pg_empty: Database) -> AsyncIterator[Database]:
    await pg_empty.migrate()
    yield pg_empty


async def test_revocations_on_postgres_are_heard_by_every_worker_at_once(pg: Database) -> None:
    from loopwright.store import repositories as repo

    one, two = create_app(pg, Settings()), create_app(pg, Settings())
    async with (
        serving(one) as url_one,
        serving(two) as url_two,
        httpx.AsyncClient(base_url=url_one) as first,
        httpx.AsyncClient(base_url=url_two) as second,
    ):
        for runtime in (one.state.loopwright, two.state.loopwright):
            await runtime.open()
            await runtime.relay._listener.connected.wait()

        async def new_app(_replies: list[str]) -> ServiceApp:
            async with pg.transaction() as s:
                app, _ = await repo.create_app(s, "calc", {"model": "scripted:none", "tools": []})
                key = await repo.create_api_key(s, app.id)
                return ServiceApp(app.id, key.token)

        await _revocations_refused_at_once((first, second), new_app, pg.url)
