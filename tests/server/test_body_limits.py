"""A JSON body past its cap is refused (413) before it is read; JSON nested past the parser's bound is a
400 — against a real server, with the key of a real app."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
from fastapi import FastAPI

from loopwright.server.bodies import MAX_JSON_BODY_BYTES
from tests.live_server import serving
from tests.server.conftest import NewApp


async def test_a_declared_length_past_the_cap_is_refused_before_the_body_is_sent(
    new_app: NewApp, server_app: FastAPI
) -> None:
    app = await new_app(["hi"])
    async with serving(server_app) as url:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        head = (
            f"POST /v1/chat-messages HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {app.key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {MAX_JSON_BODY_BYTES + 1}\r\n\r\n"
        )
        writer.write(head.encode())  # and not one byte of the body: the answer must come anyway
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 30)
        writer.close()
    assert status.startswith(b"HTTP/1.1 413")


async def test_a_body_without_a_length_is_read_only_up_to_the_cap(
    new_app: NewApp, client: httpx.AsyncClient
) -> None:
    app = await new_app(["hi"])
    sent = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal sent
        yield b'{"query": "'
        while sent <= 4 * MAX_JSON_BODY_BYTES:
            sent += 1024 * 1024
            yield b"x" * (1024 * 1024)

    r = await client.post("/v1/chat-messages", content=endless(), headers=app.headers)
    assert r.status_code == 413
    assert sent <= MAX_JSON_BODY_BYTES + 2 * 1024 * 1024  # read up to the cap, not the four times it
    assert r.json() == {
        "code": "request_entity_too_large",
        "message": f"The request body is over {MAX_JSON_BODY_BYTES} bytes.",
        "status": 413,
    }


async def test_json_nested_too_deep_is_a_400(new_app: NewApp, client: httpx.AsyncClient) -> None:
    app = await new_app(["hi"])
    deep = '{"query": "x", "user": "u", "inputs": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    r = await client.post(
        "/v1/chat-messages", content=deep, headers={**app.headers, "Content-Type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["code"] == "invalid_param"
    fine = {"query": "x", "user": "u", "inputs": {}, "response_mode": "blocking"}
    assert (await client.post("/v1/chat-messages", json=fine, headers=app.headers)).status_code == 200
