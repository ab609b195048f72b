"""GET /v1/messages/{id}/agent-log: Dify's console agent-log shape, built from the stored rows."""

from __future__ import annotations

from typing import Any

import httpx

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from tests.server.conftest import NewApp, ServiceApp, parse_sse

REPLIES: list[Any] = [
    {
        "text": "Let me compute.",
        "tool_calls": [["calculator", {"expression": "2+3"}], ["calculator", {"expression": "1/0"}]],
    },
    "It is 5.",
]


async def chat(client: httpx.AsyncClient, app: ServiceApp, user: str = "alice") -> str:
    body = {"inputs": {}, "query": "2+3?", "user": user, "response_mode": "streaming"}
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 200, r.text
    return str(next(e["message_id"] for e in parse_sse(r.text) if e["event"] == "message_end"))


async def get_log(client: httpx.AsyncClient, app: ServiceApp, message_id: str, user: str) -> httpx.Response:
    return await client.get(
        f"/v1/messages/{message_id}/agent-log", params={"user": user}, headers=app.headers
    )


async def test_agent_log_of_a_message_with_tool_calls(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    app = await new_app(REPLIES, strategy="function-calling")
    message_id = await chat(client, app)

    # A new server on the same database (a restart): the log comes from what was stored.
    transport = httpx.ASGITransport(app=create_app(db, Settings()))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as fresh:
        r = await get_log(fresh, app, message_id, "alice")
    assert r.status_code == 200, r.text
    log = r.json()
    assert set(log) == {"meta", "iterations", "files"}
    meta = log["meta"]
    assert (meta["status"], meta["executor"], meta["agent_mode"], meta["iterations"]) == (
        "success",
        "alice",
        "function_call",
        2,
    )
    assert meta["total_tokens"] > 0 and meta["elapsed_time"] > 0 and "T" in meta["start_time"]
    assert meta["metrics"]["rounds"] == 2 and meta["metrics"]["tool_calls"] == 2
    assert meta["metrics"]["tool_errors"] == 1

    first, second = log["iterations"]
    assert first["thought"] == "Let me compute." and first["tokens"] > 0
    ok, failed = first["tool_calls"]
    assert (ok["tool_name"], ok["status"], ok["error"]) == ("calculator", "success", None)
    assert ok["tool_input"] == {"expression": "2+3"} and ok["tool_output"] == "5"
    assert failed["tool_name"] == "calculator" and failed["status"] == "error" and failed["error"]
    assert failed["tool_input"] == {"expression": "1/0"}
    assert set(ok) == {
        "status",
        "error",
        "time_cost",
        "tool_name",
        "tool_label",
        "tool_input",
        "tool_output",
        "tool_parameters",
        "tool_icon",
    }
    assert '"calculator_1"' in first["tool_raw"]["inputs"]  # the stored text, as Dify shows it raw
    assert second["tool_calls"] == [] and "It is 5." in second["thought"]
    assert log["files"] == []


async def test_agent_log_is_only_for_the_messages_user(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(REPLIES)
    message_id = await chat(client, app)
    assert (await get_log(client, app, message_id, "mallory")).status_code == 404
    assert (await get_log(client, app, "00000000-0000-0000-0000-000000000000", "alice")).status_code == 404
    assert (await get_log(client, app, message_id, "")).status_code == 400


async def test_agent_log_needs_the_apps_key(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(REPLIES)
    other = await new_app(["hi"], name="other")
    message_id = await chat(client, app)
    assert (await get_log(client, other, message_id, "alice")).status_code == 404
    r = await client.get(f"/v1/messages/{message_id}/agent-log", params={"user": "alice"})
    assert r.status_code == 401
