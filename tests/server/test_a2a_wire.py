"""A2A over an app, with the a2a-sdk's own client against a real server: the card, a message sent
and streamed (the app's agent calls a tool), a task read and canceled, a task that waits for a tool
approval and goes on with the next message, and bad requests answered with JSON-RPC errors."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.types import a2a_pb2 as a2a
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError
from fastapi import FastAPI

from loopwright.tools.base import TextMessage, Tool, ToolContext, ToolOutput
from tests.live_server import serving
from tests.server.conftest import NewApp, ServiceApp

TOOL_ROUND = [
    {"tool_calls": [["calculator", {"expression": "17 * 23"}]]},
    "17 times 23 is 391.",
]
APPROVAL = {"approval": {"tools": ["calculator"], "timeout": 600}}


@asynccontextmanager
async def a2a_client(url: str, app: ServiceApp, *, streaming: bool = True) -> AsyncIterator[Client]:
    """The a2a-sdk's client of the app, from its card (fetched with the app's key)."""
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {app.key}"}, timeout=30)
    factory = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming))
    client = await factory.create_from_url(f"{url}/a2a/{app.id}")
    try:
        yield client
    finally:
        await client.close()
        await http.aclose()


def user_message(text: str, *, task_id: str = "", context_id: str = "") -> a2a.SendMessageRequest:
    message = a2a.Message(
        message_id=str(uuid.uuid4()), role=a2a.Role.ROLE_USER, parts=[a2a.Part(text=text)]
    )
    if task_id:
        message.task_id = task_id
    if context_id:
        message.context_id = context_id
    return a2a.SendMessageRequest(message=message)


def answer_of(task: a2a.Task) -> str:
    return "".join(p.text for a in task.artifacts for p in a.parts)


async def test_the_card_names_the_app_its_tools_and_its_endpoint(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(["hi"])
    async with serving(server_app) as url, a2a_client(url, app) as client:
        card = await client.get_extended_agent_card(a2a.GetExtendedAgentCardRequest())
    assert card.name == "calc" and card.description == "calc app"
    assert [i.url for i in card.supported_interfaces] == [f"{url}/a2a/{app.id}"]
    assert card.supported_interfaces[0].protocol_version == "1.0"
    assert card.capabilities.streaming
    assert "tool:calculator" in [s.id for s in card.skills]
    scheme = card.security_schemes["appKey"]
    assert scheme.http_auth_security_scheme.scheme == "Bearer"


async def test_a_sent_message_is_a_completed_task_with_the_apps_answer(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(TOOL_ROUND)
    async with serving(server_app) as url, a2a_client(url, app, streaming=False) as client:
        replies = [r async for r in client.send_message(user_message("What is 17 * 23?"))]
        assert len(replies) == 1 and replies[0].HasField("task")
        task = replies[0].task
        read = await client.get_task(a2a.GetTaskRequest(id=task.id))
        async with httpx.AsyncClient() as http:
            history = await http.get(
                f"{url}/v1/messages",
                params={"conversation_id": task.context_id, "user": task.metadata["user"]},
                headers=app.headers,
            )
    assert task.status.state == a2a.TaskState.TASK_STATE_COMPLETED
    assert answer_of(task) == "17 times 23 is 391."
    assert read.id == task.id and read.status.state == a2a.TaskState.TASK_STATE_COMPLETED
    assert answer_of(read) == answer_of(task)
    assert [m.role for m in read.history] == [a2a.Role.ROLE_USER, a2a.Role.ROLE_AGENT]
    # the task is a message of the Service API's history, with its tool round
    stored = history.json()["data"]
    assert [m["id"] for m in stored] == [task.id]
    assert stored[0]["answer"] == "17 times 23 is 391."
    assert stored[0]["agent_thoughts"][0]["tool"] == "calculator"
