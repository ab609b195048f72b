"""Admin API: an app's logs — its conversations (every end user's), a conversation's messages with
their agent logs, feedback and usage, all feedback, and usage per day. The work is
:mod:`loopwright.app.admin.app_logs`'s."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from loopwright.app.admin import app_logs
from loopwright.app.admin import apps as admin
from loopwright.app.admin import budget_usage as spent
from loopwright.app.admin.conversations import app_feedbacks
from loopwright.app.run.prompt_log import call_view
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.console.auth import require_admin
from loopwright.server.errors import not_found
from loopwright.server.state import get_state

router = APIRouter(prefix="/console/api", dependencies=[Depends(require_admin)])
State = Annotated[AppRuntime, Depends(get_state)]


@router.get("/apps/{app_id}/conversations")
async def conversations(
    app_id: str,
    state: State,
    page: Annotated[int, Query(ge=1)] = 1,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    await admin.check_app(app_id, db=state.db)
    return asdict(await app_logs.conversation_logs(state.db, app_id, page=page, limit=limit))


@router.get("/apps/{app_id}/conversations/{conversation_id}")
async def conversation(app_id: str, conversation_id: str, state: State) -> dict[str, Any]:
    """The conversation and its messages, each with its feedback, usage and agent log."""
    return asdict(await app_logs.conversation_messages(state.db, state.lookup, app_id, conversation_id))


@router.get("/apps/{app_id}/feedbacks")
async def feedbacks(
    app_id: str,
    state: State,
    page: Annotated[int, Query(ge=1)] = 1,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    await admin.check_app(app_id, db=state.db)
    rows = await app_feedbacks(state.db, app_id, page=page, limit=limit)
    return {
        "data": [
            {**asdict(f), "created_at": f.created_at.isoformat(), "updated_at": f.updated_at.isoformat()}
            for f in rows
        ]
    }


@router.get("/apps/{app_id}/usage")
async def usage(app_id: str, state: State, days: Annotated[int, Query(ge=1, le=366)] = 30) -> dict[str, Any]:
    """Messages, tokens, price, errors and mean latency per day (UTC) over the last ``days`` days."""
    await admin.check_app(app_id, db=state.db)
    found = await app_logs.usage(state.db, app_id, days=days)
    out = asdict(found)
    for day in out["days"]:
        day["total_price"] = str(day["total_price"])
    return out


@router.get("/apps/{app_id}/budget-usage")
async def budget_usage(app_id: str, state: State, day: str | None = None) -> dict[str, Any]:
    """What the app and its end users spent on a UTC day (default: today), as its budgets count it."""
    await admin.check_app(app_id, db=state.db)
    return await spent.budget_usage(state.db, app_id, day)


@router.get("/messages/{message_id}/prompts")
async def prompts(message_id: str, state: State) -> dict[str, Any]:
    """What the model received for a message, call by call (messages, tools, stop words, settings):
    kept in memory for the last 200 messages this server process ran while the console was on."""
    calls = state.prompt_log.calls(message_id) if state.prompt_log is not None else None
    if calls is None:
        raise not_found("no prompts kept for this message (only the last 200 this server process ran)")
    return {"message_id": message_id, "calls": [call_view(c) for c in calls]}
