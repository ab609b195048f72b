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
from a2a.types import a2a_pb2 as a2a
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.proto_utils import validate_proto_required_fields
from fastapi import FastAPI
from google.protobuf import json_format, struct_pb2

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store import repositories as repo
from loopwright.store.db import Database
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
    message = a2a.Message(message_id=str(uuid.uuid4()), role=a2a.Role.ROLE_USER, parts=[a2a.Part(text=text)])
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
    validate_proto_required_fields(card)  # every field A2A 1.0 requires is there


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


def kind(reply: a2a.StreamResponse) -> str:
    return str(reply.WhichOneof("payload"))


async def test_a_streamed_message_gives_the_task_its_tool_round_the_answer_then_completed(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(TOOL_ROUND)
    async with serving(server_app) as url, a2a_client(url, app) as client:
        replies = [r async for r in client.send_message(user_message("What is 17 * 23?"))]
        read = await client.get_task(a2a.GetTaskRequest(id=replies[0].task.id, history_length=1))
    kinds = [kind(r) for r in replies]
    assert kinds[0] == "task" and kinds[-1] == "status_update"
    for reply in replies:
        validate_proto_required_fields(reply)
    validate_proto_required_fields(read)
    task = replies[0].task
    assert task.status.state == a2a.TaskState.TASK_STATE_WORKING and task.context_id
    # the tool round's update comes before the answer's text, the final status after it
    tool_at = next(i for i, r in enumerate(replies) if kind(r) == "status_update")
    text_at = [i for i, r in enumerate(replies) if kind(r) == "artifact_update"]
    assert tool_at < text_at[0] and text_at[-1] < len(replies) - 1
    tool = replies[tool_at].status_update
    assert tool.status.state == a2a.TaskState.TASK_STATE_WORKING
    assert tool.status.message.parts[0].data.struct_value["tool"] == "calculator"
    updates = [replies[i].artifact_update for i in text_at]
    assert not updates[0].append and all(u.append for u in updates[1:])
    assert {u.task_id for u in updates} == {task.id}
    assert "".join(u.artifact.parts[0].text for u in updates) == "17 times 23 is 391."
    end = replies[-1].status_update
    assert end.task_id == task.id and end.status.state == a2a.TaskState.TASK_STATE_COMPLETED
    assert answer_of(read) == "17 times 23 is 391." and len(read.history) == 1


async def test_a_task_goes_on_in_its_context(server_app: FastAPI, new_app: NewApp) -> None:
    app = await new_app(["Hello Ada.", "Your name is Ada."])
    runtime = server_app.state.loopwright
    async with serving(server_app) as url, a2a_client(url, app, streaming=False) as client:
        [first] = [r async for r in client.send_message(user_message("My name is Ada."))]
        context = first.task.context_id
        [second] = [r async for r in client.send_message(user_message("My name?", context_id=context))]
    assert second.task.context_id == context and second.task.id != first.task.id
    model = next(iter(runtime._models.values()))
    texts = [getattr(m, "content", "") for m in model.requests[-1].messages]
    assert "My name is Ada." in texts and "Hello Ada." in texts


def gate_tool(entered: asyncio.Event) -> Tool:
    """A tool that holds its run until the run is stopped, and says when it has started."""

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        entered.set()
        await asyncio.Event().wait()
        yield TextMessage("never")

    return Tool("gate", "Waits until the run is stopped.", (), invoke)


async def test_cancel_stops_a_running_task(server_app: FastAPI, new_app: NewApp) -> None:
    entered = asyncio.Event()
    server_app.state.loopwright.tools.append(gate_tool(entered))
    app = await new_app([{"tool_calls": [["gate", {}]]}, "never said"], tools=[{"name": "gate"}])
    async with serving(server_app) as url, a2a_client(url, app, streaming=False) as client:
        request = user_message("Wait.")
        request.configuration.return_immediately = True
        [reply] = [r async for r in client.send_message(request)]
        assert reply.task.status.state == a2a.TaskState.TASK_STATE_WORKING
        await entered.wait()
        running = await client.get_task(a2a.GetTaskRequest(id=reply.task.id))
        canceled = await client.cancel_task(a2a.CancelTaskRequest(id=reply.task.id))
        read = await client.get_task(a2a.GetTaskRequest(id=reply.task.id))
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(a2a.CancelTaskRequest(id=reply.task.id))
    assert running.status.state == a2a.TaskState.TASK_STATE_WORKING
    assert canceled.status.state == a2a.TaskState.TASK_STATE_CANCELED
    assert read.status.state == a2a.TaskState.TASK_STATE_CANCELED


async def test_a_tool_approval_is_input_required_and_the_next_message_resumes_it(
    server_app: FastAPI, new_app: NewApp
) -> None:
    call = {"text": "", "tool_calls": [["calculator", {"expression": "2+3"}, "call_a"]]}
    app = await new_app([call, "It is 5."], **APPROVAL)
    async with serving(server_app) as url, a2a_client(url, app) as client:
        paused = [r async for r in client.send_message(user_message("What is 2 + 3?"))]
        task = paused[0].task
        asking = paused[-1].status_update.status
        with pytest.raises(InvalidParamsError, match="approve"):
            _ = [r async for r in client.send_message(user_message("maybe", task_id=task.id))]
        waiting = await client.get_task(a2a.GetTaskRequest(id=task.id))
        answer = user_message("approve", task_id=task.id, context_id=task.context_id)
        rest = [r async for r in client.send_message(answer)]
        done = await client.get_task(a2a.GetTaskRequest(id=task.id))
        with pytest.raises(UnsupportedOperationError):
            _ = [r async for r in client.send_message(user_message("again", task_id=task.id))]
    assert asking.state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED
    calls = asking.message.parts[1].data.struct_value["tool_calls"]
    assert [c["call_id"] for c in calls] == ["call_a"] and calls[0]["tool"] == "calculator"
    assert waiting.status.state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED
    assert rest[0].task.id == task.id
    assert rest[-1].status_update.status.state == a2a.TaskState.TASK_STATE_COMPLETED
    text = "".join(r.artifact_update.artifact.parts[0].text for r in rest if kind(r) == "artifact_update")
    assert text == "It is 5." and answer_of(done) == "It is 5."
    assert done.status.state == a2a.TaskState.TASK_STATE_COMPLETED


async def rpc(url: str, app: ServiceApp, body: Any, *, key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key or app.key}", "A2A-Version": "1.0"}
    async with httpx.AsyncClient() as http:
        if isinstance(body, bytes):
            return await http.post(f"{url}/a2a/{app.id}", content=body, headers=headers)
        return await http.post(f"{url}/a2a/{app.id}", json=body, headers=headers)


async def test_bad_requests_get_json_rpc_errors(server_app: FastAPI, new_app: NewApp, db: Database) -> None:
    app = await new_app(["hi"])
    other = await new_app(["hi"])
    async with db.transaction() as s:
        second_key = (await repo.create_api_key(s, app.id)).token
    async with serving(server_app) as url:
        broken = await rpc(url, app, b"{not json")
        unknown = await rpc(url, app, {"jsonrpc": "2.0", "id": 7, "method": "Dance", "params": {}})
        not_rpc = await rpc(url, app, {"id": 8, "method": "GetTask"})
        old = await rpc(url, app, {"jsonrpc": "2.0", "id": 9, "method": "message/send", "params": {}})
        no_parts = await rpc(
            url, app, {"jsonrpc": "2.0", "id": 10, "method": "SendMessage", "params": {"message": {}}}
        )
        wrong_key = await rpc(url, app, {"jsonrpc": "2.0", "id": 11, "method": "GetTask"}, key=other.key)
        async with httpx.AsyncClient() as http:
            no_app = await http.post(
                f"{url}/a2a/no-such-app", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"}
            )
            card = await http.get(f"{url}/a2a/{app.id}/.well-known/agent-card.json")
        async with a2a_client(url, app, streaming=False) as client:
            with pytest.raises(TaskNotFoundError):
                await client.get_task(a2a.GetTaskRequest(id="no-such-task"))
            [reply] = [r async for r in client.send_message(user_message("hello"))]
        # another key of the same app does not see the task
        seen_by_other_key = await rpc(
            url,
            app,
            {"jsonrpc": "2.0", "id": 12, "method": "GetTask", "params": {"id": reply.task.id}},
            key=second_key,
        )
    assert broken.status_code == 200 and broken.json()["error"]["code"] == -32700
    assert unknown.json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32601, "message": "Method not found: Dance"},
    }
    assert not_rpc.json()["error"]["code"] == -32600 and not_rpc.json()["id"] == 8
    assert old.json()["error"]["code"] == -32009 and "SendMessage" in old.json()["error"]["message"]
    assert no_parts.json()["error"]["code"] == -32602
    assert wrong_key.status_code == 401 and wrong_key.json()["error"]["code"] == -32000
    assert wrong_key.headers["www-authenticate"] == "Bearer"
    assert no_app.status_code == 404 and "error" in no_app.json()
    assert card.status_code == 401  # the card names the app's tools: it needs the key
    assert seen_by_other_key.json()["error"]["code"] == -32001


