"""Two workers on one database that see a new user's first messages at once: both give the user the
same id, one row is written (the second insert does nothing), and every message is stored — before,
the second worker's end-user insert failed its unique key and took its conversations down with it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.app.config import AppConfig
from loopwright.app.run.runtime import AppRuntime
from loopwright.config import Settings
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Conversation, EndUser, Message
from loopwright.testing import ScriptedModel
from tests.app.test_messages import ask, new_app

URL_ENV = "LOOPWRIGHT_TEST_POSTGRES_URL"


@pytest.fixture(params=["sqlite", "postgresql"])
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """The URL of an empty database (the app's tables made)."""
    if request.param == "sqlite":
        found = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    else:
        found = os.environ.get(URL_ENV, "")
        if not found:
            pytest.skip(f"{URL_ENV} is not set: no PostgreSQL server")
    db = Database(found)
    if request.param == "postgresql":
        async with db.engine.begin() as conn:
            await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            await conn.execute(text("CREATE SCHEMA public"))
    await db.create_all()
    await db.close()
    yield found


async def test_a_new_users_first_messages_on_two_workers_at_once_are_all_stored(url: str) -> None:
    first, second = Database(url), Database(url)  # two processes' own connections and writers
    app_id = await new_app(first, AppConfig(model="scripted"))
    workers = [
        AppRuntime(db, Settings(), tools=[], models={"scripted": ScriptedModel(["Hello."] * 4)})
        for db in (first, second)
    ]
    try:
        # both look the user up before either writes it
        runs = await asyncio.gather(
            *(w.start(ask(app_id, f"Hi from worker {i}.", user="carol")) for i, w in enumerate(workers))
        )
        outcomes = await asyncio.gather(*(run.outcome() for run in runs))
        assert [o.status for o in outcomes] == ["normal", "normal"]
        for worker in workers:
            await worker.shutdown()
        async with first.sessionmaker() as s:
            users = (await s.scalars(select(EndUser).where(EndUser.session_id == "carol"))).all()
            assert len(users) == 1
            owners = set((await s.scalars(select(Conversation.end_user_id))).all())
            stored = await s.scalar(
                select(func.count()).select_from(Message).where(Message.status == "normal")
            )
            again = await repo.get_or_create_end_user(s, app_id, "carol")  # a request's path
        assert owners == {users[0].id} and stored == 2
        assert again.id == users[0].id
    finally:
        await first.close()
        await second.close()


async def test_get_or_create_end_user_takes_the_row_another_worker_wrote_meanwhile(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other worker's row lands between this one's look-up and its insert: the insert does
    nothing, and the row found after it is returned."""
    first, second = Database(url), Database(url)
    app_id = await new_app(first, AppConfig(model="scripted"))
    find = repo.find_end_user
    looked: list[str] = []

    async def find_before_the_other(session: AsyncSession, app: str, user: str) -> EndUser | None:
        if not looked:  # the first look-up misses: the other worker writes the row just after it
            looked.append(user)
            async with first.transaction() as other:
                await repo.get_or_create_end_user(other, app, user)
            return None
        return await find(session, app, user)

    monkeypatch.setattr(repo, "find_end_user", find_before_the_other)
    try:
        async with second.transaction() as session:
            mine = await repo.get_or_create_end_user(session, app_id, "dave")
        async with first.sessionmaker() as s:
            rows = (await s.scalars(select(EndUser).where(EndUser.session_id == "dave"))).all()
        assert looked == ["dave"] and [r.id for r in rows] == [mine.id]
    finally:
        await first.close()
        await second.close()
