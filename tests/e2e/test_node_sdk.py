"""Dify's Node SDK (npm ``dify-client``) as a real client, run with Node against a real uvicorn server
on 127.0.0.1: ``tests/e2e/node_sdk/scenario.mjs`` makes the ChatClient calls and prints what came
back. ``scripts/ci-node-sdk`` installs the SDK (CI runs it); without Node, or without the SDK installed
outside CI, the test is skipped with the reason.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from tests.live_server import serving
from tests.server import conftest as server_fixtures
from tests.server.conftest import NewApp
from tests.sse import parse_sse

new_app = server_fixtures.new_app
server_app = server_fixtures.server_app

SDK_DIR = Path(__file__).parent / "node_sdk"
FC_REPLIES: list[Any] = [
    {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}]]},
    "It is 5.",
    "Still 5.",
]


def node() -> str:
    path = shutil.which("node")
    if path is None:
        pytest.skip("node is not installed (scripts/ci-node-sdk installs it)")
    if not (SDK_DIR / "node_modules" / "dify-client").is_dir():
        if os.environ.get("CI"):
            pytest.fail("the Node SDK is not installed: .ci/run must run scripts/ci-node-sdk")
        pytest.skip("the Node SDK is not installed: run scripts/ci-node-sdk")
    return path


@pytest.fixture
async def base_url(server_app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    async with serving(server_app) as url:
        yield f"{url}/v1"


async def run_scenario(base_url: str, key: str, scenario: str = "scenario.mjs") -> dict[str, Any]:
    env = {**os.environ, "DIFY_BASE_URL": base_url, "DIFY_API_KEY": key, "NO_PROXY": "127.0.0.1"}
    proc = await asyncio.create_subprocess_exec(
        node(),
        str(SDK_DIR / scenario),
        cwd=SDK_DIR,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    result: dict[str, Any] = json.loads(out)
    return result


async def test_the_node_sdk_chats_lists_renames_and_deletes(base_url: str, new_app: NewApp) -> None:
    app = await new_app(FC_REPLIES, opening_statement="Hi.")
    r = await run_scenario(base_url, app.key)
    assert r["parameters"]["status"] == 200 and r["parameters"]["body"]["opening_statement"] == "Hi."
    blocking = r["blocking"]
    assert blocking["status"] == 200 and blocking["body"]["answer"] == "Let me compute.\nIt is 5."
    streaming = r["streaming"]
    assert streaming["status"] == 200 and streaming["type"].startswith("text/event-stream")
    events = [e for e in parse_sse(streaming["text"]) if e["event"] != "ping"]
    assert events[-1]["event"] == "message_end"
    assert events[-1]["conversation_id"] == blocking["body"]["conversation_id"]
    assert "".join(e["answer"] for e in events if e["event"] == "agent_message") == "Still 5."
    messages = r["messages"]["body"]["data"]
    assert [m["query"] for m in messages] == ["What is 2 + 3?", "Sure?"]
    assert [c["id"] for c in r["conversations"]["body"]["data"]] == [blocking["body"]["conversation_id"]]
    assert r["feedback"] == {"status": 200, "body": {"result": "success"}}
    assert r["rename"]["status"] == 200 and r["rename"]["body"]["name"] == "Sums"
    assert r["completion"]["status"] == 400 and r["completion"]["body"]["code"] == "app_unavailable"
    assert r["delete"]["status"] == 204
    assert r["afterDelete"]["body"]["data"] == []
    assert r["badKey"] == {
        "status": 401,
        "body": {"code": "unauthorized", "message": "Access token is invalid", "status": 401},
    }


async def test_the_node_sdk_approves_a_tool_through_dify_human_input(base_url: str, new_app: NewApp) -> None:
    call = {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}, "call_a"]]}
    app = await new_app([call, "It is 5."], approval={"tools": ["calculator"], "timeout": 600})
    r = await run_scenario(base_url, app.key, "human_input.mjs")
    assert r["paused"][-2:] == ["human_input_required", "workflow_paused"]
    assert r["form"]["status"] == 200 and "calculator" in r["form"]["body"]["form_content"]
    assert r["submit"] == {"status": 200, "body": {}}
    resumed = r["resumed"]
    assert resumed[0]["event"] == "human_input_form_filled" and resumed[0]["data"]["action_id"] == "approve"
    assert resumed[-1]["event"] == "message_end"
    assert "It is 5." in "".join(e["answer"] for e in resumed if e["event"] == "agent_message")
    assert r["again"]["status"] == 412
