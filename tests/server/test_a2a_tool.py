"""A remote A2A agent as a tool of an app: app A calls app B, served over A2A by the same live server,
through the network guard (127.0.0.1 allow-listed, as the OpenAPI and MCP tool tests do)."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from loopwright.app.toolset_sources import check_source
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Message
from loopwright.tools.a2a import A2AAgent, A2ASource
from loopwright.tools.base import ToolInvokeError
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy
from tests.live_server import serving
from tests.server.conftest import NewApp


async def test_an_app_asks_another_app_over_a2a_as_its_tool(
    server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    b = await new_app(["It is 391.", "Still 391."], name="Multiplier", tools=[])
    async with serving(server_app) as url:
        toolset = {
            "type": "a2a",
            "url": f"{url}/a2a/{b.id}",
            "bearer_token": b.key,
            "allow_hosts": ["127.0.0.1"],
        }
        a = await new_app(
            [
                {"tool_calls": [["multiplier", {"query": "What is 17 * 23?"}]]},
                {"tool_calls": [["multiplier", {"query": "And again?"}]]},
                "B says 391.",
            ],
            name="asker",
            tools=[],
            toolsets=[toolset],
        )
        async with httpx.AsyncClient(base_url=url, headers=a.headers) as http:
            reply = await http.post(
                "/v1/chat-messages",
                json={"query": "Ask B.", "inputs": {}, "user": "alice", "response_mode": "blocking"},
            )
        assert reply.status_code == 200, reply.text
        body = reply.json()
        await server_app.state.loopwright.settled()
        await db.writer.flush()
        async with db.transaction() as s:
            thoughts = await repo.list_thoughts(s, body["message_id"])
            asked = list(await s.scalars(select(Message).where(Message.app_id == b.id)))
    assert body["answer"] == "B says 391."
    observed = [t.observation for t in thoughts if t.tool == "multiplier"]
    assert "It is 391." in observed[0] and "Still 391." in observed[1]
    # B answered two tasks, in one context: the calls of one conversation of A go on together
    assert sorted(m.query for m in asked) == ["And again?", "What is 17 * 23?"]
    assert len({m.conversation_id for m in asked}) == 1


async def test_a_loopback_agent_is_refused_unless_allow_listed() -> None:
    agent = A2AAgent("http://127.0.0.1:9/a2a/x", policy=DEFAULT_POLICY)
    with pytest.raises(ToolInvokeError, match="blocked request to 127.0.0.1"):
        await agent.tool()
    assert await agent.get_tools() == []  # the app runs without it
    allowed = A2AAgent("http://127.0.0.1:9/a2a/x", policy=NetworkPolicy.from_strings(["127.0.0.1"]))
    with pytest.raises(ToolInvokeError, match="could not read the agent card"):
        await allowed.tool()  # let through the guard: nothing listens there


def test_the_source_is_checked_when_the_configuration_is_saved() -> None:
    check_source({"type": "a2a", "url": "https://agents.example/a2a/x", "bearer_token_env": "B_KEY"})
    with pytest.raises(ValueError, match="absolute"):
        check_source({"type": "a2a", "url": "agents.example"})
    with pytest.raises(ValueError, match="not set"):
        A2ASource(url="https://agents.example", bearer_token_env="LOOPWRIGHT_NO_SUCH_VARIABLE").build()


async def test_agents_calling_agents_stop_at_the_depth_limit(
    server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    b = await new_app(["never asked"], name="Multiplier", tools=[])
    async with serving(server_app) as url:
        toolset = {
            "type": "a2a",
            "url": f"{url}/a2a/{b.id}",
            "bearer_token": b.key,
            "allow_hosts": ["127.0.0.1"],
        }
        a = await new_app(
            [{"tool_calls": [["multiplier", {"query": "What is 17 * 23?"}]]}, "B was not asked."],
            name="asker",
            tools=[],
            toolsets=[toolset],
        )
        message = {
            "messageId": "m1",
            "role": "ROLE_USER",
            "parts": [{"text": "Ask B."}],
            "metadata": {"loopwright": {"call_depth": 5}},  # as a caller five agents deep says it
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        async with httpx.AsyncClient(headers=a.headers) as http:
            reply = await http.post(f"{url}/a2a/{a.id}", json=body)
        task = reply.json()["result"]["task"]
        await db.writer.flush()
        async with db.transaction() as s:
            thoughts = await repo.list_thoughts(s, task["id"])
            asked = list(await s.scalars(select(Message).where(Message.app_id == b.id)))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    refused = [t.observation for t in thoughts if t.tool == "multiplier"]
    assert "went 5 deep" in refused[0] and asked == []
