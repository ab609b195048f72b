"""Chat and completion apps (Dify's ``chat`` and ``completion`` modes) on the Service API: raw SSE and
bodies checked against Dify's shapes; Dify's own clients are in tests/e2e."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import openai
from ag_ui.core import EventType

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from tests.live_server import serving
from tests.server.conftest import NewApp, parse_sse
from tests.server.test_ag_ui_wire import ag_ui, run_input


def events(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return [e for e in parse_sse(response.content) if e["event"] != "ping"]


async def test_a_chat_app_streams_message_events_and_no_thoughts(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["Hello there, friend."], mode="chat", instruction="Be kind.")
    body = {"inputs": {}, "query": "hi", "user": "alice", "response_mode": "streaming"}
    got = events(await client.post("/v1/chat-messages", json=body, headers=app.headers))
    names = [e["event"] for e in got]
    assert set(names) == {"message", "message_end"} and names[-1] == "message_end"
    text = [e for e in got if e["event"] == "message"]
    assert "".join(e["answer"] for e in text) == "Hello there, friend."
    first = text[0]
    # Dify's chat-app message event: its keys, the same ids on every event of the message
    assert {"task_id", "id", "message_id", "conversation_id", "answer", "created_at"} <= first.keys()
    assert first["id"] == first["message_id"] == got[-1]["message_id"]
    assert got[-1]["metadata"]["usage"]["total_tokens"] >= 0


async def test_a_chat_app_keeps_its_conversation_and_shows_no_agent_thoughts(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["One.", "Two."], mode="chat")
    first = await client.post(
        "/v1/chat-messages",
        json={"inputs": {}, "query": "a", "user": "alice", "response_mode": "blocking"},
        headers=app.headers,
    )
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["mode"] == "chat" and body["answer"] == "One." and body["event"] == "message"
    conversation = body["conversation_id"]
    second = await client.post(
        "/v1/chat-messages",
        json={"inputs": {}, "query": "b", "user": "alice", "conversation_id": conversation},
        headers=app.headers,
    )
    assert second.json()["answer"] == "Two."
    history = await client.get(
        "/v1/messages", params={"conversation_id": conversation, "user": "alice"}, headers=app.headers
    )
    answers = [m["answer"] for m in history.json()["data"]]
    assert answers == ["One.", "Two."]
    assert all(m["agent_thoughts"] == [] for m in history.json()["data"])


async def test_info_says_what_kind_of_app_it_is(client: httpx.AsyncClient, new_app: NewApp) -> None:
    for mode in ("agent-chat", "chat", "completion"):
        app = await new_app(["x"], mode=mode)
        info = await client.get("/v1/info", headers=app.headers)
        assert info.json()["mode"] == mode
        assert (await client.get("/v1/parameters", headers=app.headers)).status_code == 200


async def test_a_completion_app_answers_its_form_once(
    server_app: Any, client: httpx.AsyncClient, new_app: NewApp
) -> None:
    form = [{"variable": "query", "label": "Text", "type": "paragraph", "required": True}]
    app = await new_app(
        ["Bonjour."], mode="completion", instruction="Translate to French: {{query}}", user_input_form=form
    )
    response = await client.post(
        "/v1/completion-messages",
        json={"inputs": {"query": "Hello."}, "user": "alice", "response_mode": "blocking"},
        headers=app.headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["mode"] == "completion" and body["answer"] == "Bonjour." and body["event"] == "message"
    # Dify's completion body: no conversation
    assert set(body) == {"event", "task_id", "id", "message_id", "mode", "answer", "metadata", "created_at"}
    # the model was asked the instruction with the input filled in, as the user's message (Dify's
    # prompt for a completion without a query), with no system prompt of its own
    model = next(iter(server_app.state.loopwright._models.values()))
    sent = model.requests[-1].messages
    assert [(m.role, m.content) for m in sent] == [("user", "Translate to French: Hello.")]


async def test_a_completion_app_streams_message_events(client: httpx.AsyncClient, new_app: NewApp) -> None:
    form = [{"variable": "query", "label": "Text", "type": "paragraph", "required": True}]
    app = await new_app(
        ["A short summary."], mode="completion", instruction="Sum up: {{query}}", user_input_form=form
    )
    body = {"inputs": {"query": "long text"}, "user": "alice", "response_mode": "streaming"}
    got = events(await client.post("/v1/completion-messages", json=body, headers=app.headers))
    assert [e["event"] for e in got][-1] == "message_end"
    assert {e["event"] for e in got} == {"message", "message_end"}
    assert "".join(e["answer"] for e in got if e["event"] == "message") == "A short summary."


async def test_a_completion_app_checks_its_form(client: httpx.AsyncClient, new_app: NewApp) -> None:
    form = [{"variable": "query", "label": "Text", "type": "paragraph", "required": True}]
    app = await new_app(["x"], mode="completion", instruction="{{query}}", user_input_form=form)
    response = await client.post(
        "/v1/completion-messages", json={"inputs": {}, "user": "alice"}, headers=app.headers
    )
    assert response.status_code == 400 and "query is required" in response.json()["message"]


async def test_each_route_refuses_the_other_kind_of_app(client: httpx.AsyncClient, new_app: NewApp) -> None:
    chat, completion = await new_app(["x"], mode="chat"), await new_app(["x"], mode="completion")
    body = {"inputs": {}, "query": "hi", "user": "alice"}
    refused = await client.post("/v1/completion-messages", json=body, headers=chat.headers)
    assert refused.status_code == 400 and refused.json()["code"] == "app_unavailable"
    refused = await client.post("/v1/chat-messages", json=body, headers=completion.headers)
    assert refused.status_code == 400 and refused.json()["code"] == "not_chat_app"
    # Dify's chat-only routes, before the body or the query is read
    for method, path in (
        ("POST", "/v1/chat-messages"),
        ("POST", "/v1/chat-messages/t/stop"),
        ("GET", "/v1/conversations"),
        ("GET", "/v1/messages"),
        ("POST", f"/v1/conversations/{uuid.uuid4()}/name"),
    ):
        r = await client.request(method, path, headers=completion.headers)
        assert (r.status_code, r.json()["code"]) == (400, "not_chat_app"), (method, path)
    listed = await client.get("/v1/conversations", params={"user": "alice"}, headers=chat.headers)
    assert listed.status_code == 200
    stop = await client.post(
        "/v1/completion-messages/t/stop", json={"user": "alice"}, headers=completion.headers
    )
    assert stop.json() == {"result": "success"}


async def test_a_chat_app_answers_blocking_in_strict_mode_as_dify_does(db: Database, new_app: NewApp) -> None:
    server = create_app(db, Settings(dify_strict=True), ping_interval=0.05)
    app = await new_app(["Fine."], mode="chat")
    transport = httpx.ASGITransport(app=server)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        response = await client.post(
            "/v1/chat-messages", json={"inputs": {}, "query": "hi", "user": "alice"}, headers=app.headers
        )
    await server.state.loopwright.settled()
    assert response.status_code == 200 and response.json()["answer"] == "Fine."


async def test_the_openai_wire_runs_a_chat_app(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["Plain answer."], mode="chat")
    response = await client.post(
        "/v1/chat/completions",
        json={"model": "x", "messages": [{"role": "user", "content": "hi"}]},
        headers=app.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "Plain answer."


async def test_the_responses_and_ag_ui_wires_run_a_chat_app(server_app: Any, new_app: NewApp) -> None:
    app = await new_app(["Via responses.", "Via AG-UI."], mode="chat")
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        response = await client.responses.create(model="chat", input="hi", user="alice")
        await client.close()
        status, ag_events = await ag_ui(url, app.key, run_input("thread-chat", "hi"))
    assert response.status == "completed" and response.output_text == "Via responses."
    assert status == 200
    text = "".join(e.delta for e in ag_events if e.type == EventType.TEXT_MESSAGE_CONTENT)
    assert text == "Via AG-UI." and ag_events[-1].type == EventType.RUN_FINISHED
    assert not any(e.type == EventType.TOOL_CALL_START for e in ag_events)


async def test_a_completion_with_nothing_to_complete_is_refused_plainly(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["never"], mode="completion")
    response = await client.post(
        "/v1/completion-messages", json={"inputs": {}, "user": "alice"}, headers=app.headers
    )
    assert response.status_code == 400 and "nothing to complete" in response.json()["message"]
