"""``loopwright log MESSAGE_ID``: the stored agent log as a tree, or as JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from loopwright.cli import app
from loopwright.store.db import Database
from loopwright.store.models import Message


@pytest.fixture
def db_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "loopwright.db"
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("LOOPWRIGHT_DB", str(path))
    return path


async def _message_ids(path: Path) -> list[str]:
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        async with db.transaction() as s:
            return list(await s.scalars(select(Message.id)))
    finally:
        await db.close()


def test_log_shows_a_stored_message_as_a_tree(db_path: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    replies = [
        {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "17*23"}]]},
        "It is 391.",
    ]
    script.write_text(json.dumps({"replies": replies, "features": ["tool-call", "stream-tool-call"]}))
    runner = CliRunner()
    made = runner.invoke(
        app, ["app", "create", "Calc", "--model", f"scripted:{script}", "--tool", "calculator"]
    )
    asked = runner.invoke(app, ["app", "ask", made.output.strip(), "What is 17 * 23?", "--user", "ann"])
    assert asked.exit_code == 0, asked.output
    (message_id,) = asyncio.run(_message_ids(db_path))

    shown = runner.invoke(app, ["log", message_id])
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    assert f"message {message_id}" in out and "2 iterations" in out and "executor ann" in out
    assert "iteration 1" in out and "Let me compute." in out
    assert "✓ calculator" in out and '{"expression": "17*23"}' in out and "output 391" in out
    assert "1 tool call (0 failed)" in out  # the stored run metrics

    as_json = runner.invoke(app, ["log", message_id, "--json"])
    data = json.loads(as_json.stdout)
    assert data["meta"]["iterations"] == 2 and data["meta"]["executor"] == "ann"
    assert data["iterations"][0]["tool_calls"][0]["tool_output"] == "391"


def test_log_of_an_unknown_message_is_a_usage_error(db_path: Path) -> None:
    result = CliRunner().invoke(app, ["log", "00000000-0000-0000-0000-000000000000"])
    assert result.exit_code == 2 and "Message Not Exists." in result.output
