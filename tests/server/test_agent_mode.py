"""An app of Dify's ``agent`` mode (imported from a Dify 1.15+ ``agent`` export) answers as Dify's agent
apps do: ``/v1/info`` says ``agent``, the answer streams as ``agent_message`` pieces and then comes whole
as one ``message`` event before ``message_end``, and blocking mode is Dify's refusal under strict mode."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from dify_client import ChatClient
from fastapi import FastAPI

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from loopwright.store.models import Message
from tests.live_server import serving
from tests.server.conftest import NewApp, ServiceApp, parse_sse
from tests.sse import iter_sse

REPLIES: list[Any] = [
    {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}]]},
    "It is 5.",
]
BODY = {"query": "2+3?", "inputs": {}, "user": "alice", "response_mode": "streaming"}


async def stream(client: httpx.AsyncClient, app: ServiceApp) -> list[dict[str, Any]]:
    r = await client.post("/v1/chat-messages", json=BODY, headers=app.headers)
    assert r.status_code == 200, r.text
    return [e for e in parse_sse(r.text) if e["event"] != "ping"]


async def test_info_says_the_apps_mode(client: httpx.AsyncClient, new_app: NewApp) -> None:
    agent = await new_app(REPLIES, mode="agent")
    classic = await new_app(REPLIES)
    for app, mode in ((agent, "agent"), (classic, "agent-chat")):
        r = await client.get("/v1/info", headers=app.headers)
        assert r.status_code == 200, r.text
        assert r.json()["mode"] == mode


async def test_the_answer_comes_whole_as_one_message_before_message_end(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    events = await stream(client, await new_app(REPLIES, mode="agent"))
    names = [e["event"] for e in events]
    assert names[-2:] == ["message", "message_end"]
    assert "agent_message" in names and names.count("message") == 1
    final = events[-2]
    # the runner's final output alone: the first round's text went with the process
    assert final["answer"] == "It is 5."
    assert final["from_variable_selector"] is None and final["id"] == final["message_id"]
    streamed = "".join(e["answer"] for e in events if e["event"] == "agent_message")
    assert streamed.endswith("It is 5.")
    async with db.transaction() as s:
        message = await s.get(Message, final["message_id"])
        assert message is not None and message.answer == "It is 5."


async def test_an_agent_chat_app_keeps_its_stream(client: httpx.AsyncClient, new_app: NewApp) -> None:
    events = await stream(client, await new_app(REPLIES))
    assert "message" not in [e["event"] for e in events]


async def test_blocking_mode_is_difys_refusal_under_strict_mode_and_answers_otherwise(
    db: Database, new_app: NewApp, client: httpx.AsyncClient
) -> None:
    app = await new_app(REPLIES * 2, mode="agent")
    body = {**BODY, "response_mode": "blocking"}
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 200, r.text
    assert (r.json()["mode"], r.json()["answer"]) == ("agent", "It is 5.")
    strict = create_app(db, Settings(dify_strict=True))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=strict), base_url="http://t") as c:
        r = await c.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 400
    assert r.json() == {
        "code": "invalid_param",
        "message": "Agent App only supports streaming mode",
        "status": 400,
    }


@pytest.fixture
async def base_url(server_app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    async with serving(server_app) as url:
        yield f"{url}/v1"


async def test_difys_sdk_reads_an_imported_agent_export(base_url: str, db: Database, tmp_path: Path) -> None:
    from loopwright.app.admin import apps as admin
    from loopwright.app.config import import_dify_dsl
    from loopwright.store import repositories as repo

    export = Path(__file__).parents[1] / "fixtures" / "dify-dsl" / "dify-0.7.0-agent.yml"
    report = import_dify_dsl(export.read_text(encoding="utf-8"))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": ["Three entries follow."], "features": ["tool-call"]}))
    config = report.config.model_copy(update={"model": f"scripted:{script}", "toolsets": []})
    app_id = await admin.create_app(report.name, config, db=db)
    async with db.transaction() as s:
        key = (await repo.create_api_key(s, app_id)).token
    sdk = ChatClient(key)
    sdk.base_url = base_url

    def talk() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        info = sdk._send_request("GET", "/info").json()
        response = sdk.create_chat_message({"product": "loopwright"}, "What changed?", "alice", "streaming")
        response.raise_for_status()
        return info, list(iter_sse(response.iter_lines(decode_unicode=True)))

    info, events = await asyncio.to_thread(talk)
    assert info["mode"] == "agent" and info["name"] == "Release Scribe"
    events = [e for e in events if e["event"] != "ping"]
    assert [e["event"] for e in events][-2:] == ["message", "message_end"]
    assert events[-2]["answer"] == "Three entries follow."
