"""``GET /v1/chat-messages/{task_id}/events``: re-attach to a message's stream (our addition to Dify's API).

A client that lost its stream — a dropped connection, a reload, another device — asks for the events
after the last ``id:`` it saw (the ``Last-Event-ID`` header, which a browser's ``EventSource`` sends by
itself when it reconnects, or ``last_event_id`` in the query) and gets them, then the rest live until
the message ends. Any worker answers, whichever one runs the message; only the app's ``user`` who sent
the message may read it; an ended stream can be replayed for the retention period (``app.run.journal``).
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query

from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.errors import invalid_param
from loopwright.server.event_stream import EventStream
from loopwright.server.routes_chat import SSE_HEADERS
from loopwright.server.sse import replay_to
from loopwright.server.state import get_state, require_user

router = APIRouter()


def _after(header: str | None, query: str | None) -> int:
    value = header if header is not None and header.strip() else query
    if value is None or not value.strip():
        return 0
    try:
        after = int(value.strip())
    except ValueError:
        raise invalid_param("Last-Event-ID must be the number of an event") from None
    if after < 0:
        raise invalid_param("Last-Event-ID must be the number of an event")
    return after


@router.get("/v1/chat-messages/{task_id}/events", response_model=None)
async def chat_message_events(
    task_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    runtime: Annotated[AppRuntime, Depends(get_state)],
    user: Annotated[str | None, Query()] = None,
    last_event_id: Annotated[str | None, Query()] = None,
    last_event_id_header: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> EventStream:
    after = _after(last_event_id_header, last_event_id)
    head, events = await runtime.follow(task_id, app.id, require_user(user), after)
    ids = runtime.settings.sse_event_ids != "never"  # this route is there to re-attach with them
    return EventStream(partial(replay_to, head, events, ids=ids), headers=SSE_HEADERS)
