"""The ``id: N`` line of a stream's frames (``sse_event_ids``): Dify sends none and hand-written Dify
parsers fail on one, so a stream carries it only for a client that can re-attach with it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from loopwright.config import ConfigError, Settings, load_settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from tests.server.conftest import NewApp
from tests.sse import ACCEPT_SSE, numbered

BODY = {"query": "Add.", "user": "alice", "response_mode": "streaming", "inputs": {}}
REPLIES = [{"text": "Adding.", "tool_calls": [["calculator", {"expression": "2+3"}]]}, "It is 5."]


def hand_written_parse(body: str) -> list[dict[str, object]]:
    """How a hand-written Dify client reads a stream: every non-empty line is ``data:`` and JSON
    (the text after ``data:``), as Dify's API docs promise; anything else raises."""
    events = []
    for line in body.splitlines():
        if line.strip() and line != "event: ping":
            events.append(json.loads(line.split("data:", 1)[-1]))
    return events


@asynccontextmanager
async def client_for(db: Database, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    server = create_app(db, settings, ping_interval=0.05)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=server), base_url="http://t") as c:
        yield c
    await server.state.loopwright.settled()


async def test_a_dify_client_gets_dify_frames_and_an_sse_reader_gets_numbers(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(REPLIES * 2)
    plain = await client.post("/v1/chat-messages", json=BODY, headers=app.headers)
    assert "id: " not in plain.text
    events = hand_written_parse(plain.text)
    assert events[-1]["event"] == "message_end" and any(e["event"] == "agent_message" for e in events)
    # a client that says it reads SSE can re-attach: every frame numbered from 1
    sse = await client.post("/v1/chat-messages", json=BODY, headers=app.sse_headers)
    seqs = [s for s, _ in numbered(sse.text) if s is not None]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) == len(events)
    # the re-attach route numbers its frames, whatever the first request asked for
    task_id = events[0]["task_id"]
    await server_app.state.loopwright.journal.settled()
    replay = await client.get(f"/v1/chat-messages/{task_id}/events?user=alice", headers=app.headers)
    assert [e for _, e in numbered(replay.text)] == events
    assert all(s is not None for s, _ in numbered(replay.text))


@pytest.mark.parametrize(
    ("settings", "accept", "numbered_frames"),
    [
        (Settings(sse_event_ids="always"), {}, True),
        (Settings(sse_event_ids="never"), ACCEPT_SSE, False),
        (Settings(resumable_streams=False), ACCEPT_SSE, False),  # nothing to re-attach to
    ],
)
async def test_the_setting_decides(
    db: Database, new_app: NewApp, settings: Settings, accept: dict[str, str], numbered_frames: bool
) -> None:
    app = await new_app(REPLIES)
    async with client_for(db, settings) as client:
        r = await client.post("/v1/chat-messages", json=BODY, headers={**app.headers, **accept})
        assert r.status_code == 200
        assert ("id: " in r.text) is numbered_frames
        assert numbered(r.text)[-1][1]["event"] == "message_end"


def test_the_setting_comes_from_the_environment_and_is_checked(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    assert load_settings(env={}, path=empty).sse_event_ids == "auto"
    assert load_settings(env={"LOOPWRIGHT_SSE_EVENT_IDS": "never"}, path=empty).sse_event_ids == "never"
    with pytest.raises(ConfigError, match="LOOPWRIGHT_SSE_EVENT_IDS.*auto"):
        load_settings(env={"LOOPWRIGHT_SSE_EVENT_IDS": "sometimes"}, path=empty)
