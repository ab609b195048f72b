"""``GET /v1/messages/{message_id}/agent-log``: the agent log of a message (a loopwright addition in the
shape of Dify's console agent-log endpoint; built by :mod:`loopwright.app.agent_log`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from loopwright.app.agent_log import agent_log
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.state import ServerState, get_state, require_user

router = APIRouter()


@router.get("/v1/messages/{message_id}/agent-log")
async def message_agent_log(
    message_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[ServerState, Depends(get_state)],
    user: str | None = None,
) -> dict[str, Any]:
    """The rounds of one of the user's messages: thoughts, tool calls with inputs, outputs, status and
    time, tokens, and the run's metrics; 404 when the message is not the user's."""
    return await agent_log(state.db, state.lookup, app.id, require_user(user), message_id)
