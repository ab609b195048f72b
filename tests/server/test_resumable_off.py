"""``LOOPWRIGHT_RESUMABLE_STREAMS=false``: streams are served as ever, nothing is journaled, and a
re-attach is answered 404 saying why."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy import func, select

from loopwright.config import Settings, load_settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from loopwright.store.models import RunEvent, RunStream
from tests.live_server import serving
from tests.server.conftest import NewApp
from tests.sse import numbered

BODY = {"query": "Hi.", "user": "alice", "response_mode": "streaming", "inputs": {}}


def test_the_setting_comes_from_the_environment(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    assert load_settings(env={}, path=empty).resumable_streams is True
    off = load_settings(env={"LOOPWRIGHT_RESUMABLE_STREAMS": "false"}, path=empty)
    assert off.resumable_streams is False
    toml = tmp_path / "loopwright.toml"
    toml.write_text("resumable_streams = false\n", encoding="utf-8")
    assert load_settings(env={}, path=toml).resumable_streams is False


async def test_with_resumable_streams_off_streams_work_and_a_reattach_is_refused(
    new_app: NewApp, db: Database
) -> None:
    app = await new_app(["Hello there.", "Again."], delay=0.01)
    server = create_app(db, Settings(resumable_streams=False), ping_interval=0.05)
    async with serving(server) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        first = await client.post("/v1/chat-messages", json=BODY, headers=app.headers)
        events = [e for _, e in numbered(first.text)]
        assert events[-1]["event"] == "message_end"
        answer = "".join(e["answer"] for e in events if e["event"] == "agent_message")
        assert answer == "Hello there."
        task_id, conversation_id = events[0]["task_id"], events[0]["conversation_id"]
        again = await client.get(
            f"/v1/chat-messages/{task_id}/events?user=alice", headers={**app.headers, "Last-Event-ID": "2"}
        )
        assert again.status_code == 404
        assert again.json()["code"] == "not_found"
        assert "LOOPWRIGHT_RESUMABLE_STREAMS=false" in again.json()["message"]
        # the rest goes on as ever: the next turn, the history, a stop
        body = {**BODY, "conversation_id": conversation_id}
        second = await client.post("/v1/chat-messages", json=body, headers=app.headers)
        last = [e for _, e in numbered(second.text)][-1]
        assert last["event"] == "message_end", last
        params = {"user": "alice", "conversation_id": conversation_id}
        history = (await client.get("/v1/messages", params=params, headers=app.headers)).json()
        assert [m["answer"] for m in history["data"]] == ["Hello there.", "Again."]
        stop = await client.post(
            f"/v1/chat-messages/{task_id}/stop", json={"user": "alice"}, headers=app.headers
        )
        assert stop.json() == {"result": "success"}
        await server.state.loopwright.journal.settled()
    async with db.sessionmaker() as s:
        assert await s.scalar(select(func.count()).select_from(RunStream)) == 0
        assert await s.scalar(select(func.count()).select_from(RunEvent)) == 0


async def test_with_resumable_streams_off_a_retried_idempotent_request_is_refused_without_a_second_run(
    new_app: NewApp, db: Database
) -> None:
    app = await new_app(["Hello once.", "Hello twice."], delay=0.01)
    server = create_app(db, Settings(resumable_streams=False), ping_interval=0.05)
    headers = {**app.headers, "Idempotency-Key": "order-7"}
    async with serving(server) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        first = await client.post("/v1/chat-messages", json=BODY, headers=headers)
        answer = "".join(e["answer"] for _, e in numbered(first.text) if e["event"] == "agent_message")
        assert answer == "Hello once."
        again = await client.post("/v1/chat-messages", json=BODY, headers=headers)
        assert again.status_code == 409 and again.json()["code"] == "conflict"
        await server.state.loopwright.journal.settled()
    async with db.sessionmaker() as s:  # the key's row, and no events kept
        assert await s.scalar(select(func.count()).select_from(RunStream)) == 1
        assert await s.scalar(select(func.count()).select_from(RunEvent)) == 0
