"""AppLookup: cached keys, configuration versions and end users, and what stays visible at once."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from loopwright.app.config import AppConfig
from loopwright.app.lookup import LATEST_CONFIG_TTL, AppLookup
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import ApiKey, EndUser


async def new_app(db: Database, instruction: str = "v1") -> tuple[str, str]:
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "a", AppConfig(instruction=instruction).model_dump())
        key = await repo.create_api_key(s, app.id)
        return app.id, key.token


async def test_a_key_opens_its_app_and_its_use_is_recorded_once(db: Database) -> None:
    app_id, token = await new_app(db)
    lookup = AppLookup(db)
    for _ in range(5):
        app = await lookup.app_for_key(token)
        assert app is not None and app.id == app_id
    await db.writer.flush()
    async with db.sessionmaker() as s:
        key = await s.scalar(select(ApiKey).where(ApiKey.token == token))
        assert key is not None and key.last_used_at is not None
    assert db.writer.batches == 1  # one last-use write for five requests


async def test_an_unknown_key_is_refused_and_a_new_key_works_at_once(db: Database) -> None:
    app_id, _ = await new_app(db)
    lookup = AppLookup(db)
    assert await lookup.app_for_key("app-nope") is None
    async with db.transaction() as s:
        key = await repo.create_api_key(s, app_id)
    app = await lookup.app_for_key(key.token)
    assert app is not None and app.id == app_id


async def test_concurrent_first_requests_of_a_user_create_one_end_user(db: Database) -> None:
    app_id, _ = await new_app(db)
    lookup = AppLookup(db)
    ids = await asyncio.gather(*(lookup.end_user_id(app_id, "alice") for _ in range(20)))
    assert len(set(ids)) == 1
    await db.writer.flush()
    async with db.sessionmaker() as s:
        rows = list(await s.scalars(select(EndUser).where(EndUser.session_id == "alice")))
    assert [r.id for r in rows] == [ids[0]]
    # A fresh lookup (another process, a restart) finds the stored user.
    assert await AppLookup(db).end_user_id(app_id, "alice") == ids[0]


async def test_a_new_configuration_version_is_seen_after_its_lifetime(db: Database) -> None:
    app_id, _ = await new_app(db, "first")
    now = [100.0]
    lookup = AppLookup(db, clock=lambda: now[0])
    first = await lookup.latest_config(app_id)
    assert first is not None and first.config.instruction == "first"
    async with db.transaction() as s:
        await repo.add_config_version(s, app_id, AppConfig(instruction="second").model_dump())
    cached = await lookup.latest_config(app_id)
    assert cached is not None and cached.config.instruction == "first"  # within the lifetime
    now[0] += LATEST_CONFIG_TTL - 0.01
    cached = await lookup.latest_config(app_id)
    assert cached is not None and cached.config.instruction == "first"  # just within it
    now[0] += 0.02
    newer = await lookup.latest_config(app_id)
    assert newer is not None and newer.config.instruction == "second"
    # The pinned version is still there by id, unchanged.
    pinned = await lookup.config(first.id)
    assert pinned is not None and pinned.config.instruction == "first"
    assert await lookup.config("no-such-id") is None
