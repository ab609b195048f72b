"""Request-rate and concurrent-stream limits per app key and per end user (app.run.rate_limits):
counted with an injected clock, answered 429 ``too_many_requests`` with ``Retry-After`` in each
wire's shape, streams given back when their run ends; a slow body is answered 408."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import openai
import pytest
from fastapi import FastAPI

from loopwright.app.run.rate_limits import (
    CALLER_KEY,
    Limiter,
    LimitSettings,
    TooManyRequestsError,
    key_digest,
)
from tests.live_server import serving
from tests.server.conftest import NewApp


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def limited(server_app: FastAPI, clock: Clock, **limits: int) -> Limiter:
    limiter = Limiter(LimitSettings(**limits), clock=clock)
    server_app.state.loopwright.use_limiter(limiter)
    return limiter


async def test_limits_off_by_default_and_the_window_turns() -> None:
    assert not Limiter(LimitSettings()).on
    clock = Clock(1000.0)  # 40 s into a minute
    limiter = Limiter(LimitSettings(key_requests_per_minute=2), clock=clock)
    await limiter.request("a")
    await limiter.request("a")
    await limiter.request("b")  # another key: its own count
    with pytest.raises(TooManyRequestsError) as refused:
        await limiter.request("a")
    assert refused.value.retry_after == 20
    clock.now = 1020.0  # the next minute
    await limiter.request("a")


async def test_a_stream_is_counted_until_released() -> None:
    limiter = Limiter(LimitSettings(user_streams=1, key_streams=2))
    token = CALLER_KEY.set("k")
    try:
        release = await limiter.start_run("app", "u1", streaming=True)
        assert release is not None
        assert await limiter.start_run("app", "u1", streaming=False) is None  # blocking runs are no stream
        with pytest.raises(TooManyRequestsError):
            await limiter.start_run("app", "u1", streaming=True)
        other = await limiter.start_run("app", "u2", streaming=True)  # the key's second stream
        with pytest.raises(TooManyRequestsError):
            await limiter.start_run("app", "u3", streaming=True)  # the key is at its 2
        assert await limiter.streams("user:app:u3") == 0  # a refusal counts nothing
        release()
        assert other is not None
        other()
        assert await limiter.streams("key:k") == 0
        assert await limiter.start_run("app", "u1", streaming=True) is not None
    finally:
        CALLER_KEY.reset(token)


async def test_key_rate_is_a_dify_429_with_retry_after(
    server_app: FastAPI, client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["hi"])
    clock = Clock(1000.0)
    limited(server_app, clock, key_requests_per_minute=2)
    for _ in range(2):
        assert (await client.get("/v1/info", headers=app.headers)).status_code == 200
    refused = await client.get("/v1/parameters", headers=app.headers)
    assert refused.status_code == 429
    assert refused.json() == {
        "code": "too_many_requests",
        "message": refused.json()["message"],
        "status": 429,
    }
    assert "2 requests a minute" in refused.json()["message"]
    assert refused.headers["retry-after"] == "20"
    bad = await client.get("/v1/info", headers={"Authorization": "Bearer app-nope"})
    assert bad.status_code == 401  # a wrong key is refused as before, not counted
    clock.now = 1060.0
    assert (await client.get("/v1/info", headers=app.headers)).status_code == 200


async def test_end_user_rate_counts_messages(
    server_app: FastAPI, client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["one", "two", "three"])
    limited(server_app, Clock(0.0), user_requests_per_minute=1)

    async def ask(user: str) -> httpx.Response:
        body = {"query": "hi", "inputs": {}, "user": user, "response_mode": "blocking"}
        return await client.post("/v1/chat-messages", json=body, headers=app.headers)

    assert (await ask("alice")).status_code == 200
    second = await ask("alice")
    assert (second.status_code, second.json()["code"]) == (429, "too_many_requests")
    assert second.headers["retry-after"] == "60"
    assert (await ask("bob")).status_code == 200  # another end user


async def test_stream_limit_and_release_when_the_run_ends(
    server_app: FastAPI, client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["one", "two"])
    limiter = limited(server_app, Clock(), user_streams=1, key_streams=5)
    body = {"query": "hi", "inputs": {}, "user": "alice", "response_mode": "streaming"}
    held = await limiter.start_run(app.id, "alice", streaming=True)  # alice's other stream, still open
    assert held is not None
    refused = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert (refused.status_code, refused.json()["code"]) == (429, "too_many_requests")
    assert refused.headers["retry-after"] == "1"
    held()
    answered = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert answered.status_code == 200 and "message_end" in answered.text
    await server_app.state.loopwright.settled()
    assert await limiter.streams(f"user:{app.id}:alice") == 0
    assert await limiter.streams("key:" + key_digest(app.key)) == 0


async def test_openai_routes_answer_openais_429(server_app: FastAPI, new_app: NewApp) -> None:
    app = await new_app(["hi"])
    limited(server_app, Clock(30.0), key_requests_per_minute=1)
    async with (
        serving(server_app) as url,
        openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0) as client,
    ):
        await client.models.list()
        with pytest.raises(openai.RateLimitError) as refused:
            await client.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}])
    error: Any = refused.value.body
    assert error["code"] == "too_many_requests" and error["type"]
    assert refused.value.response.headers["retry-after"] == "30"


async def test_a2a_and_mcp_are_counted_against_the_key(
    server_app: FastAPI, client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["hi"])
    limited(server_app, Clock(0.0), key_requests_per_minute=1)
    assert (await client.get("/v1/info", headers=app.headers)).status_code == 200
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}}
    a2a = await client.post(f"/a2a/{app.id}", json=rpc, headers=app.headers)
    assert a2a.status_code == 429 and a2a.headers["retry-after"] == "60"
    mcp = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=app.headers)
    assert mcp.status_code == 429 and mcp.json()["code"] == "too_many_requests"


async def test_a_body_sent_too_slowly_is_408(server_app: FastAPI, new_app: NewApp) -> None:
    app = await new_app(["hi"])
    runtime = server_app.state.loopwright
    runtime._settings = runtime.settings.model_copy(update={"body_read_timeout": 1})
    async with serving(server_app) as url:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        head = (
            "POST /v1/chat-messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {app.key}\r\nContent-Length: 40\r\n\r\n"
        )
        writer.write(head.encode() + b'{"query": "h')  # and the rest never comes
        await writer.drain()
        answer = await reader.read()  # the server answers, then closes the connection
        writer.close()
        await writer.wait_closed()
    status_line, _, rest = answer.partition(b"\r\n")
    assert b" 408 " in status_line
    assert b'"request_timeout"' in rest
