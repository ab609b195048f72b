"""``POST /v1/chat-messages/{task_id}/approvals``: decisions on the tool calls a paused run waits for.

loopwright's own route (Dify has none). The body: ``user`` (the one the message belongs to),
``decisions`` — ``{"call_id", "action": "approve" | "deny" | "answer", "reason"?, "arguments"?,
"answer"?}`` per call; ``arguments`` approves with edited arguments, ``answer`` answers an ``ask_user``
call (its observation) — and ``response_mode``. The answer is the rest of the
message, as ``POST /v1/chat-messages`` gives it: a stream of SSE frames (same task and message ids)
or the blocking body.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from loopwright.app.availability import current_config
from loopwright.app.run.approvals import ApprovalsRequest, Decision
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.bodies import DifyUser, json_body
from loopwright.server.event_stream import EventStream
from loopwright.server.routes_chat import SSE_HEADERS, blocking_body
from loopwright.server.sse import stream_to, wants_event_ids
from loopwright.server.state import get_state, require_user

router = APIRouter()


class DecisionPayload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1)
    action: Literal["approve", "deny", "answer"]
    reason: str = Field("", max_length=2000)
    arguments: dict[str, Any] | None = None
    answer: str = Field("", max_length=10_000)


class ApprovalsPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    user: DifyUser
    decisions: list[DecisionPayload] = Field(min_length=1)
    response_mode: Literal["blocking", "streaming"] | None = None


@router.post("/v1/chat-messages/{task_id}/approvals", response_model=None)
async def approve_tool_calls(
    http: Request,
    task_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    payload: Annotated[ApprovalsPayload, Depends(json_body(ApprovalsPayload))],
    runtime: Annotated[AppRuntime, Depends(get_state)],
) -> EventStream | JSONResponse:
    streaming = payload.response_mode != "blocking"
    request = ApprovalsRequest(
        task_id=task_id,
        app_id=app.id,
        user=require_user(payload.user),
        decisions=[Decision(d.call_id, d.action, d.reason, d.arguments, d.answer) for d in payload.decisions],
        response_mode="streaming" if streaming else "blocking",
    )
    run = await runtime.resume(request)
    if streaming:
        ids = wants_event_ids(http, runtime.settings)
        return EventStream(partial(stream_to, run, ids=ids), headers=SSE_HEADERS)
    mode = (await current_config(runtime.lookup, app.id)).mode
    return JSONResponse(blocking_body(run.task_id, await run.outcome(), mode))
