"""What an app and its end users spent on one UTC day, from the budgets' usage counters
(app.run.budgets; counted while the app has a cap beyond one run's), for the admin API."""

from __future__ import annotations

import datetime as dt
from typing import Any

from loopwright.errors import UserInputError
from loopwright.store.db import Database
from loopwright.store.models import utcnow
from loopwright.store.usage import app_day

__all__ = ["budget_usage"]


async def budget_usage(db: Database, app_id: str, day: str | None = None) -> dict[str, Any]:
    """``{day, app: {tokens, cost, runs} | None, end_users: [{end_user_id, user, tokens, cost, runs}]}``
    (the 100 end users who spent the most tokens that day; costs as decimal strings)."""
    if day is None:
        day = utcnow().date().isoformat()
    try:
        dt.date.fromisoformat(day)
    except ValueError:
        raise UserInputError(f"day must be a date, YYYY-MM-DD: {day!r}") from None
    async with db.sessionmaker() as session:
        own, users = await app_day(session, app_id, day)
    return {
        "day": day,
        "app": None if own is None else {"tokens": own[0], "cost": str(own[1]), "runs": own[2]},
        "end_users": [
            {"end_user_id": u[0], "user": u[1], "tokens": u[2], "cost": str(u[3]), "runs": u[4]}
            for u in users
        ],
    }
