"""Resumable streams (``GET /v1/chat-messages/{task_id}/events``): numbered events, a re-attach from the
same or another worker that continues live, replay of an ended stream, who may read it, expiry."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
from fastapi import FastAPI

from loopwright.app.dify.events import EventHead
from loopwright.app.run.recovery import WorkerLease
from loopwright.app.run.runtime import AppRuntime
from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from loopwright.store.models import Worker, utcnow
from tests.live_server import serving
from tests.server.conftest import NewApp, ServiceApp
from tests.sse import event_of, numbered

COUNTING = "one two three four five six seven eight nine ten " * 3
BODY = {"query": "Count.", "user": "alice", "response_mode": "streaming", "inputs": {}}


async def read_frames(response: httpx.Response, count: int) -> tuple[list[str], list[tuple[int, Any]]]:
    """The first ``count`` numbered frames of a live stream, as text and as ``(id, event)``."""
    frames: list[str] = []
    parsed: list[tuple[int, Any]] = []
    block: list[str] = []
    async for line in response.aiter_lines():
        if line:
            block.append(line)
            continue
        text = "\n".join(block) + "\n\n"
        block = []
        [(seq, event)] = numbered(text)
        if seq is None:
            continue  # a ping
        frames.append(text)
        parsed.append((seq, event))
        if len(frames) == count:
            break
    return frames, parsed


def events_url(task_id: str, user: str = "alice") -> str:
    return f"/v1/chat-messages/{task_id}/events?user={user}"


async def test_every_event_is_numbered_and_an_ended_stream_replays_byte_for_byte(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(
        [{"text": "Adding.", "tool_calls": [["calculator", {"expression": "2+3"}]]}, "It is 5."]
    )
    first = await client.post("/v1/chat-messages", json=BODY, headers=app.sse_headers)
    sent = numbered(first.text)
    events = [(seq, e) for seq, e in sent if seq is not None]
    assert [seq for seq, _ in events] == list(range(1, len(events) + 1))
    task_id = events[0][1]["task_id"]
    await server_app.state.loopwright.journal.settled()
    replay = await client.get(events_url(task_id), headers=app.headers)
    assert replay.status_code == 200 and replay.headers["content-type"].startswith("text/event-stream")
    assert [f for f in replay.text.split("\n\n") if f] == [
        f for f in first.text.split("\n\n") if f and f != "event: ping"
    ]
    # after the third event: the rest, the same frames
    rest = await client.get(events_url(task_id), headers={**app.headers, "Last-Event-ID": "3"})
    assert numbered(rest.text) == events[3:]
    by_query = await client.get(events_url(task_id) + "&last_event_id=3", headers=app.headers)
    assert by_query.text == rest.text


async def test_only_the_user_of_the_app_may_read_a_stream(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(["Hello."])
    other_app = await new_app(["Hi."])
    first = await client.post("/v1/chat-messages", json=BODY, headers=app.sse_headers)
    task_id = numbered(first.text)[0][1]["task_id"]
    await server_app.state.loopwright.journal.settled()
    for url, headers in [
        (events_url(task_id, "mallory"), app.headers),
        (events_url(task_id), other_app.headers),
        (events_url("no-such-task"), app.headers),
    ]:
        r = await client.get(url, headers=headers)
        assert (r.status_code, r.json()["code"]) == (404, "not_found")
    assert (await client.get(f"/v1/chat-messages/{task_id}/events", headers=app.headers)).status_code == 400
    bad = await client.get(events_url(task_id), headers={**app.headers, "Last-Event-ID": "x"})
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid_param")
    assert (await client.get(events_url(task_id))).status_code == 401


async def reattach_while_running(
    first: httpx.AsyncClient, second: httpx.AsyncClient, app: ServiceApp
) -> None:
    """Stream through ``first``, drop it after five events, re-attach through ``second``: the rest
    comes once, in order, live, up to ``message_end``; the whole equals an uninterrupted replay."""
    async with first.stream("POST", "/v1/chat-messages", json=BODY, headers=app.sse_headers) as r:
        frames, seen = await read_frames(r, 5)
    task_id = seen[0][1]["task_id"]
    headers = {**app.headers, "Last-Event-ID": str(seen[-1][0])}
    async with second.stream("GET", events_url(task_id), headers=headers) as r:
        assert r.status_code == 200
        rest = [(seq, e) for seq, e in numbered(await r.aread()) if seq is not None]
    assert [seq for seq, _ in seen + rest] == list(range(1, len(seen) + len(rest) + 1))
    assert rest[-1][1]["event"] == "message_end"
    assert any(e["event"] == "agent_message" for _, e in rest)  # it was still running: it went on live
    whole = await second.get(events_url(task_id), headers=app.headers)
    assert [(s, e) for s, e in numbered(whole.text) if s is not None] == seen + rest


async def test_a_client_reattaches_on_the_same_worker_and_continues_live(
    new_app: NewApp, db: Database
) -> None:
    app = await new_app([COUNTING], delay=0.02)
    server = create_app(db, Settings(), ping_interval=0.05)
    async with serving(server) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        await reattach_while_running(client, client, app)


async def test_a_client_reattaches_through_another_worker(new_app: NewApp, db: Database) -> None:
    app = await new_app([COUNTING], delay=0.02)
    one = create_app(db, Settings(), ping_interval=0.05, workers=2)
    two = create_app(db, Settings(), ping_interval=0.05, workers=2)
    async with (
        serving(one) as url_one,
        serving(two) as url_two,
        httpx.AsyncClient(base_url=url_one, timeout=30) as first,
        httpx.AsyncClient(base_url=url_two, timeout=30) as second,
    ):
        await reattach_while_running(first, second, app)


async def test_a_stream_expires_after_the_retention_period(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(["Hello."])
    first = await client.post("/v1/chat-messages", json=BODY, headers=app.sse_headers)
    task_id = numbered(first.text)[0][1]["task_id"]
    runtime: AppRuntime = server_app.state.loopwright
    await runtime.journal.settled()
    assert (await client.get(events_url(task_id), headers=app.headers)).status_code == 200
    runtime.journal.retention = timedelta(0)
    await runtime.lease.beat()
    assert (await client.get(events_url(task_id), headers=app.headers)).status_code == 404


async def test_the_stream_of_a_dead_workers_run_ends_with_an_interrupted_error(
    new_app: NewApp, db: Database
) -> None:
    app = await new_app(["unused"])
    server = create_app(db, Settings(), ping_interval=0.05)
    runtime: AppRuntime = server.state.loopwright
    # A run of another worker, whose first two events were stored.
    head = EventHead("task-dead", "msg-dead", "conv-dead", 1700000000)
    async with db.transaction() as s:
        s.add(Worker(id="dead-worker", heartbeat_at=utcnow(), host="elsewhere", pid=1))
    record = runtime.journal.open(head, app.id, "alice", "dead-worker")
    record.add("Hel")
    record.add("lo")
    await runtime.journal.settled()
    async with (
        serving(server) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
        client.stream("GET", events_url("task-dead"), headers=app.headers) as r,
    ):
        events = _events(r.aiter_lines())
        got = [await anext(events), await anext(events)]
        assert [e["answer"] for e in got] == ["Hel", "lo"]
        # the worker dies: the next sweep ends its stream, and the follower hears of it
        async with db.transaction() as s:
            await s.delete(await s.get(Worker, "dead-worker"))
        await WorkerLease(db, journal=runtime.journal).beat()
        rest = [e async for e in events]
    assert [e["event"] for e in rest] == ["error"]
    assert rest[0]["message"].startswith("interrupted:") and rest[0]["message_id"] == "msg-dead"


async def _events(lines: Any) -> Any:
    async for line in lines:
        event = event_of(line) if not line.startswith("id: ") else None
        if event is not None and event["event"] != "ping":
            yield event
