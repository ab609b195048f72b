"""Chat and completion apps through Dify's own clients: the PyPI ``dify-client`` (ChatClient,
CompletionClient) and the npm ``dify-client`` (``node_sdk/chat_apps.mjs``), against a real uvicorn
server on 127.0.0.1. The completion app is Dify's published "SQL Creator" template (examples/dify)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import requests
from dify_client import ChatClient, CompletionClient
from fastapi import FastAPI

from loopwright.app.config import import_dify_dsl
from tests.e2e.test_node_sdk import SDK_DIR, node
from tests.live_server import serving
from tests.server import conftest as server_fixtures
from tests.server.conftest import NewApp, ServiceApp
from tests.sse import iter_sse, parse_sse

new_app = server_fixtures.new_app
server_app = server_fixtures.server_app

SQL_CREATOR = Path(__file__).parent.parent.parent / "examples" / "dify" / "sql-creator.yml"


@pytest.fixture
async def base_url(server_app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    async with serving(server_app) as url:
        yield f"{url}/v1"


async def sql_creator(new_app: NewApp, replies: list[Any]) -> ServiceApp:
    """Dify's SQL Creator template, imported, on a scripted model."""
    config = import_dify_dsl(SQL_CREATOR.read_text(encoding="utf-8")).config
    kept = config.model_dump(mode="json", include={"mode", "instruction", "user_input_form"})
    return await new_app(replies, name="SQL Creator", **kept)


def read_stream(response: requests.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return list(iter_sse(response.iter_lines(), pings=False))


def answer_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["answer"] for e in events if e["event"] == "message")


async def test_the_python_sdk_chats_with_a_chat_app(base_url: str, new_app: NewApp) -> None:
    app = await new_app(["Hello, Alice.", "Then we talk."], mode="chat", instruction="Be kind.")
    client = ChatClient(app.key)
    client.base_url = base_url

    def talk() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        blocking = client.create_chat_message({}, "Hello?", "alice")
        assert blocking.status_code == 200, blocking.text
        body = blocking.json()
        stream = client.create_chat_message(
            {}, "And then?", "alice", response_mode="streaming", conversation_id=body["conversation_id"]
        )
        return body, read_stream(stream)

    body, events = await asyncio.to_thread(talk)
    assert body["mode"] == "chat" and body["answer"] == "Hello, Alice."
    assert [e["event"] for e in events][-1] == "message_end"
    assert {e["event"] for e in events} == {"message", "message_end"}  # no agent_message, no thoughts
    assert answer_of(events) == "Then we talk."
    assert {e["conversation_id"] for e in events} == {body["conversation_id"]}


async def test_the_python_sdk_runs_a_completion_app(base_url: str, new_app: NewApp) -> None:
    app = await sql_creator(new_app, ["SELECT * FROM users;", "SELECT * FROM orders;"])
    client = CompletionClient(app.key)
    client.base_url = base_url

    def complete() -> tuple[requests.Response, list[dict[str, Any]], requests.Response]:
        blocking = client.create_completion_message(
            {"A": "PostgreSQL", "default_input": "all users"}, "blocking", "alice"
        )
        stream = client.create_completion_message(
            {"A": "MySQL", "default_input": "all orders"}, "streaming", "alice"
        )
        missing = client.create_completion_message({"A": "MySQL"}, "blocking", "alice")
        return blocking, read_stream(stream), missing

    blocking, events, missing = await asyncio.to_thread(complete)
    assert blocking.status_code == 200, blocking.text
    body = blocking.json()
    assert body["mode"] == "completion" and body["answer"] == "SELECT * FROM users;"
    assert "conversation_id" not in body
    assert answer_of(events) == "SELECT * FROM orders;" and events[-1]["event"] == "message_end"
    assert missing.status_code == 400 and "default_input is required" in missing.json()["message"]


async def test_the_node_sdk_runs_chat_and_completion_apps(base_url: str, new_app: NewApp) -> None:
    binary = node()
    chat = await new_app(["Hi.", "More."], mode="chat")
    completion = await sql_creator(new_app, ["SELECT id FROM users;", "SELECT id FROM orders;"])
    env = {
        **os.environ,
        "DIFY_BASE_URL": base_url,
        "DIFY_CHAT_KEY": chat.key,
        "DIFY_COMPLETION_KEY": completion.key,
        "NO_PROXY": "127.0.0.1",
    }
    proc = await asyncio.create_subprocess_exec(
        binary,
        str(SDK_DIR / "chat_apps.mjs"),
        cwd=SDK_DIR,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    r = json.loads(out)
    assert r["chatInfo"]["body"]["mode"] == "chat"
    assert r["chatBlocking"]["status"] == 200 and r["chatBlocking"]["body"]["answer"] == "Hi."
    chat_events = [e for e in parse_sse(r["chatStreaming"]["text"]) if e["event"] != "ping"]
    assert {e["event"] for e in chat_events} == {"message", "message_end"} and answer_of(
        chat_events
    ) == "More."
    assert [m["answer"] for m in r["chatMessages"]["body"]["data"]] == ["Hi.", "More."]
    form = r["completionParameters"]["body"]["user_input_form"]
    assert [next(iter(f.values()))["variable"] for f in form] == ["A", "default_input"]
    assert r["completionBlocking"]["body"]["answer"] == "SELECT id FROM users;"
    completion_events = [e for e in parse_sse(r["completionStreaming"]["text"]) if e["event"] != "ping"]
    assert answer_of(completion_events) == "SELECT id FROM orders;"
    refused = r["completionOnChatKey"]
    assert refused["status"] == 400 and refused["body"]["code"] == "app_unavailable"
