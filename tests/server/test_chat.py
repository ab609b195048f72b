"""POST /v1/chat-messages through the ASGI app: SSE order and fields, blocking body, history, inputs."""

from __future__ import annotations

from typing import Any

import httpx

from loopwright.server.routes_chat import PRICE_KEYS, blocking_metadata
from loopwright.store.db import Database
from loopwright.store.models import Message
from tests.server.conftest import NewApp, ServiceApp, action, parse_sse

FC_REPLIES: list[Any] = [
    {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}]]},
    "It is 5.",
]


async def stream_chat(client: httpx.AsyncClient, app: ServiceApp, **body: Any) -> list[dict[str, Any]]:
    body = {"inputs": {}, "user": "alice", "response_mode": "streaming", **body}
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    return [e for e in parse_sse(r.text) if e["event"] != "ping"]


def collapse(names: list[str]) -> list[str]:
    """Consecutive agent_message events as one."""
    out: list[str] = []
    for n in names:
        if not (n == "agent_message" and out and out[-1] == n):
            out.append(n)
    return out


async def test_fc_stream_has_difys_order_and_fields(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(FC_REPLIES)
    events = await stream_chat(client, app, query="What is 2 + 3?")
    names = collapse([e["event"] for e in events])
    assert names == [
        "agent_thought",
        "agent_message",
        "agent_thought",
        "agent_thought",
        "agent_thought",
        "agent_message",
        "agent_thought",
        "message_end",
    ]
    task_id = events[0]["task_id"]
    message_id, conversation_id = events[0]["message_id"], events[0]["conversation_id"]
    for e in events:
        assert e["task_id"] == task_id
        assert e["message_id"] == message_id and e["conversation_id"] == conversation_id
        assert isinstance(e["created_at"], int)
    thoughts = [e for e in events if e["event"] == "agent_thought"]
    for t in thoughts:
        for key in ("id", "position", "thought", "observation", "tool", "tool_labels", "tool_input"):
            assert key in t
        assert t["message_files"] == []
    call, observed = thoughts[1], thoughts[2]
    assert call["position"] == 1 and call["tool"] == "calculator" and call["thought"] == "Let me compute."
    assert "2+3" in call["tool_input"] and call["tool_labels"]["calculator"]
    assert observed["id"] == call["id"] and "5" in observed["observation"]
    assert thoughts[3]["position"] == 2 and thoughts[-1]["thought"] == "It is 5."
    end = events[-1]
    assert end["id"] == message_id
    usage = end["metadata"]["usage"]
    assert usage["total_tokens"] > 0 and "latency" in usage
    assert end["metadata"]["retriever_resources"] == []
    # Dify's timing: latency is the whole message, split at its first streamed token
    first, generate = usage["time_to_first_token"], usage["time_to_generate"]
    assert 0 < first <= usage["latency"] and 0 <= generate <= usage["latency"]
    assert abs(first + generate - usage["latency"]) < 1e-9


async def test_react_stream_ends_with_one_answer_message(client: httpx.AsyncClient, new_app: NewApp) -> None:
    replies = [action("calculator", {"expression": "6*7"}), action("Final Answer", "It is 42.", "Done.")]
    app = await new_app(replies, features=[], strategy="react")
    events = await stream_chat(client, app, query="6 times 7?")
    names = collapse([e["event"] for e in events])
    assert names[:5] == ["agent_thought", "agent_message", "agent_thought", "agent_thought", "agent_thought"]
    assert names[-2:] == ["agent_message", "message_end"]
    assert "agent_thought" not in names[5:]  # the final round shows no thought event
    assert events[-2]["answer"] == "It is 42."
    tool_thought = [e for e in events if e["event"] == "agent_thought"][2]
    assert tool_thought["tool"] == "calculator" and "42" in tool_thought["observation"]


async def test_blocking_body(client: httpx.AsyncClient, new_app: NewApp, db: Database) -> None:
    app = await new_app(FC_REPLIES)
    r = await client.post(
        "/v1/chat-messages", json={"query": "2+3?", "inputs": {}, "user": "alice"}, headers=app.headers
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["event"] == "message" and body["mode"] == "agent-chat"
    assert body["answer"] == "Let me compute.\nIt is 5." and body["id"] == body["message_id"]
    assert set(body) == {
        "event",
        "task_id",
        "id",
        "message_id",
        "conversation_id",
        "mode",
        "answer",
        "metadata",
        "created_at",
    }
    assert body["metadata"]["usage"]["total_tokens"] > 0 and body["metadata"]["retriever_resources"] == []
    usage = body["metadata"]["usage"]
    prices = [usage[k] for k in PRICE_KEYS]
    assert all(isinstance(p, int | float) for p in prices), usage  # numbers, as Dify's blocking JSON
    async with db.transaction() as s:
        message = await s.get(Message, body["message_id"])
        assert message is not None and message.status == "normal"


async def test_history_across_turns(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app([*FC_REPLIES, "Still 5."])
    first = await stream_chat(client, app, query="What is 2 + 3?")
    conversation_id = first[0]["conversation_id"]
    second = await stream_chat(client, app, query="Sure?", conversation_id=conversation_id)
    assert second[0]["conversation_id"] == conversation_id
    r = await client.get(
        "/v1/messages", params={"conversation_id": conversation_id, "user": "alice"}, headers=app.headers
    )
    assert r.status_code == 200, r.text
    page = r.json()
    assert page["has_more"] is False and page["limit"] == 20
    one, two = page["data"]
    assert (one["query"], one["answer"]) == ("What is 2 + 3?", "Let me compute.\nIt is 5.")
    assert (two["query"], two["answer"]) == ("Sure?", "Still 5.")
    assert one["feedback"] is None and one["message_files"] == [] and one["retriever_resources"] == []
    assert [t["position"] for t in one["agent_thoughts"]] == [1, 2]
    t1 = one["agent_thoughts"][0]
    assert t1["tool"] == "calculator" and t1["chain_id"] is None and t1["message_id"] == one["id"]
    assert set(t1) >= {"id", "thought", "tool_labels", "tool_input", "created_at", "observation", "files"}
    assert t1["id"] == next(e["id"] for e in first if e["event"] == "agent_thought")
    assert len(two["agent_thoughts"]) == 1


async def test_unknown_conversation_is_404(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(FC_REPLIES)
    body = {
        "query": "hi",
        "inputs": {},
        "user": "alice",
        "conversation_id": "00000000-0000-4000-8000-000000000000",
        "response_mode": "streaming",
    }
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 404
    assert r.json() == {"code": "not_found", "message": "Conversation Not Exists.", "status": 404}
    r = await client.post("/v1/chat-messages", json={**body, "conversation_id": "nope"}, headers=app.headers)
    assert r.status_code == 400 and r.json()["code"] == "invalid_param"


FORM = [
    {"variable": "name", "label": "Name", "required": True, "max_length": 5},
    {"variable": "tone", "label": "Tone", "type": "select", "options": ["dry", "warm"]},
    {"variable": "count", "label": "Count", "type": "number"},
]


async def test_inputs_are_validated(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["Hello."], user_input_form=FORM)

    async def send(inputs: dict[str, Any]) -> httpx.Response:
        body = {"query": "hi", "user": "alice", "inputs": inputs}
        return await client.post("/v1/chat-messages", json=body, headers=app.headers)

    cases = [  # Dify's texts: they name the variable
        ({}, "name is required in input form"),
        ({"name": None}, "name is required in input form"),
        ({"name": "toolongname"}, "name in input form must be less than 5 characters"),
        ({"name": "Ann", "tone": "loud"}, "tone in input form must be one of the following: ['dry', 'warm']"),
        ({"name": "Ann", "count": "many"}, "count in input form must be a valid number"),
        ({"name": 3}, "(type 'text-input') name in input form must be a string"),
    ]
    for inputs, message in cases:
        r = await send(inputs)
        assert r.status_code == 400, inputs
        assert r.json()["code"] == "invalid_param" and r.json()["status"] == 400
        assert r.json()["message"].startswith(message), r.json()
    r = await send({"name": "A\x00nn", "tone": "warm", "count": "3", "extra": "dropped"})
    assert r.status_code == 200, r.text
    conversation_id = r.json()["conversation_id"]
    r = await client.get("/v1/conversations", params={"user": "alice"}, headers=app.headers)
    (conv,) = r.json()["data"]
    assert conv["id"] == conversation_id and conv["inputs"] == {"name": "Ann", "tone": "warm", "count": 3}


async def test_request_validation_is_400_invalid_param(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["Hello."])
    for body, message in [
        ({"user": "alice"}, "query is required"),
        ({"inputs": {}, "query": "hi"}, "user is required"),
        ({"inputs": {}, "query": "hi", "user": "alice", "response_mode": "fast"}, "response_mode"),
        ({"inputs": {}, "query": 5, "user": "alice"}, "query"),
        ({"inputs": {}, "query": "hi", "user": "  "}, "user is required"),
    ]:
        r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
        assert r.status_code == 400, body
        assert r.json()["code"] == "invalid_param" and message in r.json()["message"]
    r = await client.post(
        "/v1/chat-messages", content=b"{not json", headers={**app.headers, "Content-Type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["code"] == "invalid_param"
    r = await client.get("/v1/messages", params={"user": "alice", "limit": 0}, headers=app.headers)
    assert r.status_code == 400 and r.json()["code"] == "invalid_param"
    r = await client.get("/v1/nothing-here", headers=app.headers)
    assert r.status_code == 404 and r.json()["code"] == "not_found"


async def test_query_nul_characters_are_stripped(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["Hello."])
    r = await client.post(
        "/v1/chat-messages", json={"inputs": {}, "query": "h\x00i", "user": "alice"}, headers=app.headers
    )
    conversation_id = r.json()["conversation_id"]
    r = await client.get(
        "/v1/messages", params={"conversation_id": conversation_id, "user": "alice"}, headers=app.headers
    )
    assert r.json()["data"][0]["query"] == "hi"


async def test_a_model_error_is_an_error_event(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app([{"error": "provider down"}])
    events = await stream_chat(client, app, query="hi")
    assert events[-1]["event"] == "error"
    assert events[-1]["code"] == "completion_request_error" and "task_id" not in events[-1]
    app = await new_app([{"error": "provider down"}])
    r = await client.post(
        "/v1/chat-messages", json={"inputs": {}, "query": "hi", "user": "a"}, headers=app.headers
    )
    assert r.status_code == 400 and r.json()["code"] == "completion_request_error"


async def test_an_unexpected_exception_is_a_dify_500(
    client: httpx.AsyncClient, new_app: NewApp, monkeypatch: Any
) -> None:
    from loopwright.server import routes_app

    def boom(*_: Any) -> Any:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(routes_app, "parameters_body", boom)
    app = await new_app(["Hello."])
    r = await client.get("/v1/parameters", headers=app.headers)
    assert r.status_code == 500
    assert r.json() == {
        "code": "internal_server_error",
        "message": "Internal Server Error, please contact support.",
        "status": 500,
    }


def test_blocking_prices_are_numbers_as_difys_jsonable_encoder_writes_them() -> None:
    usage = {"prompt_price": "0.0000150", "total_price": "12", "prompt_tokens": 3, "currency": "USD"}
    metadata = blocking_metadata({"usage": usage, "retriever_resources": []})
    assert metadata["usage"] == {
        "prompt_price": 1.5e-05,
        "total_price": 12,
        "prompt_tokens": 3,
        "currency": "USD",
    }
    assert isinstance(metadata["usage"]["total_price"], int) and usage["total_price"] == "12"  # a copy
