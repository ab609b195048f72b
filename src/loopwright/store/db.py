"""The database handle: an async engine, a session factory, schema creation and Alembic migrations.

URL resolution (first that is set wins):

1. the ``url`` argument;
2. ``DATABASE_URL`` (e.g. ``postgresql+asyncpg://user:pw@host/db``);
3. ``sqlite+aiosqlite:///<LOOPWRIGHT_DB>``, with ``LOOPWRIGHT_DB`` defaulting to ``loopwright.db`` in
   the data directory (:mod:`loopwright.paths`), so every command and the server share one database
   wherever they are started. The SQLite file's folder is created when the database is opened.

SQLite connections get ``journal_mode=WAL``, ``foreign_keys=ON`` and ``busy_timeout``. Writes on the
hot path go through :attr:`Database.writer` (queued, batched, in order); ``transaction()`` sees them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, event, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from loopwright.errors import StorageError
from loopwright.paths import default_db_path, sqlite_path_of_url
from loopwright.store.models import Base
from loopwright.store.writer import WriteBehind

__all__ = ["Database", "resolve_url"]

SQLITE_BUSY_TIMEOUT_MS = 5000
MIGRATIONS_DIR = Path(__file__).with_name("migrations")
MIGRATION_LOCK_KEY = 0x6C77_6D69_6772  # "lwmigr": the advisory lock held while migrating (PostgreSQL)


def resolve_url(url: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The database URL: ``url``, else ``DATABASE_URL``, else SQLite at ``LOOPWRIGHT_DB``."""
    env = os.environ if env is None else env
    if url:
        return url
    if env.get("DATABASE_URL"):
        return env["DATABASE_URL"]
    return f"sqlite+aiosqlite:///{env.get('LOOPWRIGHT_DB') or default_db_path(env)}"


def _make_sqlite_folder(url: str) -> None:
    # SQLite creates a missing file but not its folder ("unable to open database file").
    path = sqlite_path_of_url(url)
    if path is not None:
        with contextlib.suppress(OSError):  # then SQLite says what is wrong when it opens the file
            path.parent.mkdir(parents=True, exist_ok=True)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode=WAL")  # ignored (stays "memory") for in-memory databases
        # With WAL, NORMAL syncs at checkpoints instead of every commit: a crash cannot corrupt the
        # file, at worst the last commits before a power loss are lost. Commits drop from ~5 ms to µs.
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


class Database:
    """An async engine and its session factory. ``await close()`` when done."""

    def __init__(self, url: str | None = None, *, echo: bool = False) -> None:
        self.url = resolve_url(url)
        _make_sqlite_folder(self.url)
        # A server database that restarted leaves the pool's connections dead: each is checked
        # when taken (one round trip), so the first requests after a restart do not fail on them.
        ping = not self.url.startswith("sqlite")
        try:
            self.engine: AsyncEngine = create_async_engine(self.url, echo=echo, pool_pre_ping=ping)
        except ModuleNotFoundError as exc:  # the URL's driver (asyncpg: the postgres extra)
            extra = " pip install 'loopwright[postgres]'" if exc.name == "asyncpg" else ""
            raise StorageError(f"the database driver {exc.name!r} is not installed.{extra}") from None
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        self.sessionmaker: async_sessionmaker[AsyncSession] = async_sessionmaker(
            self.engine, expire_on_commit=False
        )
        self.writer = WriteBehind(self.sessionmaker)
        self.closed = False

    def session(self) -> AsyncSession:
        """A new session; use as ``async with db.session() as s:`` and commit yourself."""
        return self.sessionmaker()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A session in a transaction: committed on success, rolled back on error. It sees every write
        queued on :attr:`writer` before it began."""
        await self.writer.flush()
        async with self.sessionmaker() as session, session.begin():
            yield session

    async def create_all(self) -> None:
        """Create every table from the models (tests, throwaway databases)."""
        async with self.engine.begin() as conn:
            await conn.run_sync(Base.metadata.create_all)

    async def migrate(self, revision: str = "head") -> None:
        """Run the Alembic migrations up to ``revision`` on this database. On PostgreSQL, workers that
        start together migrate one after the other (a transaction-scoped advisory lock)."""
        async with self.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            await conn.run_sync(_upgrade, revision)

    async def close(self) -> None:
        """Apply the queued writes and release the connections; later writes through ``writer`` are
        refused (``closed`` says so to work that would start after it)."""
        self.closed = True
        await self.writer.close(final=True)
        await self.engine.dispose()


def alembic_config(connection: Connection | None = None) -> Any:
    """An Alembic ``Config`` for loopwright's migrations, optionally bound to an open connection."""
    from alembic.config import Config

    # Alembic's default ``stdout`` is the sys.stdout of when alembic.config was imported; pass the one
    # in use now (under a test runner or a redirect the import-time stream may be closed since).
    cfg = Config(stdout=sys.stdout)
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def _upgrade(connection: Connection, revision: str) -> None:
    from alembic import command

    command.upgrade(alembic_config(connection), revision)
