"""Dify 1.13's human-input wire for runs paused for tool approvals (``app.run.human_input``).

- ``GET /v1/form/human_input/{form_token}``: the form (``form_content``, ``inputs``,
  ``resolved_default_values``, ``user_actions``, ``expiration_time``), as Dify's. ``user`` in the query
  is optional (Dify's route takes none); given, it must be the form's.
- ``POST /v1/form/human_input/{form_token}``: ``{"inputs": {...}, "action": "approve"|"reject",
  "user"}`` decides the run; the answer is Dify's ``{}``. The run goes on in the background.
- ``GET /v1/workflow/{task_id}/events``: the run's stream — with ``include_state_snapshot=true`` from
  its first event, else from the last pause on (what the decision started) — until it ends or pauses
  again; ``continue_on_pause=true`` keeps the stream open across pauses: after a pause, it waits for
  the next decision and goes on.

Unknown tokens, another app's, another user's: 404; a used or expired form, or one whose pause was
decided another way: 412 (Dify's answers).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from loopwright.app.dify.events import EventHead
from loopwright.app.run.journal import Replayed
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.bodies import DifyUser, json_body
from loopwright.server.event_stream import EventStream
from loopwright.server.routes_chat import SSE_HEADERS
from loopwright.server.sse import replay_to
from loopwright.server.state import get_state, require_user

router = APIRouter()

PAUSED = "workflow_paused"


class FormSubmission(BaseModel):
    model_config = ConfigDict(extra="ignore")

    inputs: dict[str, JsonValue] = Field(default_factory=dict)
    action: str = Field(min_length=1, max_length=64)
    user: DifyUser


@router.get("/v1/form/human_input/{form_token}")
async def get_human_input_form(
    form_token: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    runtime: Annotated[AppRuntime, Depends(get_state)],
    user: Annotated[str | None, Query(max_length=255)] = None,
) -> JSONResponse:
    form = await runtime.human_input_form(form_token, app.id, user or None)
    return JSONResponse(form.definition())


@router.post("/v1/form/human_input/{form_token}")
async def submit_human_input_form(
    form_token: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    payload: Annotated[FormSubmission, Depends(json_body(FormSubmission))],
    runtime: Annotated[AppRuntime, Depends(get_state)],
) -> JSONResponse:
    user = require_user(payload.user)
    await runtime.submit_human_input(form_token, app.id, user, payload.action, payload.inputs)
    return JSONResponse({})


def _pause_seqs(batch: list[Replayed]) -> list[int]:
    return [e.seq for e in batch if isinstance(e.item, dict) and e.item.get("event") == PAUSED]


async def _followed(
    runtime: AppRuntime, task_id: str, app_id: str, user: str, snapshot: bool, across_pauses: bool
) -> tuple[EventHead, AsyncIterator[list[Replayed]]]:
    """The events a client asked for: the stored ones it wants, then the live ones (see the module's
    docstring)."""
    head, seen, ended = await _settled(runtime, task_id, app_id, user)
    last = seen[-1].seq if seen else 0
    pauses = _pause_seqs(seen)
    paused_now = ended and bool(pauses) and pauses[-1] == last  # still waiting at its last pause
    before = [p for p in pauses if p < last] if paused_now else pauses
    # without the snapshot: what the last decision started (up to the pause waiting now, if any)
    first = seen if snapshot or not before else [e for e in seen if e.seq > before[-1]]

    async def events() -> AsyncIterator[list[Replayed]]:
        if first:
            yield first
        after, paused = last, paused_now
        while True:
            if paused:
                if not across_pauses:
                    return
                async for ping in _decided(runtime, task_id, app_id, user, after):
                    yield ping
            _, live = await runtime.follow(task_id, app_id, user, after)
            paused = False
            async for batch in live:
                if batch:
                    after = batch[-1].seq
                    paused = bool(_pause_seqs(batch[-1:]))
                yield batch
            if not (across_pauses and paused):
                return

    return head, events()


async def _settled(
    runtime: AppRuntime, task_id: str, app_id: str, user: str
) -> tuple[EventHead, list[Replayed], bool]:
    """The stored events and whether the stream ended, once a pause just announced is settled: a
    stream whose last event is ``workflow_paused`` and that has not ended is either ending there (its
    end is being written) or resumed (a decision reopened it, its next event is coming) — whichever
    it is shows within moments."""
    while True:
        head, seen, ended = await runtime.stored_events(task_id, app_id, user)
        if ended or not seen or not _pause_seqs(seen[-1:]):
            return head, seen, ended
        await asyncio.sleep(runtime.journal.poll_interval / 4)
        _, again, ended = await runtime.stored_events(task_id, app_id, user)
        if ended or (again and again[-1].seq > seen[-1].seq):
            return head, again, ended


async def _decided(
    runtime: AppRuntime, task_id: str, app_id: str, user: str, after: int
) -> AsyncIterator[list[Replayed]]:
    """Wait until a paused stream goes on (a decision resumed it), a ping (empty batch) now and then."""
    loop = asyncio.get_running_loop()
    quiet_since = loop.time()
    while True:
        _, stored, ended = await runtime.stored_events(task_id, app_id, user)
        if not ended or (stored and stored[-1].seq > after):
            return
        await asyncio.sleep(runtime.journal.poll_interval)
        if loop.time() - quiet_since >= runtime.ping_interval:
            quiet_since = loop.time()
            yield []


@router.get("/v1/workflow/{task_id}/events", response_model=None)
async def workflow_events(
    task_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    runtime: Annotated[AppRuntime, Depends(get_state)],
    user: Annotated[str | None, Query()] = None,
    include_state_snapshot: Annotated[bool, Query()] = False,
    continue_on_pause: Annotated[bool, Query()] = False,
) -> EventStream:
    head, events = await _followed(
        runtime, task_id, app.id, require_user(user), include_state_snapshot, continue_on_pause
    )
    ids = runtime.settings.sse_event_ids == "always"
    return EventStream(partial(replay_to, head, events, ids=ids), headers=SSE_HEADERS)
