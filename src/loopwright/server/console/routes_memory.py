"""Admin API: what an app remembers of one end user (``memory.long_term``) — view, edit, delete. The work
is :mod:`loopwright.app.admin.end_user_memory`'s."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

import pydantic
from fastapi import APIRouter, Depends, Response

from loopwright.app.admin import end_user_memory as memory
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.bodies import json_body
from loopwright.server.console.auth import require_admin
from loopwright.server.state import get_state

router = APIRouter(prefix="/console/api", dependencies=[Depends(require_admin)])
State = Annotated[AppRuntime, Depends(get_state)]
BASE = "/apps/{app_id}/end-users/{end_user_id}/memory"


class WorkingMemory(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    working_memory: str = pydantic.Field(max_length=20_000)


@router.get(BASE)
async def view(app_id: str, end_user_id: str, state: State) -> dict[str, Any]:
    """The end user's working memory and observations, newest first."""
    return asdict(await memory.memory_of(state.db, app_id, end_user_id))


@router.put(BASE)
async def replace(
    app_id: str,
    end_user_id: str,
    state: State,
    body: Annotated[WorkingMemory, Depends(json_body(WorkingMemory))],
) -> dict[str, Any]:
    await memory.set_working_memory(state.db, app_id, end_user_id, body.working_memory)
    return asdict(await memory.memory_of(state.db, app_id, end_user_id))


@router.delete(BASE, status_code=204)
async def forget(app_id: str, end_user_id: str, state: State) -> Response:
    await memory.delete_memory(state.db, app_id, end_user_id)
    return Response(status_code=204)


@router.delete(BASE + "/observations/{observation_id}", status_code=204)
async def forget_one(app_id: str, end_user_id: str, observation_id: str, state: State) -> Response:
    await memory.delete_observation(state.db, app_id, end_user_id, observation_id)
    return Response(status_code=204)
