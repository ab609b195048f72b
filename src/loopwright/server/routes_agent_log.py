"""``GET /v1/messages/{message_id}/agent-log``: a message's agent log (app.admin.agent_log) with an app key.

Dify serves this log only in its console; here it is an addition to the Service API, for the end
user's own messages (``user`` as in every Service API call).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from loopwright.app.admin import agent_log
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.state import get_state, require_user

router = APIRouter()


@router.get("/v1/messages/{message_id}/agent-log")
async def message_agent_log(
    message_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
    user: str | None = None,
) -> dict[str, Any]:
    who = require_user(user)
    message, thoughts, config_id = await agent_log.find_message(
        state.db, state.lookup, app.id, who, message_id
    )
    version = await state.lookup.config(config_id)
    strategy = (await state.agent(version)).strategy_kind if version is not None else "function-calling"
    return agent_log.agent_log(message, thoughts, executor=who, strategy=strategy)
