"""Answer versions over the Service API: ``parent_message_id`` on chat-messages (Regenerate, an edited
question), the run's context following the chosen thread, and the history API returning one thread with
each message's versions."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI

from loopwright.app.run.runtime import AppRuntime
from loopwright.model.entities import content_text
from loopwright.model.scripted import ScriptedModel
from tests.server.conftest import NewApp, ServiceApp

REPLIES = ["a1", "a2", "a2b", "a3", "a1b"]


async def _send(
    client: httpx.AsyncClient, app: ServiceApp, query: str, conversation: str | None = None, **extra: Any
) -> httpx.Response:
    body = {"query": query, "inputs": {}, "user": "alice", "response_mode": "blocking", **extra}
    if conversation is not None:
        body["conversation_id"] = conversation
    return await client.post("/v1/chat-messages", json=body, headers=app.headers)


async def _ask(
    client: httpx.AsyncClient, app: ServiceApp, query: str, conversation: str | None = None, **extra: Any
) -> dict[str, Any]:
    response = await _send(client, app, query, conversation, **extra)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _thread(
    client: httpx.AsyncClient, app: ServiceApp, conversation: str, **params: str
) -> list[dict[str, Any]]:
    response = await client.get(
        "/v1/messages",
        params={"conversation_id": conversation, "user": "alice", **params},
        headers=app.headers,
    )
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def _prompt(server_app: FastAPI) -> list[tuple[str, str]]:
    """The newest request of the app's scripted model: (role, text) of each message but the system's."""
    runtime: AppRuntime = server_app.state.loopwright
    model = next(m for m in runtime._models.values() if isinstance(m, ScriptedModel))  # noqa: SLF001
    return [(m.role, content_text(m.content)) for m in model.requests[-1].messages if m.role != "system"]


async def test_regenerate_makes_a_version_and_the_history_switches_between_them(
    server_app: FastAPI, client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(REPLIES, tools=[])
    first = await _ask(client, app, "q1")
    conv = first["conversation_id"]
    second = await _ask(client, app, "q2", conv)
    # Regenerate the second answer: a new message after the first one
    again = await _ask(client, app, "q2", conv, parent_message_id=first["message_id"])
    assert again["answer"] == "a2b"
    assert _prompt(server_app) == [("user", "q1"), ("assistant", "a1"), ("user", "q2")]

    newest = await _thread(client, app, conv)
    assert [(m["query"], m["answer"]) for m in newest] == [("q1", "a1"), ("q2", "a2b")]
    assert newest[1]["versions"] == {
        "parent_id": first["message_id"],
        "ids": [second["message_id"], again["message_id"]],
    }
    assert newest[0]["versions"] == {"parent_id": None, "ids": [first["message_id"]]}
    assert newest[1]["parent_message_id"] == first["message_id"]  # as stored, Dify's field
    # the other version, and back
    older = await _thread(client, app, conv, message_id=second["message_id"])
    assert [m["answer"] for m in older] == ["a1", "a2"]
    assert [m["answer"] for m in await _thread(client, app, conv, message_id=again["message_id"])] == [
        "a1",
        "a2b",
    ]

    # a message that names no parent goes on after the newest: the regenerated answer is its context
    await _ask(client, app, "q3", conv)
    assert _prompt(server_app) == [
        ("user", "q1"),
        ("assistant", "a1"),
        ("user", "q2"),
        ("assistant", "a2b"),
        ("user", "q3"),
    ]
    # the thread through the first version of q2 stops there; through q1 it goes to the newest message
    assert [m["answer"] for m in await _thread(client, app, conv, message_id=second["message_id"])] == [
        "a1",
        "a2",
    ]
    assert [m["answer"] for m in await _thread(client, app, conv, message_id=first["message_id"])] == [
        "a1",
        "a2b",
        "a3",
    ]
    # pages of a thread: first_id goes up its own branch
    page = await client.get(
        "/v1/messages",
        params={"conversation_id": conv, "user": "alice", "limit": 1, "first_id": newest[1]["id"]},
        headers=app.headers,
    )
    assert [m["answer"] for m in page.json()["data"]] == ["a1"] and page.json()["has_more"] is False


async def test_an_edited_first_question_starts_a_branch_with_no_history(
    server_app: FastAPI, client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["a1", "a2", "a1b"], tools=[])
    first = await _ask(client, app, "q1")
    conv = first["conversation_id"]
    await _ask(client, app, "q2", conv)
    edited = await _ask(client, app, "q1, edited", conv, parent_message_id=None)
    assert _prompt(server_app) == [("user", "q1, edited")]  # nothing of the other branch
    thread = await _thread(client, app, conv)
    assert [(m["query"], m["answer"]) for m in thread] == [("q1, edited", "a1b")]
    assert thread[0]["versions"] == {"parent_id": None, "ids": [first["message_id"], edited["message_id"]]}
    back = await _thread(client, app, conv, message_id=first["message_id"])
    assert [m["answer"] for m in back] == ["a1", "a2"]


async def test_a_bad_parent_is_refused_and_nothing_is_stored(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["a1", "a2"], tools=[])
    other = await new_app(["b1"], tools=[])
    first = await _ask(client, app, "q1")
    conv = first["conversation_id"]
    elsewhere = await _ask(client, other, "b")
    cases = [
        (conv, "not-a-uuid", 400),
        (None, first["message_id"], 400),  # a parent needs its conversation
        (conv, elsewhere["message_id"], 404),  # another app's message
        (conv, "8d7f2a4e-0000-4000-8000-000000000000", 404),
    ]
    for conversation, parent, status in cases:
        response = await _send(client, app, "q?", conversation, parent_message_id=parent)
        assert response.status_code == status, (parent, response.text)
    assert len(await _thread(client, app, conv)) == 1
    # blank or absent: after the newest (Dify's Service API)
    assert (await _ask(client, app, "q2", conv, parent_message_id=""))["answer"] == "a2"
    assert [m["query"] for m in await _thread(client, app, conv)] == ["q1", "q2"]
