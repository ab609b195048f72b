"""Auth and scoping, conversations, parameters, info and feedback."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import delete, event

from loopwright.store.db import Database
from loopwright.store.models import AppConfig
from tests.server.conftest import NewApp, ServiceApp


async def chat(
    client: httpx.AsyncClient, app: ServiceApp, user: str = "alice", **body: Any
) -> dict[str, Any]:
    r = await client.post(
        "/v1/chat-messages",
        json={"inputs": {}, "query": "hello there", "user": user, **body},
        headers=app.headers,
    )
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()
    return result


UNAUTHORIZED = {"code": "unauthorized", "status": 401}


async def test_auth_matrix(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["Hello.", "Again."])
    other = await new_app(["Other."], name="other")
    conv_id = (await chat(client, app))["conversation_id"]

    for headers in ({}, {"Authorization": "Bearer app-wrong"}, {"Authorization": app.key}):
        r = await client.get("/v1/conversations", params={"user": "alice"}, headers=headers)
        assert r.status_code == 401
        body = r.json()
        assert {k: body[k] for k in ("code", "status")} == UNAUTHORIZED and body["message"]
        r = await client.post(
            "/v1/chat-messages", json={"inputs": {}, "query": "x", "user": "alice"}, headers=headers
        )
        assert r.status_code == 401

    # another user of the same app: the conversation does not exist for them
    params = {"conversation_id": conv_id, "user": "bob"}
    r = await client.get("/v1/messages", params=params, headers=app.headers)
    assert r.status_code == 404 and r.json()["message"] == "Conversation Not Exists."
    r = await client.get("/v1/conversations", params={"user": "bob"}, headers=app.headers)
    assert r.json()["data"] == []
    r = await client.post(
        "/v1/chat-messages",
        json={"inputs": {}, "query": "x", "user": "bob", "conversation_id": conv_id},
        headers=app.headers,
    )
    assert r.status_code == 404
    r = await client.request(
        "DELETE", f"/v1/conversations/{conv_id}", json={"user": "bob"}, headers=app.headers
    )
    assert r.status_code == 404

    # another app's key, same user string: nothing
    r = await client.get(
        "/v1/messages", params={"conversation_id": conv_id, "user": "alice"}, headers=other.headers
    )
    assert r.status_code == 404
    r = await client.get("/v1/conversations", params={"user": "alice"}, headers=other.headers)
    assert r.json()["data"] == []

    # the owner still sees it
    r = await client.get(
        "/v1/messages", params={"conversation_id": conv_id, "user": "alice"}, headers=app.headers
    )
    assert r.status_code == 200 and len(r.json()["data"]) == 1


async def test_user_is_optional_where_dify_defaults_it(client: httpx.AsyncClient, new_app: NewApp) -> None:
    """Lists, rename, delete and upload without ``user`` act as Dify's default end user; chat,
    stop and feedback still require one."""
    app = await new_app(["Hello.", "Again."])
    mine = (await chat(client, app, user="DEFAULT-USER"))["conversation_id"]
    await chat(client, app, user="alice")
    r = await client.get("/v1/conversations", headers=app.headers)
    assert r.status_code == 200 and [c["id"] for c in r.json()["data"]] == [mine]
    r = await client.get("/v1/messages", params={"conversation_id": mine}, headers=app.headers)
    assert r.status_code == 200 and len(r.json()["data"]) == 1
    r = await client.post(f"/v1/conversations/{mine}/name", json={"name": "Mine"}, headers=app.headers)
    assert r.status_code == 200 and r.json()["name"] == "Mine"
    r = await client.request("DELETE", f"/v1/conversations/{mine}", headers=app.headers)
    assert r.status_code == 204
    required = [
        ("POST", "/v1/chat-messages", {"inputs": {}, "query": "hi"}),
        ("POST", "/v1/chat-messages/some-task/stop", {}),
        ("POST", f"/v1/messages/{mine}/feedbacks", {"rating": "like"}),
    ]
    for method, path, body in required:
        r = await client.request(method, path, json=body, headers=app.headers)
        assert r.status_code == 400 and r.json() == {
            "code": "invalid_param",
            "message": "user is required",
            "status": 400,
        }, path


async def test_conversations_list_rename_delete(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["One.", "Two.", "Three."], opening_statement="Welcome!")
    ids = [
        (await chat(client, app, query=f"question number {i} is long"))["conversation_id"] for i in range(3)
    ]

    r = await client.get("/v1/conversations", params={"user": "alice", "limit": 2}, headers=app.headers)
    page = r.json()
    assert page["limit"] == 2 and page["has_more"] is True
    assert [c["id"] for c in page["data"]] == ids[::-1][:2]  # most recently updated first
    conv = page["data"][0]
    assert set(conv) == {"id", "name", "inputs", "status", "introduction", "created_at", "updated_at"}
    assert conv["name"] == "question number 2 is…" and conv["introduction"] == "Welcome!"
    assert conv["status"] == "normal" and isinstance(conv["created_at"], int)
    r = await client.get(
        "/v1/conversations", params={"user": "alice", "last_id": page["data"][-1]["id"]}, headers=app.headers
    )
    assert [c["id"] for c in r.json()["data"]] == [ids[0]] and r.json()["has_more"] is False
    r = await client.get(
        "/v1/conversations",
        params={"user": "alice", "last_id": "00000000-0000-4000-8000-000000000000"},
        headers=app.headers,
    )
    assert r.status_code == 404

    r = await client.post(
        f"/v1/conversations/{ids[0]}/name", json={"name": "Maths", "user": "alice"}, headers=app.headers
    )
    assert r.status_code == 200 and r.json()["name"] == "Maths" and r.json()["id"] == ids[0]
    r = await client.post(
        f"/v1/conversations/{ids[0]}/name", json={"auto_generate": True, "user": "alice"}, headers=app.headers
    )
    assert r.json()["name"] == "question number 0 is…"
    r = await client.post(f"/v1/conversations/{ids[0]}/name", json={"user": "alice"}, headers=app.headers)
    assert r.status_code == 400 and r.json()["code"] == "invalid_param"

    r = await client.request(
        "DELETE", f"/v1/conversations/{ids[0]}", json={"user": "alice"}, headers=app.headers
    )
    assert r.status_code == 204 and r.content == b""  # Dify's answer
    r = await client.get("/v1/conversations", params={"user": "alice"}, headers=app.headers)
    assert ids[0] not in [c["id"] for c in r.json()["data"]]
    r = await client.request(
        "DELETE", f"/v1/conversations/{ids[0]}", json={"user": "alice"}, headers=app.headers
    )
    assert r.status_code == 404 and r.json()["message"] == "Conversation Not Exists."


async def test_the_message_list_costs_the_same_queries_for_one_message_or_many(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    rounds = 4
    replies: list[Any] = []
    for i in range(rounds):  # each message: a tool round, then the answer (two thoughts)
        replies += [
            {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": f"{i}+1"}]]},
            f"{i + 1}.",
        ]
    app = await new_app(replies)
    conv_id = (await chat(client, app))["conversation_id"]
    for _ in range(rounds - 1):
        await chat(client, app, conversation_id=conv_id)

    async def listed(limit: int) -> tuple[int, list[Any]]:
        await client.get(
            "/v1/messages", params={"conversation_id": conv_id, "user": "alice"}, headers=app.headers
        )
        await db.writer.flush()  # nothing of the chats (nor the key's last use) left to write
        statements: list[str] = []

        def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            statements.append(statement)

        event.listen(db.engine.sync_engine, "before_cursor_execute", record)
        try:
            r = await client.get(
                "/v1/messages",
                params={"conversation_id": conv_id, "user": "alice", "limit": limit},
                headers=app.headers,
            )
        finally:
            event.remove(db.engine.sync_engine, "before_cursor_execute", record)
        assert r.status_code == 200, r.text
        return len(statements), r.json()["data"]

    one, [last] = await listed(1)
    many, messages = await listed(rounds)
    assert len(messages) == rounds and messages[-1]["id"] == last["id"]
    assert all(len(m["agent_thoughts"]) == 2 for m in messages)
    assert many == one <= 6  # no query per message


async def test_parameters_and_info(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(
        ["Hello."],
        opening_statement="Hi, I add numbers.",
        suggested_questions=["What is 1+1?"],
        user_input_form=[
            {"variable": "name", "label": "Name", "required": True, "max_length": 48},
            {
                "variable": "tone",
                "label": "Tone",
                "type": "select",
                "options": ["dry", "warm"],
                "default": "dry",
            },
            {"variable": "n", "label": "N", "type": "number"},
        ],
        file_upload={"enabled": True, "allowed_types": ["image"], "number_limits": 2},
    )
    r = await client.get("/v1/parameters", headers=app.headers)
    assert r.status_code == 200
    p = r.json()
    assert p["opening_statement"] == "Hi, I add numbers." and p["suggested_questions"] == ["What is 1+1?"]
    for key in (
        "suggested_questions_after_answer",
        "speech_to_text",
        "retriever_resource",
        "annotation_reply",
        "more_like_this",
    ):
        assert p[key] == {"enabled": False}
    assert p["text_to_speech"] == {"enabled": False, "voice": "", "language": ""}  # Dify's default
    assert p["user_input_form"] == [
        {
            "text-input": {
                "label": "Name",
                "variable": "name",
                "required": True,
                "max_length": 48,
                "default": "",
            }
        },
        {
            "select": {
                "label": "Tone",
                "variable": "tone",
                "required": False,
                "options": ["dry", "warm"],
                "default": "dry",
            }
        },
        {"number": {"label": "N", "variable": "n", "required": False, "default": None}},
    ]
    fu = p["file_upload"]
    assert fu["enabled"] is True and fu["number_limits"] == 2 and fu["image"]["enabled"] is True
    assert fu["allowed_file_upload_methods"] == ["local_file", "remote_url"]
    assert p["system_parameters"]["file_size_limit"] > 0

    r = await client.get("/v1/info", headers=app.headers)
    assert r.json() == {
        "id": app.id,
        "name": "calc",
        "description": "calc app",
        "tags": [],
        "mode": "agent-chat",
        "author_name": None,
    }


async def test_an_app_without_a_configuration_is_unavailable(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    app = await new_app(["Hello."], file_upload={"enabled": True, "allowed_types": ["image"]})
    async with db.transaction() as s:
        await s.execute(delete(AppConfig).where(AppConfig.app_id == app.id))
    unavailable = {
        "code": "app_unavailable",
        "message": "App unavailable, please check your app configurations.",
        "status": 400,
    }
    r = await client.get("/v1/parameters", headers=app.headers)
    assert (r.status_code, r.json()) == (400, unavailable)
    files = {"file": ("a.png", b"\x89PNG\r\n\x1a\n", "image/png")}
    r = await client.post("/v1/files/upload", data={"user": "alice"}, files=files, headers=app.headers)
    assert (r.status_code, r.json()) == (400, unavailable)


async def test_feedback(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["Hello."])
    sent = await chat(client, app)
    message_id, conv_id = sent["message_id"], sent["conversation_id"]

    async def feedback() -> Any:
        r = await client.get(
            "/v1/messages", params={"conversation_id": conv_id, "user": "alice"}, headers=app.headers
        )
        return r.json()["data"][0]["feedback"]

    url = f"/v1/messages/{message_id}/feedbacks"
    r = await client.post(
        url, json={"rating": "like", "user": "alice", "content": "nice"}, headers=app.headers
    )
    assert r.status_code == 200 and r.json() == {"result": "success"}
    assert await feedback() == {"rating": "like"}
    await client.post(url, json={"rating": "dislike", "user": "alice"}, headers=app.headers)
    assert await feedback() == {"rating": "dislike"}
    await client.post(url, json={"rating": None, "user": "alice"}, headers=app.headers)
    assert await feedback() is None
    r = await client.post(url, json={"rating": "like", "user": "bob"}, headers=app.headers)
    assert r.status_code == 404 and r.json()["message"] == "Message Not Exists."
    r = await client.post(url, json={"rating": "meh", "user": "alice"}, headers=app.headers)
    assert r.status_code == 400 and r.json()["code"] == "invalid_param"


async def test_stop_of_an_unknown_task_is_success(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["Hello."])
    r = await client.post("/v1/chat-messages/no-such-task/stop", json={"user": "alice"}, headers=app.headers)
    assert r.status_code == 200 and r.json() == {"result": "success"}
