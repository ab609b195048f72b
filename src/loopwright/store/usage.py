"""Usage counters (``usage_counters``): what an app, an end user and a conversation spent.

Counters are added to in place, in the database (``tokens = tokens + :n``), so that any number of
workers on one database count together and a restart loses nothing. A key is ``(scope, scope_id,
day)``; ``day`` is ``""`` for a count that never resets.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import EndUser, UsageCounter, utcnow

__all__ = ["CounterKey", "Spent", "add_usage", "app_day", "read_usage"]

CounterKey = tuple[str, str, str]  # (scope, scope_id, day)
Spent = tuple[int, Decimal]  # (tokens, cost)
COST_UNIT = Decimal("0.0000001")  # what ``cost_units`` counts


async def add_usage(session: AsyncSession, keys: Sequence[CounterKey], tokens: int, cost: Decimal) -> None:
    """Add one run's ``tokens`` and ``cost`` to each counter of ``keys`` (created at zero when new)."""
    if not keys:
        return
    now = utcnow()
    units = int((cost / COST_UNIT).to_integral_value())
    counted = {"tokens": tokens, "cost_units": units, "runs": 1, "updated_at": now}
    rows: list[dict[str, Any]] = [{"scope": s, "scope_id": i, "day": d, **counted} for s, i, d in keys]
    c = UsageCounter
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    insert = postgresql.insert(c) if dialect == "postgresql" else sqlite.insert(c)
    for row in rows:  # one statement per counter: an upsert adds to the row it finds
        stmt = insert.values(row)
        await session.execute(
            stmt.on_conflict_do_update(
                index_elements=["scope", "scope_id", "day"],
                set_={
                    "tokens": c.tokens + stmt.excluded.tokens,
                    "cost_units": c.cost_units + stmt.excluded.cost_units,
                    "runs": c.runs + 1,
                    "updated_at": stmt.excluded.updated_at,
                },
            )
        )


async def read_usage(session: AsyncSession, keys: Sequence[CounterKey]) -> dict[CounterKey, Spent]:
    """The counters of ``keys`` (a key never counted is absent)."""
    if not keys:
        return {}
    c = UsageCounter
    match = or_(*(and_(c.scope == s, c.scope_id == i, c.day == d) for s, i, d in keys))
    query = select(c.scope, c.scope_id, c.day, c.tokens, c.cost_units).where(match)
    rows = (await session.execute(query)).all()
    return {(r.scope, r.scope_id, r.day): (int(r.tokens), r.cost_units * COST_UNIT) for r in rows}


async def app_day(
    session: AsyncSession, app_id: str, day: str, *, limit: int = 100
) -> tuple[tuple[int, Decimal, int] | None, list[tuple[str, str, int, Decimal, int]]]:
    """An app's counters of one day: its own ``(tokens, cost, runs)`` (None: not counted), and its end
    users' ``(end_user_id, user, tokens, cost, runs)``, the most tokens first (at most ``limit``)."""
    c = UsageCounter
    own = (
        await session.execute(
            select(c.tokens, c.cost_units, c.runs).where(c.scope == "app", c.scope_id == app_id, c.day == day)
        )
    ).first()
    users = (
        await session.execute(
            select(c.scope_id, EndUser.session_id, c.tokens, c.cost_units, c.runs)
            .join(EndUser, EndUser.id == c.scope_id)
            .where(c.scope == "end_user", c.day == day, EndUser.app_id == app_id)
            .order_by(c.tokens.desc())
            .limit(limit)
        )
    ).all()
    app_row = (int(own.tokens), own.cost_units * COST_UNIT, int(own.runs)) if own is not None else None
    return app_row, [(r[0], r[1], int(r[2]), r[3] * COST_UNIT, int(r[4])) for r in users]
