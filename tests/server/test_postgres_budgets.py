"""Budgets across two workers on one PostgreSQL: what one worker's runs spent caps the requests the
other worker gets, and counters added to at once by many writers lose nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal

import httpx
import pytest

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from loopwright.store.usage import add_usage, read_usage
from tests.live_server import serving
from tests.server.conftest import NewApp
from tests.server.test_budgets import answer, chat, events_of
from tests.store.test_postgres import pg_empty, pg_url

__all__ = ["pg_empty", "pg_url"]  # fixtures, used by name


@pytest.fixture
async def db(pg_empty: Database) -> AsyncIterator[Database]:
    await pg_empty.migrate()
    yield pg_empty


async def test_a_cap_reached_through_one_worker_holds_on_the_other(new_app: NewApp, db: Database) -> None:
    app = await new_app([answer(), answer()], budget={"end_user_daily_tokens": 100})
    one = create_app(db, Settings(), ping_interval=0.05)
    two = create_app(db, Settings(), ping_interval=0.05)
    async with (
        serving(one) as url_one,
        serving(two) as url_two,
        httpx.AsyncClient(base_url=url_one, timeout=30) as first,
        httpx.AsyncClient(base_url=url_two, timeout=30) as second,
    ):
        assert events_of(await chat(first, app))[-1]["event"] == "message_end"
        refused = await chat(second, app)
        assert refused.status_code == 429 and refused.json()["code"] == "budget_exceeded"
        await one.state.loopwright.settled()


async def test_counters_added_at_once_lose_nothing(db: Database) -> None:
    key = ("app", "a1", "2026-11-27")

    async def one_run() -> None:
        async with db.transaction() as session:
            await add_usage(session, [key], 7, Decimal("0.0000003"))

    await asyncio.gather(*(one_run() for _ in range(20)))
    async with db.sessionmaker() as session:
        assert (await read_usage(session, [key]))[key] == (140, Decimal("0.0000060"))
