"""Usage counters (store.usage): added to in place, exactly, per scope and day."""

from __future__ import annotations

import asyncio
from decimal import Decimal

from loopwright.store.db import Database
from loopwright.store.usage import add_usage, read_usage


async def test_counters_add_exactly_and_keep_scopes_and_days_apart(db: Database) -> None:
    today, yesterday = ("app", "a1", "2026-11-27"), ("app", "a1", "2026-11-26")
    user = ("end_user", "u1", "2026-11-27")

    async def one_run(key: tuple[str, str, str]) -> None:
        async with db.transaction() as session:
            await add_usage(session, [key, user], 7, Decimal("0.1"))

    await asyncio.gather(*(one_run(today) for _ in range(10)), one_run(yesterday))
    async with db.sessionmaker() as session:
        spent = await read_usage(session, [today, yesterday, user, ("app", "a2", "2026-11-27")])
    assert spent == {today: (70, Decimal("1.0")), yesterday: (7, Decimal("0.1")), user: (77, Decimal("1.1"))}
