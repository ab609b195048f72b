"""``GET /v1/end-users/{id}``: one of the key's app's end users, in Dify's ``EndUserDetail`` shape
(newer Dify). loopwright has no tenants and knows end users only by the client's ``user`` string:
``tenant_id`` is null, ``external_user_id`` and ``session_id`` are that string, ``is_anonymous`` is
true for Dify's default user, and ``updated_at`` is the creation time (an end user never changes)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends

from loopwright.app.admin import conversations
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.errors import ApiError
from loopwright.server.state import DEFAULT_USER, get_state

router = APIRouter()


def end_user_not_found() -> ApiError:
    return ApiError(404, "end_user_not_found", "End user not found.")


@router.get("/v1/end-users/{end_user_id}")
async def get_end_user(
    end_user_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> dict[str, Any]:
    try:
        key = str(uuid.UUID(end_user_id))
    except ValueError:
        raise end_user_not_found() from None
    user = await conversations.end_user(state.db, app.id, key)
    if user is None:
        raise end_user_not_found()
    created = user.created_at.isoformat()
    return {
        "id": user.id,
        "tenant_id": None,
        "app_id": user.app_id,
        "type": "service_api",
        "external_user_id": user.session_id,
        "name": None,
        "is_anonymous": user.session_id == DEFAULT_USER,
        "session_id": user.session_id,
        "created_at": created,
        "updated_at": created,
    }
