"""The PyPI ``dify-client`` SDK as a real client against a real uvicorn server on 127.0.0.1.

The SDK is synchronous (``requests``), so its calls run in a thread while the server runs on the test's
event loop. Its 0.1.x releases have no ``delete_conversation`` and no stop call: the delete is sent with
the SDK's own request helper, as later releases do.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import requests
from dify_client import ChatClient
from fastapi import FastAPI

from loopwright.store.db import Database
from loopwright.store.models import UploadFile
from tests.live_server import serving
from tests.server import conftest as server_fixtures
from tests.server.conftest import NewApp, ServiceApp
from tests.sse import iter_sse

# the server fixtures (a real SQLite database, apps on scripted models, the ASGI app)
new_app = server_fixtures.new_app
server_app = server_fixtures.server_app

FC_REPLIES: list[Any] = [
    {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}]]},
    "It is 5.",
    "Still 5.",
]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00pixels" * 20


@pytest.fixture
async def base_url(
    server_app: FastAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[str]:
    """The API root (``…/v1``) of the app served by uvicorn on a free port."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    server_app.state.loopwright.upload_dir = tmp_path / "uploads"
    async with serving(server_app) as url:
        yield f"{url}/v1"


def sdk(base_url: str, app: ServiceApp) -> ChatClient:
    client = ChatClient(app.key)
    client.base_url = base_url
    return client


