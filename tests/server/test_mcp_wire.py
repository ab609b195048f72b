"""MCP over an app, with the official ``mcp`` SDK client against a real server: the key's app is one
tool (its input form in the tool's schema), a call is the app's run (a tool round included) whose
answer, citations and files come back, over the stateless revision (2026-07-28) and the session-based
one (2025-11-25) alike; a bad key, the admin token, a failing run and bad JSON-RPC each get their
error."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from fastapi import FastAPI
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from loopwright.store.models import Message as MessageRow
from tests.live_server import serving
from tests.server.conftest import NewApp

TOOL_ROUND = [
    {"tool_calls": [["calculator", {"expression": "17 * 23"}]]},
    "17 times 23 is 391.",
]
FORM = [
    {"variable": "city", "label": "City", "type": "text-input", "required": True},
    {"variable": "units", "label": "Units", "type": "select", "options": ["metric", "imperial"]},
]
ERAS = ["2026-07-28", "legacy"]  # the stateless revision; the initialize handshake (2025-11-25)


@asynccontextmanager
async def mcp_client(url: str, key: str, mode: str) -> AsyncIterator[Client]:
    """The SDK's client on ``url``/mcp with ``key`` as its bearer token, speaking ``mode``."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client:
        yield client


@pytest.mark.parametrize("mode", [*ERAS, "auto"])  # auto: the client probes, then takes 2026-07-28
async def test_the_keys_app_is_one_tool_with_its_input_form(
    server_app: FastAPI, new_app: NewApp, mode: str
) -> None:
    app = await new_app(["hi"], name="Trip Planner", user_input_form=FORM)
    async with serving(server_app) as url, mcp_client(url, app.key, mode) as client:
        listed = await client.list_tools()
        version = client.session.protocol_version
    assert version == {"legacy": "2025-11-25", "auto": "2026-07-28"}.get(mode, mode)
    (tool,) = listed.tools
    assert tool.name == "trip_planner" and tool.title == "Trip Planner"
    assert tool.description == "Trip Planner app"
    schema = tool.input_schema
    assert list(schema["properties"]) == ["query", "city", "units"]
    assert schema["required"] == ["query", "city"]
    assert schema["properties"]["units"]["enum"] == ["metric", "imperial"]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_call_is_the_apps_run_with_its_inputs_and_its_result_is_the_answer(
    server_app: FastAPI, new_app: NewApp, mode: str
) -> None:
    app = await new_app(TOOL_ROUND, user_input_form=FORM, instruction="Plan for {{city}}.")
    async with serving(server_app) as url:
        async with mcp_client(url, app.key, mode) as client:
            result = await client.call_tool("calc", {"query": "What is 17 * 23?", "city": "Oslo"})
        structured = result.structured_content
        assert structured is not None
        headers = {"Authorization": f"Bearer {app.key}"}
        params = {"user": "mcp-user", "conversation_id": structured["conversation_id"]}
        async with httpx.AsyncClient(base_url=url) as http:
            messages = (await http.get("/v1/messages", params=params, headers=headers)).json()["data"]
    assert not result.is_error
    assert [c.text for c in result.content] == ["17 times 23 is 391."]  # type: ignore[union-attr]
    assert structured["answer"] == "17 times 23 is 391." and structured["message_id"] == messages[0]["id"]
    assert structured["retriever_resources"] == [] and structured["files"] == []
    assert messages[0]["inputs"] == {"city": "Oslo", "units": None}  # one not sent: null, as Dify
    assert messages[0]["agent_thoughts"][0]["tool"] == "calculator"  # with its thoughts, as any run
    model = next(iter(server_app.state.loopwright._models.values()))
    assert "Plan for Oslo." in str(model.requests[0].messages[0].content)