async def test_a_task_shows_in_the_consoles_logs(db: Database, new_app: NewApp) -> None:
    server = create_app(db, Settings(admin_token="console-token"), ping_interval=0.05)
    app = await new_app(TOOL_ROUND)
    async with serving(server) as url, a2a_client(url, app, streaming=False) as client:
        [reply] = [r async for r in client.send_message(user_message("What is 17 * 23?"))]
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": "Bearer console-token"}) as http:
            logs = await http.get(f"/console/api/apps/{app.id}/conversations")
            thread = await http.get(f"/console/api/apps/{app.id}/conversations/{reply.task.context_id}")
    assert [c["id"] for c in logs.json()["data"]] == [reply.task.context_id]
    messages = thread.json()["messages"]
    assert [m["id"] for m in messages] == [reply.task.id]


async def test_a_run_that_fails_ends_its_task_failed_with_the_reason(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app([])  # the model has nothing to say: its first call fails
    async with serving(server_app) as url, a2a_client(url, app) as client:
        replies = [r async for r in client.send_message(user_message("Anything?"))]
        read = await client.get_task(a2a.GetTaskRequest(id=replies[0].task.id))
    end = replies[-1].status_update.status
    assert [kind(r) for r in replies] == ["task", "status_update"]
    assert end.state == a2a.TaskState.TASK_STATE_FAILED and end.message.parts[0].text
    assert read.status.state == a2a.TaskState.TASK_STATE_FAILED and read.status.message.parts[0].text


async def test_decisions_in_a_data_part_deny_a_call_and_the_task_goes_on(
    server_app: FastAPI, new_app: NewApp
) -> None:
    call = {"text": "", "tool_calls": [["calculator", {"expression": "2+3"}, "call_a"]]}
    app = await new_app([call, "I was not allowed to compute."], **APPROVAL)
    decisions = {"decisions": [{"call_id": "call_a", "action": "deny", "reason": "not now"}]}
    async with serving(server_app) as url, a2a_client(url, app, streaming=False) as client:
        [paused] = [r async for r in client.send_message(user_message("What is 2 + 3?"))]
        answer = user_message("", task_id=paused.task.id)
        del answer.message.parts[:]
        answer.message.parts.append(a2a.Part(data=json_format.ParseDict(decisions, struct_pb2.Value())))
        [done] = [r async for r in client.send_message(answer)]
    assert paused.task.status.state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED
    assert done.task.id == paused.task.id
    assert done.task.status.state == a2a.TaskState.TASK_STATE_COMPLETED
    assert answer_of(done.task) == "I was not allowed to compute."


async def test_a_subscriber_follows_a_running_task_to_its_end(server_app: FastAPI, new_app: NewApp) -> None:
    entered = asyncio.Event()
    server_app.state.loopwright.tools.append(gate_tool(entered))
    app = await new_app(
        [{"text": "Waiting at the gate.", "tool_calls": [["gate", {}]]}, "never said"],
        tools=[{"name": "gate"}],
    )
    async with serving(server_app) as url, a2a_client(url, app) as client:
        request = user_message("Wait.")
        request.configuration.return_immediately = True
        async with a2a_client(url, app, streaming=False) as sender:
            [reply] = [r async for r in sender.send_message(request)]
        await entered.wait()
        first = asyncio.Event()
        seen: list[a2a.StreamResponse] = []

        async def subscribe() -> None:
            async for update in client.subscribe(a2a.SubscribeToTaskRequest(id=reply.task.id)):
                seen.append(update)
                first.set()

        following = asyncio.create_task(subscribe())
        await first.wait()
        await client.cancel_task(a2a.CancelTaskRequest(id=reply.task.id))
        await following
        with pytest.raises(UnsupportedOperationError):  # an ended task has nothing to follow
            _ = [r async for r in client.subscribe(a2a.SubscribeToTaskRequest(id=reply.task.id))]
    assert kind(seen[0]) == "task" and seen[0].task.id == reply.task.id
    text = "".join(r.artifact_update.artifact.parts[0].text for r in seen if kind(r) == "artifact_update")
    assert text == "Waiting at the gate."  # what the run had said before the subscriber came
    rounds = [r.status_update.status.message for r in seen[1:-1] if kind(r) == "status_update"]
    assert rounds[0].parts[0].data.struct_value["tool"] == "gate"
    assert seen[-1].status_update.status.state == a2a.TaskState.TASK_STATE_CANCELED
