"""``POST /v1/completion-messages`` (streaming or blocking) and its ``/{task_id}/stop``: Dify's text
generator (a ``completion`` app). Each call is one answer to the form's inputs — Dify's clients send
the text as ``inputs.query`` — in a conversation of its own; the app's instruction with the inputs
filled in is the model's message (``app.run.plan.completion_prompt``). Another kind of app gets
Dify's ``app_unavailable``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import AuthedApp, app_with_mode
from loopwright.server.bodies import DifyUser, json_body
from loopwright.server.event_stream import EventStream
from loopwright.server.routes_chat import StopPayload, respond, task_id_for
from loopwright.server.routes_unsupported import app_unavailable
from loopwright.server.state import get_state, require_user

router = APIRouter()


class CompletionPayload(BaseModel):
    """Dify's ``CompletionRequestPayload``: ``query`` is optional (the text is usually an input)."""

    model_config = ConfigDict(extra="ignore")

    inputs: dict[str, Any]
    query: str = ""
    user: DifyUser
    response_mode: Literal["blocking", "streaming"] | None = None
    files: list[dict[str, Any]] | None = None


async def completion_app(app: Annotated[AuthedApp, Depends(app_with_mode)]) -> AuthedApp:
    """The key's app, when it is a completion app; Dify's ``app_unavailable`` for another kind, before
    the body is read (as Dify checks)."""
    if app.mode != "completion":
        raise app_unavailable()
    return app


@router.post("/v1/completion-messages", response_model=None)
async def completion_messages(
    request: Request,
    app: Annotated[AuthedApp, Depends(completion_app)],
    payload: Annotated[CompletionPayload, Depends(json_body(CompletionPayload))],
    runtime: Annotated[AppRuntime, Depends(get_state)],
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> EventStream | JSONResponse:
    user = require_user(payload.user)
    message = MessageRequest(
        app_id=app.id,
        user=user,
        query=payload.query.replace("\x00", ""),
        inputs=payload.inputs,
        files=payload.files or (),
        response_mode="streaming" if payload.response_mode == "streaming" else "blocking",
        task_id=task_id_for(app.id, user, idempotency_key),
    )
    return await respond(request, runtime, message, app.mode)


@router.post("/v1/completion-messages/{task_id}/stop")
async def stop_completion_message(
    task_id: str,
    app: Annotated[AuthedApp, Depends(completion_app)],
    payload: Annotated[StopPayload, Depends(json_body(StopPayload))],
    runtime: Annotated[AppRuntime, Depends(get_state)],
) -> dict[str, str]:
    """Stop a running completion of this app and user; success even for an unknown task (as Dify)."""
    runtime.stop(task_id, app.id, require_user(payload.user))
    return {"result": "success"}
