"""Against a real uvicorn server on 127.0.0.1: pings while waiting, stop, and a client that leaves."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Message
from tests.live_server import serving
from tests.server.conftest import NewApp
from tests.sse import aiter_sse, parse_sse

LONG = "This answer takes a while to stream, chunk after chunk, so that there is time to act. " * 3


@pytest.fixture
async def base_url(server_app: FastAPI) -> AsyncIterator[str]:
    async with serving(server_app) as url:
        yield url


def sse_events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """Events as they arrive (``{"event": "ping"}`` for a ping)."""
    return aiter_sse(response.aiter_lines())  # type: ignore[no-any-return]


async def test_pings_arrive_while_the_model_is_slow(base_url: str, new_app: NewApp) -> None:
    app = await new_app(["Slow but sure."], delay=0.2)
    body = {"inputs": {}, "query": "hi", "user": "alice", "response_mode": "streaming"}
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
    body = {"inputs": {}, "query": "hi", "user": "alice", "response_mode": "streaming"}
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
                stopped_at = len(events)
                stop = await client.post(url, json={"user": "alice"})
                assert stop.status_code == 200 and stop.json() == {"result": "success"}
    assert stopped_at is not None
    assert events[-1]["event"] == "message_end"
    streamed = "".join(e["answer"] for e in events if e["event"] == "agent_message")
    # At once: the stream ends far before the answer would have (no clock: counted in chunks).
    assert 0 < len(streamed) < len(LONG) // 2
    async with db.transaction() as s:
        message = await s.get(Message, events[0]["message_id"])
        assert message is not None and message.status == "stopped"
    # the history shows it with Dify's status (normal | error), the partial answer kept
    async with httpx.AsyncClient(base_url=base_url, headers=app.headers) as client:
        params = {"conversation_id": events[0]["conversation_id"], "user": "alice"}
        (listed,) = (await client.get("/v1/messages", params=params)).json()["data"]
    assert listed["status"] == "normal" and listed["answer"] == message.answer


async def test_a_client_that_disconnects_does_not_stop_the_run(
    base_url: str, new_app: NewApp, db: Database, server_app: FastAPI
) -> None:
    app = await new_app(["Finished without anyone listening."], delay=0.05)
    body = {"inputs": {}, "query": "hi", "user": "alice", "response_mode": "streaming"}
    async with (
        httpx.AsyncClient(base_url=base_url, headers=app.headers) as client,
        client.stream("POST", "/v1/chat-messages", json=body) as r,
    ):
        first = await anext(e async for e in sse_events(r) if e["event"] != "ping")
    # the response is closed here, long before the answer is done
    async with asyncio.timeout(10):
        await server_app.state.loopwright.settled()
    async with db.transaction() as s:
        message = await s.get(Message, first["message_id"])
        assert message is not None
        assert message.status == "normal" and message.answer == "Finished without anyone listening."


def _dechunk(raw: bytes) -> bytes:
    """The body of an HTTP/1.1 chunked transfer."""
    body, at = bytearray(), 0
    while True:
        end = raw.index(b"\r\n", at)
        size = int(raw[at:end], 16)
        if size == 0:
            return bytes(body)
        body += raw[end + 2 : end + 2 + size]
        at = end + 2 + size + 2


async def test_a_client_that_stops_reading_does_not_hold_the_run_up(
    base_url: str, db: Database, server_app: FastAPI, tmp_path: Path
) -> None:
    """The client reads the first event, then nothing while ~9 MB of events are written: more than
    the socket buffers hold, so the server pauses writing to it. The run must go on to its end and
    be saved, and the client, reading again, must get every event in order."""
    answer = "".join(f"{i:07d} " for i in range(1_000_000))  # 8 MB, each piece distinct
    script = tmp_path / "big.json"
    script.write_text(json.dumps({"replies": [answer], "features": ["tool-call"], "chunk_size": 4096}))
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "big", {"model": f"scripted:{script}"})
        key = (await repo.create_api_key(s, app.id)).token
    host, port = base_url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)  # a small window fills sooner
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    reader, writer = await asyncio.open_connection(sock=sock, limit=2**20)
    try:
        body = json.dumps(
            {"inputs": {}, "query": "hi", "user": "alice", "response_mode": "streaming"}
        ).encode()
        head = (
            f"POST /v1/chat-messages HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode() + body)
        status = await reader.readuntil(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.1 200")
        first = await reader.readuntil(b"\n\n")  # the first event, with its chunk's size line
        opening = json.loads(first[first.index(b"data: ") + len(b"data: ") :])
        task_id = opening["task_id"]
        run = server_app.state.loopwright.runs.get(task_id)
        assert run is not None
        queued = 0
        async with asyncio.timeout(60):
            while not run.done():  # the client reads nothing meanwhile
                queued = max(queued, run.queue.qsize())
                await asyncio.sleep(0.01)
        assert queued > 0, "the server never had to hold events back: the test did not fill the connection"
        async with db.transaction() as s:
            message = await s.get(Message, opening["message_id"])
            # the saved answer is what was streamed, stripped as Dify saves it
            assert message is not None and message.status == "normal" and message.answer == answer.strip()
        rest = await asyncio.wait_for(reader.read(), 60)  # to the end: the request asked to close
    finally:
        writer.close()
    events = parse_sse(_dechunk(first + rest), pings=False)
    assert events[-1]["event"] == "message_end"
    assert "".join(e["answer"] for e in events if e["event"] == "agent_message") == answer
