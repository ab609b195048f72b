"""A run paused for approval, decided with Dify's Human Input form after a server restart: a real
``loopwright serve`` pauses, is killed (SIGKILL), a new process on the same database serves the form,
takes its submission, and the re-attached stream carries the rest of the message."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx

from tests.reliability.test_approvals_restart import (
    APP_YAML,
    CALL,
    FEATURES,
    _events,
    paused_then_stopped,
    scripted_app,
    server_env,
)
from tests.reliability.test_kill import free_port, serve

__all__ = ["server_env"]  # the fixture: SQLite, and PostgreSQL when its URL is set


def test_a_form_decides_a_run_paused_before_a_restart(server_env: dict[str, str], tmp_path: Path) -> None:
    script, headers = scripted_app(server_env, tmp_path, APP_YAML, "payments", CALL)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    events = paused_then_stopped(server_env, port, headers, "What is 6*7?", signal.SIGKILL)
    (required,) = [e for e in events if e["event"] == "human_input_required"]
    token, task_id = required["data"]["form_token"], required["task_id"]

    script.write_text(json.dumps({"replies": ["It is 42."], "features": FEATURES}))
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
