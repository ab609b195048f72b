"""A run paused for approval, decided with Dify's Human Input form after a server restart: a real
``loopwright serve`` pauses, is killed (SIGKILL), a new process on the same database serves the form,
takes its submission, and the re-attached stream carries the rest of the message."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.reliability.test_approvals_restart import (
    APP_YAML,
    CALL,
    FEATURES,
    killed_at_a_form,
    server_env,
)
from tests.reliability.test_kill import serve

__all__ = ["server_env"]  # the fixture: SQLite, and PostgreSQL when its URL is set


def test_a_form_decides_a_run_paused_before_a_restart(server_env: dict[str, str], tmp_path: Path) -> None:
    paused = killed_at_a_form(server_env, tmp_path, APP_YAML, "payments", CALL, "What is 6*7?")
    paused.script.write_text(json.dumps({"replies": ["It is 42."], "features": FEATURES}))
    approve = {"inputs": {}, "action": "approve", "user": "alice"}
    with serve(server_env, paused.port, paused.headers):
        form = httpx.get(paused.form_url(), headers=paused.headers, timeout=30)
        assert form.status_code == 200, form.text
        assert [a["id"] for a in form.json()["user_actions"]] == ["approve", "reject"]
        submitted = httpx.post(paused.form_url(), json=approve, headers=paused.headers, timeout=30)
        assert submitted.status_code == 200 and submitted.json() == {}
        rest = paused.rest()
        again = httpx.post(paused.form_url(), json=approve, headers=paused.headers, timeout=30)
    assert rest[0]["event"] == "human_input_form_filled", [(e["event"], e.get("message")) for e in rest]
    assert rest[-1]["event"] == "message_end"
    observed = [e for e in rest if e["event"] == "agent_thought" and e["observation"]]
    assert json.loads(observed[0]["observation"]) == {"calculator": "42"}
    assert again.status_code == 412  # a form is used once
