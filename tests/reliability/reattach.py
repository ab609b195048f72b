"""A client coming back to a run on a real server: the stream's rest after the last event it had
(``GET /v1/chat-messages/{task_id}/events`` with ``Last-Event-ID``), the whole stream from its start
(the same, without it), then the conversation's history (``GET /v1/messages``) — in that order: the
rest waits for the run to end (it may be taken up by another worker first), so the whole stream and
the history read what the run left."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from tests.sse import numbered

Numbered = list[tuple[int, dict[str, Any]]]


@dataclass(frozen=True)
class Reattached:
    """What the client got: ``tail`` (the events after ``Last-Event-ID``), ``replayed`` (every stored
    event from the first) — each as ``(id, event)``, pings left out — and ``history`` (the messages of
    the conversation, ``GET /v1/messages``'s ``data``)."""

    tail: Numbered
    replayed: Numbered
    history: list[dict[str, Any]]


def reattach(
    base: str,
    headers: dict[str, str],
    task_id: str,
    conversation_id: str,
    last_event_id: int,
    *,
    user: str = "alice",
) -> Reattached:
    """Re-attach to ``task_id`` on the server at ``base`` after event ``last_event_id`` (see the
    module's docstring); the rest may take as long as the run (up to 120 s)."""
    events_url = f"{base}/v1/chat-messages/{task_id}/events"
    params = {"user": user}
    rest = httpx.get(
        events_url, params=params, headers={**headers, "Last-Event-ID": str(last_event_id)}, timeout=120
    )
    assert rest.status_code == 200, rest.text
    whole = httpx.get(events_url, params=params, headers=headers, timeout=30)
    assert whole.status_code == 200, whole.text
    history = httpx.get(
        f"{base}/v1/messages",
        params={"user": user, "conversation_id": conversation_id},
        headers=headers,
        timeout=30,
    )
    assert history.status_code == 200, history.text
    return Reattached(_ids_only(rest.text), _ids_only(whole.text), history.json()["data"])


def _ids_only(body: str) -> Numbered:
    return [(s, e) for s, e in numbered(body) if s is not None]
