"""A question the agent asked (``ask_user``), answered after a server restart: a real ``loopwright
serve`` pauses on the question, is killed (SIGKILL), and a new process on the same database serves the
question's form, takes the answer, and the re-attached stream carries the rest with the answer as the
call's observation."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.reliability.test_approvals_restart import (
    FEATURES,
    killed_at_a_form,
    server_env,
)
from tests.reliability.test_kill import serve

__all__ = ["server_env"]  # the fixture: SQLite, and PostgreSQL when its URL is set

APP_YAML = """
name: planner
model: scripted:{script}
tools: [{{name: ask_user}}]
approval: {{timeout: 3600}}
"""
ASK = {"tool_calls": [["ask_user", {"question": "Which city?", "options": ["Lyon", "Paris"]}, "call_q"]]}


def test_a_question_asked_before_a_restart_is_answered_after(
    server_env: dict[str, str], tmp_path: Path
) -> None:
    paused = killed_at_a_form(server_env, tmp_path, APP_YAML, "planner", ASK, "Plan my trip.")
    paused.script.write_text(json.dumps({"replies": ["From Paris, then."], "features": FEATURES}))
    with serve(server_env, paused.port, paused.headers):
        form = httpx.get(paused.form_url(), headers=paused.headers, timeout=30)
        assert form.status_code == 200, form.text
        assert [a["id"] for a in form.json()["user_actions"]] == ["submit"]
        assert form.json()["inputs"][0]["options"] == ["Lyon", "Paris"]
        answer = {"inputs": {"answer": "Paris"}, "action": "submit", "user": "alice"}
        submitted = httpx.post(paused.form_url(), json=answer, headers=paused.headers, timeout=30)
        assert submitted.status_code == 200, submitted.text
        rest = paused.rest()
    assert rest[0]["event"] == "human_input_form_filled", [(e["event"], e.get("message")) for e in rest]
    assert rest[0]["data"]["action_id"] == "submit"
    assert rest[-1]["event"] == "message_end"
    observed = [e for e in rest if e["event"] == "agent_thought" and e["observation"]]
    assert json.loads(observed[0]["observation"]) == {"ask_user": "Paris"}
