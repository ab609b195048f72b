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


def _stream(base: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> list[dict[str, Any]]:
    r = httpx.post(f"{base}{path}", json=body, headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    return [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_paused_run_resumes_after_a_server_restart(
    server_env: dict[str, str], tmp_path: Path, stop: signal.Signals
) -> None:
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
        server.send_signal(stop)
        server.wait(timeout=30)
    (waiting,) = [e for e in events if e["event"] == "tool_approval_required"]
    assert events[-1]["event"] == "workflow_paused"  # Dify 1.13's pause follows (app.run.human_input)
    assert waiting["tool_calls"][0]["id"] == "call_x"

    # The new process's model goes on with the rest of the script (a scripted model starts over).
    script.write_text(json.dumps({"replies": ["It is 42."], "features": ["tool-call", "stream-tool-call"]}))
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
