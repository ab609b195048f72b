"""Memory across conversations (memory.long_term): a fact of conversation 1 reaches the prompt of
conversation 2 for the same end user of the same app — never another user's or another app's; the
working-memory tool; the admin API's view, edit and delete; observations caught up after a process died
before writing them; an end user's deletion takes their memory."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import delete, func, select

from loopwright.app.run import memory
from loopwright.app.run.runtime import AppRuntime
from loopwright.config import Settings
from loopwright.model.scripted import ScriptedModel
from loopwright.server.app import create_app
from loopwright.store import memory as store
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import EndUser, MemoryBlock, MemoryObservation
from tests.server.conftest import FC, ServiceApp

TOKEN = "memory-admin-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
FACT = "My favourite colour is teal and I live in Lisbon."
QUESTION = "Which colour should I paint my bike?"


@pytest.fixture
def console_app(db: Database) -> FastAPI:
    return create_app(db, Settings(admin_token=TOKEN), ping_interval=0.05)


@pytest.fixture
async def http(console_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=console_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c
    await console_app.state.loopwright.settled()


async def memory_app(db: Database, tmp_path: Path, name: str, replies: list[Any]) -> tuple[ServiceApp, str]:
    script = tmp_path / f"{name}.json"
    script.write_text(json.dumps({"replies": replies, "features": FC, "cycle": True}), encoding="utf-8")
    spec = f"scripted:{script}"
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, name, {"model": spec, "memory": {"long_term": True}})
        key = await repo.create_api_key(s, app.id)
    return ServiceApp(app.id, key.token), spec


async def ask(http: httpx.AsyncClient, app: ServiceApp, user: str, query: str) -> dict[str, Any]:
    body = {"inputs": {}, "user": user, "query": query, "response_mode": "blocking"}
    r = await http.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def last_prompt(runtime: AppRuntime, spec: str) -> str:
    model = runtime.model(spec)
    assert isinstance(model, ScriptedModel)
    return " ".join(str(m.content) for m in model.requests[-1].messages)


async def test_a_fact_reaches_the_same_users_next_conversation_only(
    console_app: FastAPI, http: httpx.AsyncClient, db: Database, tmp_path: Path
) -> None:
    runtime: AppRuntime = console_app.state.loopwright
    app, spec = await memory_app(db, tmp_path, "one", ["Noted."])
    other_app, other_spec = await memory_app(db, tmp_path, "two", ["Noted."])
    first = await ask(http, app, "alice", FACT)
    await db.writer.flush()  # the observation is written behind the run
    second = await ask(http, app, "alice", QUESTION)
    assert second["conversation_id"] != first["conversation_id"]
    assert "teal" in last_prompt(runtime, spec)  # conversation 2 of alice sees conversation 1
    await ask(http, app, "bob", QUESTION)
    assert "teal" not in last_prompt(runtime, spec)  # another end user of the app: nothing
    await ask(http, other_app, "alice", QUESTION)
    assert "teal" not in last_prompt(runtime, other_spec)  # the same user string in another app: nothing


async def test_the_working_memory_tool_and_the_admin_api(
    console_app: FastAPI, http: httpx.AsyncClient, db: Database, tmp_path: Path
) -> None:
    runtime: AppRuntime = console_app.state.loopwright
    remember = {"tool_calls": [["working_memory", {"action": "append", "text": "Name: Alice"}]]}
    replies = [remember, "I will remember.", "Hello.", "You are Alice.", "I do not know."]
    app, spec = await memory_app(db, tmp_path, "wm", replies)
    await ask(http, app, "alice", "Call me Alice.")
    await ask(http, app, "alice", "Hi again")
    await ask(http, app, "alice", "What is my name?")
    assert "Working memory:\nName: Alice" in last_prompt(runtime, spec)

    user_id = await runtime.lookup.end_user_id(app.id, "alice")
    url = f"/console/api/apps/{app.id}/end-users/{user_id}/memory"
    assert (await http.get(url)).status_code == 401
    seen = (await http.get(url, headers=ADMIN)).json()
    assert seen["working_memory"] == "Name: Alice" and len(seen["observations"]) >= 2
    assert "Call me Alice." in seen["observations"][-1]["text"]
    edited = await http.put(url, json={"working_memory": "Name: Alicia"}, headers=ADMIN)
    assert edited.status_code == 200 and edited.json()["working_memory"] == "Name: Alicia"
    one = seen["observations"][0]["id"]
    assert (await http.delete(f"{url}/observations/{one}", headers=ADMIN)).status_code == 204
    assert (await http.delete(f"{url}/observations/{one}", headers=ADMIN)).status_code == 404
    # another app's id with this user: not found, nothing shown
    other, _ = await memory_app(db, tmp_path, "other", ["Hi."])
    wrong = f"/console/api/apps/{other.id}/end-users/{user_id}/memory"
    assert (await http.get(wrong, headers=ADMIN)).status_code == 404
    assert (await http.delete(url, headers=ADMIN)).status_code == 204
    empty = (await http.get(url, headers=ADMIN)).json()
    assert empty == {"end_user_id": user_id, "working_memory": "", "observations": []}
    await ask(http, app, "alice", "What is my name?")
    assert "Alice" not in last_prompt(runtime, spec).replace("What is my name?", "")


async def test_observations_lost_by_a_dead_process_are_caught_up(
    console_app: FastAPI, http: httpx.AsyncClient, db: Database, tmp_path: Path
) -> None:
    runtime: AppRuntime = console_app.state.loopwright
    app, _ = await memory_app(db, tmp_path, "c", ["Noted."])
    for i in range(3):
        await ask(http, app, "alice", f"fact number {i}")
    await db.writer.flush()
    async with db.transaction() as s:  # as if the process died before writing them
        await s.execute(delete(MemoryObservation))
    assert await memory.catch_up(db, runtime.lookup) == 3
    assert await memory.catch_up(db, runtime.lookup) == 0  # nothing twice
    async with db.sessionmaker() as s:
        assert await s.scalar(select(func.count()).select_from(MemoryObservation)) == 3


async def test_deleting_an_end_user_deletes_their_memory(db: Database, tmp_path: Path) -> None:
    app, _ = await memory_app(db, tmp_path, "d", ["Hi."])
    async with db.transaction() as s:
        user = await repo.get_or_create_end_user(s, app.id, "carol")
        await store.set_block(s, app.id, user.id, "Likes tea.")
        s.add(MemoryObservation(**store.new_observation(app.id, user.id, "c1", "m1", "User: tea")))
    async with db.transaction() as s:
        await s.execute(delete(EndUser).where(EndUser.id == user.id))
    async with db.sessionmaker() as s:
        assert (await s.execute(select(MemoryBlock))).first() is None
        assert (await s.execute(select(MemoryObservation))).first() is None


def test_recall_ranks_by_relevance_within_its_budget() -> None:
    texts = ["User: I like jazz", "User: my bike is red", "User: the weather is fine"]
    block = memory.recalled_prompt("", texts, "what colour is my bike", budget=400)
    assert block is not None and "bike is red" in block and "jazz" not in block
    assert memory.recalled_prompt("", texts, "what colour is my bike", budget=5) is None
    assert memory.recalled_prompt("", texts, "unrelated words entirely", budget=400) is None
