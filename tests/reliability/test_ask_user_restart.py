"""A question the agent asked (``ask_user``), answered after a server restart: a real ``loopwright
serve`` pauses on the question, is killed (SIGKILL), and a new process on the same database serves the
question's form, takes the answer, and the re-attached stream carries the rest with the answer as the
call's observation."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import httpx

from tests.reliability.test_approvals_restart import _stream, server_env
from tests.reliability.test_human_input_restart import _events
from tests.reliability.test_kill import EXE, free_port, serve

__all__ = ["server_env"]  # the fixture: SQLite, and PostgreSQL when its URL is set

APP_YAML = """
name: planner
model: scripted:{script}
tools: [{{name: ask_user}}]
approval: {{timeout: 3600}}
"""
ASK = {"tool_calls": [["ask_user", {"question": "Which city?", "options": ["Lyon", "Paris"]}, "call_q"]]}
FEATURES = ["tool-call", "stream-tool-call"]


def test_a_question_asked_before_a_restart_is_answered_after(
    server_env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [ASK], "features": FEATURES}))
    app_file = tmp_path / "app.yaml"
    app_file.write_text(APP_YAML.format(script=script))

    def cli(*args: str) -> str:
        return subprocess.run(
            [str(EXE), *args], env=server_env, capture_output=True, text=True, check=True
        ).stdout.strip()

    app_id = cli("app", "create", "planner", "--from-yaml", str(app_file))
    headers = {"Authorization": f"Bearer {cli('key', 'create', '--app', app_id)}"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    body = {"query": "Plan my trip.", "user": "alice", "response_mode": "streaming", "inputs": {}}

    with serve(server_env, port, headers) as server:
        events = _stream(base, "/v1/chat-messages", body, headers)
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
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
