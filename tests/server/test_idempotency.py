"""``Idempotency-Key`` on ``POST /v1/chat-messages`` (our addition): the same key of the same app and
user names one run — a retried streaming request gets that run's stream from its first event, a
retried blocking one a 409 — whichever executor runs it (the durable one: tests/app/test_durable.py)."""

from __future__ import annotations

import asyncio

import httpx

from tests.server.conftest import NewApp
from tests.sse import numbered

BODY = {"query": "Hi.", "user": "alice", "response_mode": "streaming", "inputs": {}}


async def test_a_retried_request_gets_the_first_runs_stream(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["Hello once.", "Hello twice."])
    headers = {**app.sse_headers, "Idempotency-Key": "greeting-1"}
    first = await client.post("/v1/chat-messages", json=BODY, headers=headers)
    again = await client.post("/v1/chat-messages", json=BODY, headers=headers)
    sent = [(s, e) for s, e in numbered(first.text) if s is not None]
    replayed = [(s, e) for s, e in numbered(again.text) if s is not None]
    assert again.status_code == 200 and replayed == sent
    assert "".join(e["answer"] for _, e in sent if e["event"] == "agent_message") == "Hello once."
    blocking = await client.post(
        "/v1/chat-messages", json={**BODY, "response_mode": "blocking"}, headers=headers
    )
    assert blocking.status_code == 409
    # another user's (or another key's) request is a run of its own
    other = await client.post("/v1/chat-messages", json={**BODY, "user": "bob"}, headers=headers)
    other_events = [e for s, e in numbered(other.text) if s is not None]
    assert other_events[0]["task_id"] != sent[0][1]["task_id"]
    assert "".join(e["answer"] for e in other_events if e["event"] == "agent_message") == "Hello twice."


async def test_a_key_must_be_1_to_255_characters(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["Hello."])
    for key in (" ", "k" * 256):
        r = await client.post("/v1/chat-messages", json=BODY, headers={**app.headers, "Idempotency-Key": key})
        assert r.status_code == 400 and r.json()["code"] == "invalid_param"


async def test_two_requests_at_once_with_one_key_make_one_run(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["Hello once.", "Hello twice."], delay=0.01)
    headers = {**app.sse_headers, "Idempotency-Key": "greeting-2"}
    first, second = await asyncio.gather(
        client.post("/v1/chat-messages", json=BODY, headers=headers),
        client.post("/v1/chat-messages", json=BODY, headers=headers),
    )
    streams = [[(s, e) for s, e in numbered(r.text) if s is not None] for r in (first, second)]
    assert streams[0] == streams[1] and streams[0][-1][1]["event"] == "message_end"
    assert "".join(e["answer"] for _, e in streams[0] if e["event"] == "agent_message") == "Hello once."
