"""A run paused for approval, decided with Dify's Human Input form after a server restart: a real
``loopwright serve`` pauses, is killed (SIGKILL), a new process on the same database serves the form,
takes its submission, and the re-attached stream carries the rest of the message."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx

from tests.reliability.test_approvals_restart import APP_YAML, CALL, _stream, server_env
from tests.reliability.test_kill import EXE, free_port, serve

__all__ = ["server_env"]  # the fixture: SQLite, and PostgreSQL when its URL is set


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def test_a_form_decides_a_run_paused_before_a_restart(server_env: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [CALL], "features": ["tool-call", "stream-tool-call"]}))
    app_file = tmp_path / "app.yaml"
    app_file.write_text(APP_YAML.format(script=script))

    def cli(*args: str) -> str:
        return subprocess.run(
            [str(EXE), *args], env=server_env, capture_output=True, text=True, check=True
        ).stdout.strip()

    app_id = cli("app", "create", "payments", "--from-yaml", str(app_file))
    headers = {"Authorization": f"Bearer {cli('key', 'create', '--app', app_id)}"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    body = {"query": "What is 6*7?", "user": "alice", "response_mode": "streaming", "inputs": {}}

    with serve(server_env, port, headers) as server:
        events = _stream(base, "/v1/chat-messages", body, headers)
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
    (required,) = [e for e in events if e["event"] == "human_input_required"]
    token, task_id = required["data"]["form_token"], required["task_id"]

    script.write_text(json.dumps({"replies": ["It is 42."], "features": ["tool-call", "stream-tool-call"]}))
    with serve(server_env, port, headers):
        form = httpx.get(f"{base}/v1/form/human_input/{token}", headers=headers, timeout=30)
        assert form.status_code == 200, form.text
        assert [a["id"] for a in form.json()["user_actions"]] == ["approve", "reject"]
        submitted = httpx.post(
            f"{base}/v1/form/human_input/{token}",
            json={"inputs": {}, "action": "approve", "user": "alice"},
            headers=headers,
            timeout=30,
        )
        assert submitted.status_code == 200 and submitted.json() == {}
        params = {"user": "alice"}
        rest = _events(
            httpx.get(f"{base}/v1/workflow/{task_id}/events", params=params, headers=headers, timeout=60).text
        )
        again = httpx.post(
            f"{base}/v1/form/human_input/{token}",
            json={"inputs": {}, "action": "approve", "user": "alice"},
            headers=headers,
            timeout=30,
        )
    assert rest[0]["event"] == "human_input_form_filled", [(e["event"], e.get("message")) for e in rest]
    assert rest[-1]["event"] == "message_end"
    observed = [e for e in rest if e["event"] == "agent_thought" and e["observation"]]
    assert json.loads(observed[0]["observation"]) == {"calculator": "42"}
    assert again.status_code == 412  # a form is used once
