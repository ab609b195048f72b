"""A question the agent asked (``ask_user``), answered after a server restart: a real ``loopwright
serve`` pauses on the question, is killed (SIGKILL), and a new process on the same database serves the
question's form, takes the answer, and the re-attached stream carries the rest with the answer as the
call's observation."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx

from tests.reliability.test_approvals_restart import (
    FEATURES,
    _events,
    paused_then_stopped,
    scripted_app,
    server_env,
)
from tests.reliability.test_kill import free_port, serve

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
    script, headers = scripted_app(server_env, tmp_path, APP_YAML, "planner", ASK)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    events = paused_then_stopped(server_env, port, headers, "Plan my trip.", signal.SIGKILL)
    (required,) = [e for e in events if e["event"] == "human_input_required"]
    token, task_id = required["data"]["form_token"], required["task_id"]

    script.write_text(json.dumps({"replies": ["From Paris, then."], "features": FEATURES}))
    with serve(server_env, port, headers):
        form = httpx.get(f"{base}/v1/form/human_input/{token}", headers=headers, timeout=30)
        assert form.status_code == 200, form.text
        assert [a["id"] for a in form.json()["user_actions"]] == ["submit"]
        assert form.json()["inputs"][0]["options"] == ["Lyon", "Paris"]
        answer = {"inputs": {"answer": "Paris"}, "action": "submit", "user": "alice"}
        submitted = httpx.post(
            f"{base}/v1/form/human_input/{token}", json=answer, headers=headers, timeout=30
        )
        assert submitted.status_code == 200, submitted.text
        params = {"user": "alice"}
        url = f"{base}/v1/workflow/{task_id}/events"
        rest = _events(httpx.get(url, params=params, headers=headers, timeout=60).text)
    assert rest[0]["event"] == "human_input_form_filled", [(e["event"], e.get("message")) for e in rest]
    assert rest[0]["data"]["action_id"] == "submit"
    assert rest[-1]["event"] == "message_end"
    observed = [e for e in rest if e["event"] == "agent_thought" and e["observation"]]
    assert json.loads(observed[0]["observation"]) == {"ask_user": "Paris"}
