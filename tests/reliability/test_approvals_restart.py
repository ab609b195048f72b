"""A run paused for approval survives a server restart: a real ``loopwright serve`` pauses before a
tool call, is stopped (SIGTERM, then SIGKILL for the second case), a new server process starts on the
same database, and the decision posted to it resumes the run to its answer. On SQLite and on
PostgreSQL (``LOOPWRIGHT_TEST_POSTGRES_URL``)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from loopwright.store.db import Database
from tests.reliability.test_kill import EXE, free_port, serve

URL_ENV = "LOOPWRIGHT_TEST_POSTGRES_URL"
APP_YAML = """
name: payments
model: scripted:{script}
tools: [{{name: calculator}}]
approval: {{tools: [calculator], timeout: 3600}}
"""
CALL = {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "6*7"}, "call_x"]]}


def _postgres_url() -> str:
    url = os.environ.get(URL_ENV)
    if url:
        return url
    if os.environ.get("CI"):
        pytest.fail(f"{URL_ENV} is not set; under CI the PostgreSQL tests must run", pytrace=False)
    pytest.skip(f"{URL_ENV} is not set: no PostgreSQL server (`bash scripts/ci-postgres` prints a URL)")


async def _reset(url: str) -> None:
    database = Database(url)
    try:
        async with database.engine.begin() as conn:
            await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            await conn.execute(text("CREATE SCHEMA public"))
    finally:
        await database.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def server_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "LOOPWRIGHT_DB")}
    if request.param == "sqlite":
        env["LOOPWRIGHT_DB"] = str(tmp_path / "approvals.db")
    else:
        url = _postgres_url()
        asyncio.run(_reset(url))
        env["DATABASE_URL"] = url
    return env


def _events(text: str) -> list[dict[str, Any]]:
    """The data of each SSE frame of a whole stream's text."""
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def _stream(base: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> list[dict[str, Any]]:
    r = httpx.post(f"{base}{path}", json=body, headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    return _events(r.text)


FEATURES = ["tool-call", "stream-tool-call"]


def scripted_app(
    server_env: dict[str, str], tmp_path: Path, app_yaml: str, name: str, first: dict[str, Any]
) -> tuple[Path, dict[str, str]]:
    """An app made by the CLI from ``app_yaml`` whose scripted model first replies ``first``: its
    script file (rewritten for the next process) and its key's headers."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [first], "features": FEATURES}))
    app_file = tmp_path / "app.yaml"
    app_file.write_text(app_yaml.format(script=script))

    def cli(*args: str) -> str:
        return subprocess.run(
            [str(EXE), *args], env=server_env, capture_output=True, text=True, check=True
        ).stdout.strip()

    app_id = cli("app", "create", name, "--from-yaml", str(app_file))
    return script, {"Authorization": f"Bearer {cli('key', 'create', '--app', app_id)}"}


def paused_then_stopped(
    server_env: dict[str, str], port: int, headers: dict[str, str], query: str, stop: signal.Signals
) -> list[dict[str, Any]]:
    """The events of a streamed message that pauses, after which its server is stopped with ``stop``."""
    body = {"query": query, "user": "alice", "response_mode": "streaming", "inputs": {}}
    with serve(server_env, port, headers) as server:
        events = _stream(f"http://127.0.0.1:{port}", "/v1/chat-messages", body, headers)
        server.send_signal(stop)
        server.wait(timeout=30)
    return events


@dataclass
class KilledAtAForm:
    """A message paused on Dify's Human Input form whose server was killed (SIGKILL): what the next
    process on the same database is asked about."""

    script: Path  # the scripted model's replies, rewritten for the next process
    headers: dict[str, str]
    port: int
    token: str  # the form's
    task_id: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def form_url(self) -> str:
        return f"{self.base}/v1/form/human_input/{self.token}"

    def rest(self) -> list[dict[str, Any]]:
        """The message's events from the re-attached stream (``GET /v1/workflow/{task_id}/events``)."""
        url = f"{self.base}/v1/workflow/{self.task_id}/events"
        return _events(httpx.get(url, params={"user": "alice"}, headers=self.headers, timeout=60).text)


def killed_at_a_form(
    server_env: dict[str, str], tmp_path: Path, app_yaml: str, name: str, first: dict[str, Any], query: str
) -> KilledAtAForm:
    """``query`` to a new app (``scripted_app``) streamed until it pauses on a form, then SIGKILL."""
    script, headers = scripted_app(server_env, tmp_path, app_yaml, name, first)
    port = free_port()
    events = paused_then_stopped(server_env, port, headers, query, signal.SIGKILL)
    (required,) = [e for e in events if e["event"] == "human_input_required"]
    return KilledAtAForm(script, headers, port, required["data"]["form_token"], required["task_id"])


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_paused_run_resumes_after_a_server_restart(
    server_env: dict[str, str], tmp_path: Path, stop: signal.Signals
) -> None:
    script, headers = scripted_app(server_env, tmp_path, APP_YAML, "payments", CALL)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    events = paused_then_stopped(server_env, port, headers, "What is 6*7?", stop)
    (waiting,) = [e for e in events if e["event"] == "tool_approval_required"]
    assert events[-1]["event"] == "workflow_paused"  # Dify 1.13's pause follows (app.run.human_input)
    assert waiting["tool_calls"][0]["id"] == "call_x"

    # The new process's model goes on with the rest of the script (a scripted model starts over).
    script.write_text(json.dumps({"replies": ["It is 42."], "features": FEATURES}))
    decision = {"user": "alice", "decisions": [{"call_id": "call_x", "action": "approve"}]}
    with serve(server_env, port, headers):
        rest = _stream(base, f"/v1/chat-messages/{waiting['task_id']}/approvals", decision, headers)
        params = {"user": "alice", "conversation_id": waiting["conversation_id"]}
        listed = httpx.get(f"{base}/v1/messages", params=params, headers=headers, timeout=30).json()["data"]
    assert rest[-1]["event"] == "message_end"
    assert {e["message_id"] for e in rest} == {waiting["message_id"]}
    observed = [e for e in rest if e["event"] == "agent_thought" and e["observation"]]
    assert json.loads(observed[0]["observation"]) == {"calculator": "42"}
    (message,) = listed
    # the answer is what was streamed, the paused round's text included
    assert message["status"] == "normal" and message["answer"] == "Let me compute.\nIt is 42."
    assert json.loads(message["agent_thoughts"][0]["observation"]) == {"calculator": "42"}
