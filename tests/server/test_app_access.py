"""A disabled app, or one whose Service API is off, answers every app-key route with Dify's 403
bodies (``controllers/service_api/wraps.py``: ``validate_app_token``), before its body is read."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from loopwright.app.lookup import ACCESS_TTL, AppLookup
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from tests.server.conftest import NewApp

ABNORMAL = {"code": "forbidden", "message": "The app's status is abnormal.", "status": 403}
API_OFF = {"code": "forbidden", "message": "The app's API service has been disabled.", "status": 403}


async def set_access(db: Database, app_id: str, **switches: object) -> None:
    async with db.transaction() as s:
        assert await repo.set_app_access(s, app_id, **switches) is not None  # type: ignore[arg-type]


async def test_a_disabled_app_and_a_disabled_api_get_dify_403s(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    now = [0.0]
    server_app.state.loopwright.lookup = AppLookup(db, clock=lambda: now[0])
    app = await new_app(["Hello."])
    other = await new_app(["Hi."])
    await set_access(db, app.id, status="disabled")

    routes = [
        ("GET", "/v1/parameters", None),
        ("GET", "/v1/info", None),
        ("GET", "/v1/conversations?user=alice", None),
        ("POST", "/v1/chat-messages", b'{"inputs": {}, "query": "hi", "user": "alice"}'),
        ("POST", "/v1/chat-messages", b"{not json"),  # the key and the app are checked first
        ("POST", "/v1/completion-messages", b"{}"),
    ]
    for method, path, body in routes:
        r = await client.request(method, path, content=body, headers=app.headers)
        assert (r.status_code, r.json()) == (403, ABNORMAL), path
    r = await client.get("/v1/parameters", headers=other.headers)
    assert r.status_code == 200  # other apps are untouched

    await set_access(db, app.id, status="normal", enable_api=False)
    r = await client.get("/v1/parameters", headers=app.headers)
    assert (r.status_code, r.json()) == (403, ABNORMAL)  # the switch is seen after ACCESS_TTL
    now[0] += ACCESS_TTL + 0.1
    r = await client.get("/v1/parameters", headers=app.headers)
    assert (r.status_code, r.json()) == (403, API_OFF)
    r = await client.post(
        "/v1/files/upload", data={"user": "a"}, files={"file": ("a.txt", b"x")}, headers=app.headers
    )
    assert (r.status_code, r.json()) == (403, API_OFF)

    await set_access(db, app.id, enable_api=True)
    now[0] += ACCESS_TTL + 0.1
    r = await client.post(
        "/v1/chat-messages",
        json={"inputs": {}, "query": "hi", "user": "alice", "response_mode": "blocking"},
        headers=app.headers,
    )
    assert r.status_code == 200 and r.json()["answer"] == "Hello."


async def test_a_bad_key_is_still_a_401_before_the_app_is_looked_at(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    app = await new_app(["Hello."])
    await set_access(db, app.id, status="disabled")
    r = await client.get("/v1/parameters", headers={"Authorization": "Bearer app-nope"})
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"
