"""The store on a real PostgreSQL server (asyncpg).

The server comes from ``LOOPWRIGHT_TEST_POSTGRES_URL`` (``bash scripts/ci-postgres`` sets one up and prints
it; ``.ci/run`` exports it). Without it these tests are skipped, except under CI (``CI`` set), where a
missing server is a failure: CI must not silently lose the PostgreSQL coverage.

Each test starts from an empty ``public`` schema. The store, generate and history tests written for
SQLite run here unchanged: every ``async def test_…(db)`` of those modules is called with a PostgreSQL
``db`` (see ``SHARED``); the tests below them cover what only PostgreSQL has.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal
from types import ModuleType

import pytest
from sqlalchemy import text

from loopwright.store import models as m
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from tests.app import test_history as history_tests
from tests.app import test_messages as message_tests
from tests.app import test_trust_pipeline as trust_tests
from tests.store import rows
from tests.store import test_db as db_tests
from tests.store import test_logs as log_tests
from tests.store import test_repositories as repository_tests
from tests.store import test_streamed as streamed_tests
from tests.store import test_thoughts as thought_tests

URL_ENV = "LOOPWRIGHT_TEST_POSTGRES_URL"

# SQLite-only tests of the shared modules.
SQLITE_ONLY = {"test_sqlite_pragmas"}


def _shared(*modules: ModuleType) -> list[Callable[[Database], Awaitable[None]]]:
    """Every ``async def test_…(db)`` of ``modules``: the SQLite tests that take nothing but a database."""
    out = []
    for module in modules:
        for name, fn in vars(module).items():
            if not name.startswith("test_") or name in SQLITE_ONLY or not inspect.iscoroutinefunction(fn):
                continue
            if list(inspect.signature(fn).parameters) == ["db"]:
                out.append(fn)
    return out


SHARED = _shared(
    db_tests,
    repository_tests,
    thought_tests,
    history_tests,
    message_tests,
    trust_tests,
    log_tests,
    streamed_tests,
)


@pytest.fixture(scope="session")
def pg_url() -> str:
    url = os.environ.get(URL_ENV)
    if url:
        return url
    reason = f"{URL_ENV} is not set: no PostgreSQL server (`bash scripts/ci-postgres` prints a URL)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; under CI the PostgreSQL tests must run, not be skipped", pytrace=False)
    pytest.skip(reason)


async def _reset(database: Database) -> None:
    async with database.engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))


@pytest.fixture
async def pg_empty(pg_url: str) -> AsyncIterator[Database]:
    """A database on the server with an empty ``public`` schema."""
    database = Database(pg_url)
    assert database.engine.dialect.name == "postgresql", f"{URL_ENV} is not a PostgreSQL URL"
    await _reset(database)
    yield database
    await database.close()


@pytest.fixture
async def pg_db(pg_empty: Database) -> Database:
    """An empty schema with the tables created from the models."""
    await pg_empty.create_all()
    return pg_empty


@pytest.mark.parametrize("case", SHARED, ids=lambda fn: f"{fn.__module__.rsplit('.', 1)[-1]}::{fn.__name__}")
async def test_sqlite_test_on_postgres(pg_db: Database, case: Callable[[Database], Awaitable[None]]) -> None:
    await case(pg_db)


def test_the_shared_tests_are_found() -> None:
    names = {fn.__name__ for fn in SHARED}
    assert {
        "test_models_round_trip",
        "test_foreign_keys_enforced",
        "test_apps_and_config_versions",
        "test_api_keys",
        "test_end_users_unique_per_app",
        "test_conversation_pinned_and_isolated",
        "test_list_conversations_pagination",
        "test_messages_and_pagination",
        "test_a_rounds_columns_in_difys_encodings",
        "test_save_thought_usage_and_listing",
        "test_load_history",
        "test_a_message_is_streamed_and_stored",
        "test_a_message_marked_interrupted_keeps_the_answer_and_thoughts_its_stream_stored",
    } <= names


async def test_server_is_postgresql(pg_db: Database) -> None:
    async with pg_db.engine.connect() as conn:
        version = (await conn.execute(text("SHOW server_version_num"))).scalar()
        encoding = (await conn.execute(text("SHOW server_encoding"))).scalar()
    assert int(str(version)) >= 120000 and encoding == "UTF8"


async def test_migrate_matches_create_all(pg_empty: Database) -> None:
    await pg_empty.create_all()
    async with pg_empty.engine.connect() as conn:
        created = await conn.run_sync(db_tests._schema)
    await _reset(pg_empty)
    await pg_empty.migrate()
    await pg_empty.migrate()  # idempotent at head
    async with pg_empty.engine.connect() as conn:
        migrated = await conn.run_sync(db_tests._schema)
        version = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
    assert set(created) == {t.name for t in m.Base.metadata.sorted_tables}
    assert created == migrated
    assert version == db_tests.head_revision()
    # money is NUMERIC(10, 7) on PostgreSQL (a string only on SQLite)
    assert created["messages"]["columns"]["total_price"][0] == "NUMERIC(10, 7)"
    assert created["message_agent_thoughts"]["columns"]["answer_unit_price"][0] == "NUMERIC(10, 7)"


async def test_old_messages_stay_linear_after_migration(pg_empty: Database) -> None:
    await db_tests.check_old_messages_stay_linear(pg_empty)


async def test_migrated_schema_takes_the_repositories(pg_empty: Database) -> None:
    await pg_empty.migrate()
    await repository_tests.test_conversation_pinned_and_isolated(pg_empty)
    await thought_tests.test_save_thought_usage_and_listing(pg_empty)


PRICES = [Decimal("0.0000001"), Decimal("0.0021"), Decimal("123.4567891"), Decimal("999.9999999")]


async def test_decimal_prices_exact_to_seven_places(pg_db: Database) -> None:
    async with pg_db.transaction() as s:
        msg = await thought_tests._message(s)
        msg.total_price = PRICES[2]
        ids = []
        for position, price in enumerate(PRICES, 1):
            t = await rows.add_thought(s, msg.id, position)
            t.message_unit_price, t.answer_unit_price, t.total_price = price, price, price
            t.message_price_unit = Decimal("0.000001")
            ids.append(t.id)
    async with pg_db.session() as s:
        listed = await repo.list_thoughts(s, msg.id)
        stored = await s.get(m.Message, msg.id)
        raw = (await s.execute(text("SELECT total_price::text FROM messages"))).scalar()
    assert [r.id for r in listed] == ids
    for row, price in zip(listed, PRICES, strict=True):
        for value in (row.message_unit_price, row.answer_unit_price, row.total_price):
            assert isinstance(value, Decimal) and value == price
        assert row.message_price_unit == Decimal("0.000001") and row.answer_price_unit == Decimal("0.001")
    assert stored is not None and stored.total_price == Decimal("123.4567891") and raw == "123.4567891"
