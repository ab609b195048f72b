"""``GET /health``, outside ``/v1`` and without a key: for containers, load balancers and scripts
waiting for a server to start. 200 ``{"status": "ok"}`` when the database answers, else 503."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from loopwright.app.admin.health import database_ok
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.state import get_state

router = APIRouter()


@router.get("/health")
async def health(state: Annotated[AppRuntime, Depends(get_state)]) -> JSONResponse:
    if await database_ok(state.db):
        return JSONResponse({"status": "ok"})
    return JSONResponse({"status": "unavailable", "database": "not answering"}, status_code=503)