async def test_progress_tells_the_rounds_and_tool_calls(server_app: FastAPI, new_app: NewApp) -> None:
    app = await new_app(TOOL_ROUND)
    told: list[tuple[float, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        told.append((done, message))

    async with serving(server_app) as url, mcp_client(url, app.key, "legacy") as client:
        result = await client.call_tool("calc", {"query": "What is 17 * 23?"}, progress_callback=progress)
    assert not result.is_error
    assert [m for _, m in told] == ["round 1", "calling calculator", "round 2"]
    assert [n for n, _ in told] == sorted(n for n, _ in told)


@pytest.mark.parametrize("mode", ERAS)
async def test_a_failing_run_and_a_refused_input_are_tool_errors(
    server_app: FastAPI, new_app: NewApp, mode: str
) -> None:
    failing = await new_app([{"error": "the model is down"}])
    with_form = await new_app(["hi"], user_input_form=FORM)
    async with serving(server_app) as url:
        async with mcp_client(url, failing.key, mode) as client:
            failed = await client.call_tool("calc", {"query": "hi"})
            with pytest.raises(MCPError, match="unknown tool"):
                await client.call_tool("another", {"query": "hi"})
        async with mcp_client(url, with_form.key, mode) as client:
            refused = await client.call_tool("calc", {"query": "hi"})
            no_query = await client.call_tool("calc", {"city": "Oslo"})
    assert failed.is_error and failed.content and failed.structured_content is None
    assert refused.is_error and "city is required" in refused.content[0].text  # type: ignore[union-attr]
    assert no_query.is_error and "query is required" in no_query.content[0].text  # type: ignore[union-attr]


async def test_a_bad_key_and_the_admin_token_are_refused_and_bad_json_rpc_is_an_error(
    db: Database, new_app: NewApp, tmp_path: Path
) -> None:
    server_app = create_app(db, Settings(admin_token="admin-secret"), ping_interval=0.05)
    app = await new_app(["hi"])
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    modern = {
        "Mcp-Protocol-Version": "2026-07-28",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    async with serving(server_app) as url:
        for key in ("app-not-a-key", "admin-secret"):
            with pytest.raises(ExceptionGroup) as raised:  # the SDK's task groups carry its error
                async with mcp_client(url, key, "legacy") as client:
                    await client.list_tools()
            assert raised.value.subgroup(MCPError) is not None
        async with httpx.AsyncClient(base_url=url) as http:
            refused = await http.post(
                "/mcp", json=body, headers={**modern, "Authorization": "Bearer admin-secret"}
            )
            authed = {**modern, "Authorization": f"Bearer {app.key}"}
            not_json = await http.post("/mcp", content=b"{not json", headers=authed)
            not_rpc = await http.post("/mcp", json={"hello": "world"}, headers=authed)
    assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
    assert not_json.status_code == 400 and _rpc_error(not_json)["code"] == -32700  # parse error
    assert not_rpc.status_code == 400 and _rpc_error(not_rpc)["code"] == -32600  # invalid request


def _rpc_error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert body["jsonrpc"] == "2.0" and "result" not in body
    error: dict[str, Any] = body["error"]
    return error


async def test_a_run_waiting_for_approval_is_a_tool_error_that_says_how_to_decide(
    server_app: FastAPI, new_app: NewApp
) -> None:
    calc = {"tool_calls": [["calculator", {"expression": "2+3"}, "call_a"]]}
    app = await new_app([calc, "It is 5."], approval={"tools": ["calculator"], "timeout": 600})
    async with serving(server_app) as url, mcp_client(url, app.key, "2026-07-28") as client:
        result = await client.call_tool("calc", {"query": "What is 2 + 3?"})
    assert result.is_error
    assert "approve" in result.content[0].text and "/approvals" in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_cancelled_call_stops_its_run(
    server_app: FastAPI, new_app: NewApp, db: Database, mode: str
) -> None:
    app = await new_app(
        ["a long answer " * 200], delay=0.05
    )  # a chunk every 50 ms: still running when cancelled
    runtime = server_app.state.loopwright
    started = asyncio.Event()

    async def progress(done: float, total: float | None, message: str | None) -> None:
        started.set()

    async with serving(server_app) as url, mcp_client(url, app.key, mode) as client:
        call = asyncio.create_task(client.call_tool("calc", {"query": "hi"}, progress_callback=progress))
        await started.wait()
        ((task_id, message_id),) = runtime.runs.running()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.wait_for(runtime.settled(), 30)
    await db.writer.flush()
    async with db.sessionmaker() as session:
        stored = await session.get(MessageRow, message_id)
    assert stored is not None and stored.status == "stopped"


async def test_a_session_is_used_with_the_key_that_opened_it_only(
    server_app: FastAPI, new_app: NewApp
) -> None:
    mine, theirs = await new_app(["hi"]), await new_app(["hi"], name="other")
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    async with serving(server_app) as url, httpx.AsyncClient(base_url=url) as http:
        opened = await http.post(
            "/mcp", json=initialize, headers={**accept, "Authorization": f"Bearer {mine.key}"}
        )
        session = {
            **accept,
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "Mcp-Protocol-Version": "2025-11-25",
        }
        stolen = await http.post(
            "/mcp", json=listing, headers={**session, "Authorization": f"Bearer {theirs.key}"}
        )
        own = await http.post(
            "/mcp", json=listing, headers={**session, "Authorization": f"Bearer {mine.key}"}
        )
    assert opened.status_code == 200
    assert stolen.status_code == 404  # as if the session did not exist
    assert own.status_code == 200 and '"name":"calc"' in own.text