def ok(response: requests.Response, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


def read_stream(response: requests.Response) -> list[dict[str, Any]]:
    """The ``data:`` events of a streamed SDK response (pings skipped)."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return list(iter_sse(response.iter_lines(), pings=False))


async def test_streaming_chat_with_a_tool_round(base_url: str, new_app: NewApp) -> None:
    client = sdk(base_url, await new_app(FC_REPLIES))

    def chat() -> list[dict[str, Any]]:
        response = client.create_chat_message({}, "What is 2 + 3?", "alice", response_mode="streaming")
        return read_stream(response)

    events = await asyncio.to_thread(chat)
    names = [e["event"] for e in events]
    assert names[0] == "agent_thought" and names[-1] == "message_end"
    assert "agent_message" in names and "error" not in names
    answer = "".join(e["answer"] for e in events if e["event"] == "agent_message")
    assert answer.endswith("It is 5.")
    tool = next(e for e in events if e["event"] == "agent_thought" and e["tool"])
    assert tool["tool"] == "calculator" and "2+3" in tool["tool_input"]
    observed = [e for e in events if e["event"] == "agent_thought" and e["observation"]]
    assert observed and "5" in observed[0]["observation"]
    end = events[-1]
    assert end["id"] == events[0]["message_id"] and end["conversation_id"] == events[0]["conversation_id"]
    assert end["metadata"]["usage"]["total_tokens"] > 0


async def test_blocking_chat_history_and_conversation_calls(base_url: str, new_app: NewApp) -> None:
    client = sdk(base_url, await new_app(FC_REPLIES))

    def scenario() -> dict[str, Any]:
        first = ok(client.create_chat_message({}, "What is 2 + 3?", "alice"))  # blocking by default
        cid = first["conversation_id"]
        second = ok(client.create_chat_message({}, "Sure?", "alice", "blocking", conversation_id=cid))
        return {
            "first": first,
            "second": second,
            "messages": ok(client.get_conversation_messages("alice", conversation_id=cid)),
            "conversations": ok(client.get_conversations("alice")),
            "others": ok(client.get_conversations("bob")),
            "renamed": ok(client.rename_conversation(cid, "Sums", "alice")),
            "liked": ok(client.message_feedback(first["message_id"], "like", "alice")),
            "after": ok(client.get_conversation_messages("alice", conversation_id=cid, limit=1)),
            "listed": ok(client.get_conversations("alice", limit=5)),
        }

    r = await asyncio.to_thread(scenario)
    first, second = r["first"], r["second"]
    assert first["answer"] == "Let me compute.\nIt is 5." and first["event"] == "message"
    assert first["message_id"] and first["conversation_id"]
    assert second["answer"] == "Still 5." and second["conversation_id"] == first["conversation_id"]
    turns = r["messages"]["data"]
    assert [(m["query"], m["answer"]) for m in turns] == [
        ("What is 2 + 3?", "Let me compute.\nIt is 5."),
        ("Sure?", "Still 5."),
    ]
    assert [m["id"] for m in turns] == [first["message_id"], second["message_id"]]
    assert turns[0]["agent_thoughts"][0]["tool"] == "calculator"
    assert [c["id"] for c in r["conversations"]["data"]] == [first["conversation_id"]]
    assert r["others"]["data"] == []
    assert r["renamed"]["name"] == "Sums" and r["renamed"]["id"] == first["conversation_id"]
    assert r["liked"] == {"result": "success"}
    after = r["after"]
    assert (
        after["limit"] == 1 and after["has_more"] is True and after["data"][0]["id"] == second["message_id"]
    )
    assert r["listed"]["limit"] == 5 and r["listed"]["data"][0]["name"] == "Sums"


async def test_feedback_shows_in_history(base_url: str, new_app: NewApp) -> None:
    client = sdk(base_url, await new_app(["Hello."]))

    def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        sent = ok(client.create_chat_message({}, "hi", "alice"))
        ok(client.message_feedback(sent["message_id"], "dislike", "alice"))
        cid = sent["conversation_id"]
        before = ok(client.get_conversation_messages("alice", conversation_id=cid))
        ok(client.message_feedback(sent["message_id"], None, "alice"))  # null removes it
        return before, ok(client.get_conversation_messages("alice", conversation_id=cid))

    before, after = await asyncio.to_thread(scenario)
    assert before["data"][0]["feedback"] == {"rating": "dislike"}
    assert after["data"][0]["feedback"] is None


async def test_application_parameters(base_url: str, new_app: NewApp) -> None:
    app = await new_app(
        ["hi"],
        opening_statement="Ask me to compute.",
        suggested_questions=["What is 2 + 3?"],
        user_input_form=[{"type": "text-input", "variable": "name", "label": "Name", "required": False}],
    )
    params = ok(await asyncio.to_thread(sdk(base_url, app).get_application_parameters, "alice"))
    assert params["opening_statement"] == "Ask me to compute."
    assert params["suggested_questions"] == ["What is 2 + 3?"]
    assert params["user_input_form"][0]["text-input"]["variable"] == "name"
    assert params["system_parameters"]["file_size_limit"] == 15


async def test_file_upload(base_url: str, new_app: NewApp, db: Database, tmp_path: Path) -> None:
    client = sdk(base_url, await new_app(["hi"]))

    def scenario() -> tuple[Any, Any]:
        typed = client.file_upload("alice", {"file": ("cat.png", PNG, "image/png")})
        untyped = client.file_upload("alice", {"file": ("dog.png", PNG)})  # the part has no Content-Type
        return ok(typed, 201), ok(untyped, 201)

    typed, untyped = await asyncio.to_thread(scenario)
    assert (typed["name"], typed["size"], typed["extension"], typed["mime_type"]) == (
        "cat.png",
        len(PNG),
        "png",
        "image/png",
    )
    assert untyped["mime_type"] == "image/png"
    async with db.transaction() as s:
        row = await s.get(UploadFile, typed["id"])
        assert row is not None
    assert (tmp_path / "uploads" / row.storage_key).read_bytes() == PNG


async def test_file_upload_errors(base_url: str, new_app: NewApp, server_app: FastAPI) -> None:
    server_app.state.loopwright.upload_max_bytes = 64 * 1024
    client = sdk(base_url, await new_app(["hi"]))

    def scenario() -> list[requests.Response]:
        return [
            client.file_upload("alice", {"file": ("big.png", b"x" * (1024 * 1024), "image/png")}),
            client.file_upload("alice", {"file": ("a.txt", b"text", "text/plain")}),
            client.file_upload("alice", {}),
        ]

    big, text, none = await asyncio.to_thread(scenario)
    assert big.status_code == 413 and big.json()["code"] == "file_too_large"
    assert text.status_code == 201  # any type is stored, as Dify stores it (checked where it is used)
    assert none.status_code == 400 and none.json()["code"] == "no_file_uploaded"


async def test_delete_conversation(base_url: str, new_app: NewApp) -> None:
    client = sdk(base_url, await new_app(["One.", "Two."]))

    def scenario() -> tuple[Any, Any, Any, Any]:
        a = ok(client.create_chat_message({}, "first", "alice"))["conversation_id"]
        b = ok(client.create_chat_message({}, "second", "alice"))["conversation_id"]
        # dify-client 0.1.x has no delete_conversation; later releases send exactly this request
        deleted = client._send_request("DELETE", f"/conversations/{a}", {"user": "alice"})
        again = client._send_request("DELETE", f"/conversations/{a}", {"user": "alice"})
        listed = ok(client.get_conversations("alice"))
        return deleted, again, listed, b

    deleted, again, listed, kept = await asyncio.to_thread(scenario)
    assert (deleted.status_code, deleted.text) == (204, "")  # Dify answers a delete with 204, no body
    assert again.status_code == 404 and again.json()["code"] == "not_found"
    assert [c["id"] for c in listed["data"]] == [kept]


async def test_a_file_input_from_an_upload(base_url: str, new_app: NewApp) -> None:
    form = [{"variable": "photo", "label": "Photo", "type": "file", "required": True}]
    client = sdk(base_url, await new_app(["A dot."], user_input_form=form, instruction="Look at {{photo}}."))
    root = base_url.removesuffix("/v1")  # FILES_URL is unset: the signed URLs are relative

    def scenario() -> tuple[Any, Any, requests.Response, requests.Response]:
        upload = ok(client.file_upload("alice", {"file": ("dot.png", PNG, "image/png")}), 201)
        photo = {"type": "image", "transfer_method": "local_file", "upload_file_id": upload["id"]}
        answer = ok(client.create_chat_message({"photo": photo}, "What is it?", "alice"))
        history = ok(client.get_conversation_messages("alice", answer["conversation_id"]))
        stored = history["data"][0]["inputs"]["photo"]
        refused = client.create_chat_message(
            {"photo": {**photo, "upload_file_id": "nope"}}, "Again?", "alice"
        )
        return upload, stored, requests.get(root + stored["url"], timeout=10), refused

    upload, stored, preview, refused = await asyncio.to_thread(scenario)
    assert (stored["upload_file_id"], stored["filename"], stored["type"]) == (
        upload["id"],
        "dot.png",
        "image",
    )
    assert preview.status_code == 200 and preview.content == PNG
    assert refused.status_code == 400 and refused.json()["message"] == "Invalid upload file"


async def test_a_disabled_app_answers_403(base_url: str, new_app: NewApp, db: Database) -> None:
    from loopwright.store import repositories as repo

    app = await new_app(["hi"])
    async with db.transaction() as s:
        await repo.set_app_access(s, app.id, enable_api=False)
    client = sdk(base_url, app)
    response = await asyncio.to_thread(client.get_application_parameters, "alice")
    assert (response.status_code, response.json()) == (
        403,
        {"code": "forbidden", "message": "The app's API service has been disabled.", "status": 403},
    )


async def test_a_plan_and_its_steps_read_as_plain_thoughts(base_url: str, new_app: NewApp) -> None:
    """Strategy "plan": the SDK reads the plan's checklist and each step as ordinary agent_thoughts."""
    from tests.server.test_plan_stream import PLAN_REPLIES

    client = sdk(base_url, await new_app(PLAN_REPLIES, strategy="plan"))

    def chat() -> list[dict[str, Any]]:
        response = client.create_chat_message({}, "Double 2+3", "alice", response_mode="streaming")
        return read_stream(response)

    events = await asyncio.to_thread(chat)
    assert events[-1]["event"] == "message_end" and "error" not in [e["event"] for e in events]
    thoughts = [e for e in events if e["event"] == "agent_thought"]
    assert all(set(t) >= {"id", "position", "thought", "tool", "tool_input", "observation"} for t in thoughts)
    assert "- [x] s2: double it (calculator)" in thoughts[-1]["thought"] or any(
        "- [x] s2" in t["thought"] for t in thoughts
    )
    assert "".join(e["answer"] for e in events if e["event"] == "agent_message") == "It is 10."


async def test_a_handoff_reads_as_a_plain_thought_and_history_names_the_app(
    base_url: str, new_app: NewApp, server_app: FastAPI, db: Database
) -> None:
    """Handoffs: the SDK reads the thought naming the app taking over (``answered_by`` beside Dify's
    fields) and the answer of the app it went to; the history names it too."""
    from tests.server.test_handoffs import configure, handoff, script

    desk = await new_app([], name="desk")
    billing = await new_app([], name="billing")
    config = await configure(db, desk.id, handoffs=[{"app": billing.id, "description": "invoices"}])
    script(server_app, config, [handoff(billing.id, "invoice")])
    script(server_app, await configure(db, billing.id), ["It was 42 EUR."])
    client = sdk(base_url, desk)

    def chat() -> tuple[list[dict[str, Any]], Any]:
        response = client.create_chat_message({}, "My invoice?", "alice", response_mode="streaming")
        events = read_stream(response)
        history = client.get_conversation_messages("alice", events[-1]["conversation_id"])
        return events, ok(history)

    events, history = await asyncio.to_thread(chat)
    assert events[-1]["event"] == "message_end" and "error" not in [e["event"] for e in events]
    taking_over = [e for e in events if e["event"] == "agent_thought" and e.get("answered_by")]
    assert [e["answered_by"] for e in taking_over] == [billing.id]
    assert taking_over[0]["thought"] == "billing answers from here on: invoice"
    assert "".join(e["answer"] for e in events if e["event"] == "agent_message") == "It was 42 EUR."
    assert [m["answered_by"] for m in history["data"]] == [billing.id]


async def test_regenerate_with_parent_message_id_and_read_the_versions(
    base_url: str, new_app: NewApp
) -> None:
    """The SDK's chat call has no ``parent_message_id`` in 0.1.x: it is sent with the SDK's own request
    helper (the body Dify's web app sends to regenerate an answer)."""
    client = sdk(base_url, await new_app(["a1", "a2", "a2b"], tools=[]))

    def chat(query: str, **extra: Any) -> dict[str, Any]:
        body = {"inputs": {}, "query": query, "user": "alice", "response_mode": "blocking", **extra}
        response = client._send_request("POST", "/chat-messages", body)
        return dict(ok(response))

    def run() -> tuple[list[str], dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        first = chat("q1")
        conv = first["conversation_id"]
        second = chat("q2", conversation_id=conv)
        again = chat("q2", conversation_id=conv, parent_message_id=first["message_id"])
        newest = ok(client.get_conversation_messages("alice", conv))["data"]
        params = {"user": "alice", "conversation_id": conv, "message_id": second["message_id"]}
        older = ok(client._send_request("GET", "/messages", params=params))["data"]
        return [second["message_id"], again["message_id"]], first, newest, older

    ids, first, newest, older = await asyncio.to_thread(run)
    assert [m["answer"] for m in newest] == ["a1", "a2b"]
    assert newest[1]["versions"] == {"parent_id": first["message_id"], "ids": ids}
    assert [m["answer"] for m in older] == ["a1", "a2"]
