"""Admin API: a stored conversation recorded as an eval case (the console's "add to eval set"), which
then replays green with ``loopwright eval run --replay``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from loopwright.config import Settings
from loopwright.evals.runner import evaluate
from loopwright.evals.schema import parse_eval_set
from loopwright.server.app import create_app
from loopwright.store.db import Database

TOKEN = "console-secret-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
REPLIES = [
    {"text": "Adding.", "tool_calls": [["calculator", {"expression": "6*7"}]]},
    {"tool_calls": [["current_time", {}]]},
    "6 * 7 = 42, at this hour.",
]


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    """A migrated SQLite file, as a server's (the eval opens it again, as the CLI would)."""
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'app.db'}")
    await database.migrate()
    yield database
    await database.close()


@pytest.fixture
async def admin(db: Database) -> AsyncIterator[httpx.AsyncClient]:
    app: FastAPI = create_app(db, Settings(admin_token=TOKEN), ping_interval=0.05)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver", headers=ADMIN
    ) as c:
        yield c
    await app.state.loopwright.settled()


async def test_a_conversation_becomes_a_case_that_replays_green(
    admin: httpx.AsyncClient, db: Database, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": REPLIES, "features": ["tool-call"]}), encoding="utf-8")
    config = {"model": f"scripted:{script}", "tools": [{"name": "calculator"}, {"name": "current_time"}]}
    app_id = (await admin.post("/console/api/apps", json={"name": "Calc", "config": config})).json()["id"]
    key = (await admin.post(f"/console/api/apps/{app_id}/keys")).json()["token"]
    asked = await admin.post(
        "/v1/chat-messages",
        json={"query": "6*7 and the time?", "user": "alice", "inputs": {}, "response_mode": "blocking"},
        headers={"Authorization": f"Bearer {key}"},
    )
    conversation_id = asked.json()["conversation_id"]

    made = await admin.post(
        f"/console/api/apps/{app_id}/eval-cases", json={"conversation_id": conversation_id, "name": "sixes"}
    )
    assert made.status_code == 200, made.text
    case = made.json()["case"]
    assert case["name"] == "sixes" and case["turns"][0]["query"] == "6*7 and the time?"
    assert [t["name"] for t in case["turns"][0]["expect"]["trajectory"]["tools"]] == [
        "calculator",
        "current_time",
    ]

    out = tmp_path / "set.yaml"
    out.write_text(made.json()["yaml"], encoding="utf-8")
    script.unlink()
    report = await evaluate(
        parse_eval_set(out.read_text(encoding="utf-8")), app_id, replay=True, database_url=str(db.url)
    )
    assert report.ok and report.cases[0].turns[0].answer.endswith("6 * 7 = 42, at this hour.")


async def test_bad_requests_are_refused(admin: httpx.AsyncClient) -> None:
    config = {"model": "scripted:/nowhere.json", "tools": [{"name": "calculator"}]}
    app_id = (await admin.post("/console/api/apps", json={"name": "Calc", "config": config})).json()["id"]
    url = f"/console/api/apps/{app_id}/eval-cases"
    assert (await admin.post(url, json={"conversation_id": "nope"})).status_code == 404
    assert (await admin.post(url, json={"conversation_id": "x", "expect": "all"})).status_code == 400
    assert (
        await admin.post("/console/api/apps/nope/eval-cases", json={"conversation_id": "x"})
    ).status_code == 404
    assert (
        await admin.post(url, json={"conversation_id": "x"}, headers={"Authorization": ""})
    ).status_code == 401
