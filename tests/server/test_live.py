"""Against a real uvicorn server on 127.0.0.1: pings while waiting, stop, and a client that leaves."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from loopwright.store.db import Database
from loopwright.store.models import Message
from tests.live_server import serving
from tests.server.conftest import NewApp

LONG = "This answer takes a while to stream, chunk after chunk, so that there is time to act. " * 3


@pytest.fixture
async def base_url(server_app: FastAPI) -> AsyncIterator[str]:
    async with serving(server_app) as url:
        yield url


async def sse_events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """Events as they arrive (``{"event": "ping"}`` for a ping)."""
    async for line in response.aiter_lines():
        if line.startswith("data: "):
            yield json.loads(line[len("data: ") :])
        elif line == "event: ping":
            yield {"event": "ping"}


async def test_pings_arrive_while_the_model_is_slow(base_url: str, new_app: NewApp) -> None:
    app = await new_app(["Slow but sure."], delay=0.2)
    body = {"query": "hi", "user": "alice", "response_mode": "streaming"}
    names: list[str] = []
    async with (
        httpx.AsyncClient(base_url=base_url, headers=app.headers) as client,
        client.stream("POST", "/v1/chat-messages", json=body) as r,
    ):
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        names = [e["event"] async for e in sse_events(r)]
    assert "ping" in names
    data = [n for n in names if n != "ping"]
    assert data[0] == "agent_thought" and data[-1] == "message_end"


async def test_stop_ends_the_stream_at_once_and_saves_stopped(
    base_url: str, new_app: NewApp, db: Database
) -> None:
    app = await new_app([LONG], delay=0.1)
    body = {"query": "hi", "user": "alice", "response_mode": "streaming"}
    events: list[dict[str, Any]] = []
    stopped_at = None
    async with (
        httpx.AsyncClient(base_url=base_url, headers=app.headers) as client,
        client.stream("POST", "/v1/chat-messages", json=body) as r,
    ):
        async for event in sse_events(r):
            if event["event"] == "ping":
                continue
            events.append(event)
            if stopped_at is None and event["event"] == "agent_message":
                url = f"/v1/chat-messages/{event['task_id']}/stop"
                other = await client.post(url, json={"user": "mallory"})  # not theirs: no effect
                assert other.json() == {"result": "success"}
                stopped_at = time.monotonic()
                stop = await client.post(url, json={"user": "alice"})
                assert stop.status_code == 200 and stop.json() == {"result": "success"}
    assert stopped_at is not None and time.monotonic() - stopped_at < 1.0
    assert events[-1]["event"] == "message_end"
    streamed = "".join(e["answer"] for e in events if e["event"] == "agent_message")
    assert 0 < len(streamed) < len(LONG)
    async with db.transaction() as s:
        message = await s.get(Message, events[0]["message_id"])
        assert message is not None and message.status == "stopped"


async def test_a_client_that_disconnects_does_not_stop_the_run(
    base_url: str, new_app: NewApp, db: Database, server_app: FastAPI
) -> None:
    app = await new_app(["Finished without anyone listening."], delay=0.05)
    body = {"query": "hi", "user": "alice", "response_mode": "streaming"}
    async with (
        httpx.AsyncClient(base_url=base_url, headers=app.headers) as client,
        client.stream("POST", "/v1/chat-messages", json=body) as r,
    ):
        first = await anext(e async for e in sse_events(r) if e["event"] != "ping")
    # the response is closed here, long before the answer is done
    async with asyncio.timeout(10):
        await server_app.state.loopwright.runs.wait_idle()
    async with db.transaction() as s:
        message = await s.get(Message, first["message_id"])
        assert message is not None
        assert message.status == "normal" and message.answer == "Finished without anyone listening."
