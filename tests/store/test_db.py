from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, inspect, text
from sqlalchemy.exc import IntegrityError

from loopwright.store import models as m
from loopwright.store.db import Database, resolve_url


def test_resolve_url() -> None:
    assert resolve_url("sqlite+aiosqlite:///x.db", {}) == "sqlite+aiosqlite:///x.db"
    assert resolve_url(None, {"LOOPWRIGHT_DATA_DIR": "/data"}) == "sqlite+aiosqlite:////data/loopwright.db"
    assert resolve_url(None, {"LOOPWRIGHT_DB": "/d/l.db"}) == "sqlite+aiosqlite:////d/l.db"
    env = {"LOOPWRIGHT_DB": "/d/l.db", "DATABASE_URL": "postgresql+asyncpg://u@h/db"}
    assert resolve_url(None, env) == "postgresql+asyncpg://u@h/db"


def test_database_reads_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("LOOPWRIGHT_DB", str(tmp_path / "env.db"))
    assert Database().url == f"sqlite+aiosqlite:///{tmp_path / 'env.db'}"


async def test_a_new_database_file_gets_its_folder(tmp_path: Path) -> None:
    # The data directory may not exist yet on a new machine: SQLite alone fails with "unable to open".
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'a' / 'b' / 'new.db'}")
    try:
        await db.migrate()
    finally:
        await db.close()
    assert (tmp_path / "a" / "b" / "new.db").is_file()


async def test_sqlite_pragmas(db: Database) -> None:
    async with db.engine.connect() as conn:
        assert (await conn.execute(text("PRAGMA foreign_keys"))).scalar() == 1
        assert (await conn.execute(text("PRAGMA journal_mode"))).scalar() == "wal"
        assert (await conn.execute(text("PRAGMA busy_timeout"))).scalar() == 5000


async def test_models_round_trip(db: Database) -> None:
    async with db.transaction() as s:
        app = m.App(name="a")
        s.add(app)
        await s.flush()
        cfg = m.AppConfig(app_id=app.id, version=1, config={"model": "x", "tools": ["t"]})
        user = m.EndUser(app_id=app.id, session_id="u1")
        s.add_all([cfg, user])
        await s.flush()
        conv = m.Conversation(app_id=app.id, app_config_id=cfg.id, end_user_id=user.id, inputs={"k": "v"})
        s.add(conv)
        await s.flush()
        msg = m.Message(conversation_id=conv.id, app_id=app.id, query="hi", total_price=Decimal("0.0001234"))
        s.add(msg)
        await s.flush()
        ids = (app.id, conv.id, msg.id)
    async with db.session() as s:
        app2 = await s.get(m.App, ids[0])
        assert app2 is not None and app2.mode == "agent-chat" and app2.created_at is not None
        conv2 = await s.get(m.Conversation, ids[1])
        assert conv2 is not None
        assert conv2.inputs == {"k": "v"} and conv2.is_deleted is False and conv2.status == "normal"
        msg2 = await s.get(m.Message, ids[2])
        assert msg2 is not None
        assert msg2.total_price == Decimal("0.0001234") and isinstance(msg2.total_price, Decimal)
        assert (msg2.answer, msg2.status, msg2.currency) == ("", "normal", "USD")


async def test_foreign_keys_enforced(db: Database) -> None:
    with pytest.raises(IntegrityError):
        async with db.transaction() as s:
            s.add(m.EndUser(app_id="missing", session_id="u"))


def _schema(conn: Connection) -> dict[str, Any]:
    insp = inspect(conn)
    out: dict[str, Any] = {}
    for table in insp.get_table_names():
        if table == "alembic_version":
            continue
        out[table] = {
            "columns": {
                c["name"]: (str(c["type"]), c["nullable"], c.get("primary_key"))
                for c in insp.get_columns(table)
            },
            "indexes": sorted(
                (i["name"], tuple(i["column_names"]), bool(i["unique"])) for i in insp.get_indexes(table)
            ),
            "uniques": sorted(
                (u["name"], tuple(u["column_names"])) for u in insp.get_unique_constraints(table)
            ),
            "fks": sorted(
                (tuple(f["constrained_columns"]), f["referred_table"], tuple(f["referred_columns"]))
                for f in insp.get_foreign_keys(table)
            ),
        }
    return out


def head_revision() -> str:
    """The newest migration's revision id."""
    from alembic.script import ScriptDirectory

    from loopwright.store.db import alembic_config

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


async def test_migrate_matches_create_all(tmp_path: Path) -> None:
    created = Database(f"sqlite+aiosqlite:///{tmp_path / 'created.db'}")
    migrated = Database(f"sqlite+aiosqlite:///{tmp_path / 'migrated.db'}")
    try:
        await created.create_all()
        await migrated.migrate()
        await migrated.migrate()  # idempotent at head
        async with created.engine.connect() as c1, migrated.engine.connect() as c2:
            a = await c1.run_sync(_schema)
            b = await c2.run_sync(_schema)
            version = (await c2.execute(text("SELECT version_num FROM alembic_version"))).scalar()
        assert set(a) == {t.name for t in m.Base.metadata.sorted_tables}
        assert a == b
        assert version == head_revision()
    finally:
        await created.close()
        await migrated.close()


def test_alembic_prints_to_the_stdout_in_use_now() -> None:
    """Alembic's own default is the sys.stdout of its import, which a test runner may have closed
    since ("I/O operation on closed file" from ``command.check``)."""
    import contextlib
    import io

    from loopwright.store.db import alembic_config

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert alembic_config().stdout is buffer


async def check_old_messages_stay_linear(database: Database) -> None:
    """Messages stored without a parent before migration 0016 read as linear history after it."""
    from loopwright.store import repositories as repo
    from loopwright.store.threads import UUID_NIL, load_tree
    from tests.store import rows

    await database.migrate("0015_answered_by")
    async with database.transaction() as s:
        app, _ = await repo.create_app(s, "old", {})
        user = await repo.get_or_create_end_user(s, app.id, "u")
        conv = await rows.create_conversation(s, app.id, user.id)
        ids = [(await rows.create_message(s, conv, f"q{i}", parent_message_id=None)).id for i in range(3)]
    await database.migrate()
    async with database.session() as s:
        stored = (await s.execute(text("SELECT DISTINCT parent_message_id FROM messages"))).scalars().all()
        tree = await load_tree(s, conv.id)
    assert stored == [UUID_NIL]
    assert tree.thread() == ids  # each message follows the one before it, as before the migration


async def test_old_messages_stay_linear_after_migration(tmp_path: Path) -> None:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'old.db'}")
    try:
        await check_old_messages_stay_linear(database)
    finally:
        await database.close()
