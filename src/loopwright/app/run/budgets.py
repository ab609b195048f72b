"""An app's budgets (``budget.*`` of its configuration; docs/memory-and-budgets.md) around its runs.

The per-run caps are the agent's own (:func:`run_budget`, set on the app's agent when it is built:
``agent.budget``). The caps that outlive a run — a conversation's, an end user's per UTC day, the
app's per UTC day — are kept in the database's usage counters (``store.usage``): before a run starts,
:func:`allowance` reads them, refuses the request when one is used up (``BudgetExceededError``: HTTP 429
``budget_exceeded``) and otherwise narrows the run's budget to what is left, so that the run itself
stops before the call that would cross one; when the run has ended, :func:`record` adds what it spent.
An app with none of these caps reads and writes no counter.

Runs of one scope that run at the same time each see the counters as they were when they started: the
caps are exact for runs one after another, and may be overshot by runs that overlap.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.agent.budget import Budget, BudgetExceededError, Cap
from loopwright.app.config import BudgetSettings
from loopwright.store.db import Database
from loopwright.store.usage import CounterKey, Spent, add_usage, read_usage
from loopwright.store.writer import WriteFn

__all__ = ["allowance", "counts", "day_of", "record", "run_budget"]


def run_budget(settings: BudgetSettings) -> Budget | None:
    """The caps of one run, as the agent takes them (None: the app caps no run)."""
    budget = Budget(
        run_tokens=settings.run_tokens,
        run_model_calls=settings.run_model_calls,
        run_tool_calls=settings.run_tool_calls,
        run_cost=settings.run_cost,
    )
    return budget if budget.limited else None


def counts(settings: BudgetSettings) -> bool:
    """Whether the app has a cap that outlives a run (its runs are counted)."""
    return any(
        v is not None
        for v in (
            settings.conversation_tokens,
            settings.conversation_cost,
            settings.end_user_daily_tokens,
            settings.end_user_daily_cost,
            settings.app_daily_tokens,
            settings.app_daily_cost,
        )
    )


def day_of(moment: datetime) -> str:
    """The UTC day a daily counter counts (``YYYY-MM-DD``; ``moment`` is naive UTC)."""
    return moment.date().isoformat()


def _scopes(
    settings: BudgetSettings, app_id: str, end_user_id: str | None, conversation_id: str | None, day: str
) -> list[tuple[str, CounterKey, int | None, Decimal | None]]:
    """(cap name, counter, token cap, cost cap) of each capped scope."""
    scopes: list[tuple[str, CounterKey, int | None, Decimal | None]] = []
    if conversation_id is not None:
        key = ("conversation", conversation_id, "")
        scopes.append(("budget.conversation", key, settings.conversation_tokens, settings.conversation_cost))
    if end_user_id is not None:
        key = ("end_user", end_user_id, day)
        tokens, cost = settings.end_user_daily_tokens, settings.end_user_daily_cost
        scopes.append(("budget.end_user_daily", key, tokens, cost))
    key = ("app", app_id, day)
    scopes.append(("budget.app_daily", key, settings.app_daily_tokens, settings.app_daily_cost))
    return [s for s in scopes if s[2] is not None or s[3] is not None]


async def allowance(
    db: Database,
    settings: BudgetSettings,
    *,
    app_id: str,
    end_user_id: str | None,
    conversation_id: str | None,
    day: str,
) -> list[Cap]:
    """What one more run may spend under the caps that outlive it; raises :class:`BudgetExceededError`
    when a conversation, end user or app has used up a cap (a new conversation or end user: None)."""
    scopes = _scopes(settings, app_id, end_user_id, conversation_id, day)
    if not scopes:
        return []
    async with db.sessionmaker() as session:
        spent = await read_usage(session, [key for _, key, _, _ in scopes])
    caps: list[Cap] = []
    for name, key, token_cap, cost_cap in scopes:
        tokens, cost = spent.get(key, (0, Decimal(0)))
        _refuse_if_used_up(name, token_cap, cost_cap, (tokens, cost))
        caps.append(
            Cap(
                name,
                tokens=None if token_cap is None else token_cap - tokens,
                cost=None if cost_cap is None else cost_cap - cost,
            )
        )
    return caps


def _refuse_if_used_up(name: str, token_cap: int | None, cost_cap: Decimal | None, spent: Spent) -> None:
    tokens, cost = spent
    when = "today" if "daily" in name else "in this conversation"
    if token_cap is not None and tokens >= token_cap:
        raise BudgetExceededError(
            f"{name}_tokens", token_cap, f"Budget exceeded: {name}_tokens ({token_cap}) is used up {when}."
        )
    if cost_cap is not None and cost >= cost_cap:
        raise BudgetExceededError(
            f"{name}_cost", cost_cap, f"Budget exceeded: {name}_cost ({cost_cap}) is used up {when}."
        )


def record(
    settings: BudgetSettings,
    spent: Spent,
    *,
    app_id: str,
    end_user_id: str,
    conversation_id: str,
    day: str,
) -> WriteFn:
    """The write that adds what one run spent, ``(tokens, cost)``, to the counters of its capped
    scopes (for the writer)."""
    keys = [key for _, key, _, _ in _scopes(settings, app_id, end_user_id, conversation_id, day)]
    tokens, cost = spent

    async def write(session: AsyncSession) -> None:
        await add_usage(session, keys, tokens, cost)

    return write
