"""A real ``loopwright serve`` killed with SIGKILL mid-answer, then started again: the message is not
left as a normal message with an empty answer — it is marked interrupted, with the round it finished,
and keeps what its stream's journal stored: the answer and thoughts a re-attach replays."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from loopwright.store.db import Database
from tests.sse import ACCEPT_SSE, numbered

EXE = Path(sys.executable).with_name("loopwright")
URL_ENV = "LOOPWRIGHT_TEST_POSTGRES_URL"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(env: dict[str, str], port: int, headers: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """``loopwright serve`` on ``port``, once it answers; killed (SIGKILL) at the end if still running."""
    server = subprocess.Popen(
        [str(EXE), "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(1200):  # up to a minute: an event gate on the server's own answer, not a timing
            try:
                if (
                    httpx.get(f"http://127.0.0.1:{port}/v1/info", headers=headers, timeout=5).status_code
                    == 200
                ):
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None:
                raise AssertionError("loopwright serve exited before it answered")
            time.sleep(0.05)
        yield server
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(timeout=30)


def shown(events: Iterable[dict[str, Any]]) -> str:
    """The answer a Dify client shows after ``events``: the ``agent_message`` texts one after the other,
    a ``message_replace`` starting again from its answer."""
    answer = ""
    for event in events:
        if event["event"] in ("agent_message", "message"):
            answer += event["answer"]
        elif event["event"] == "message_replace":
            answer = event["answer"]
    return answer


def assert_saved_from_stream(message: dict[str, Any], replayed: list[dict[str, Any]]) -> None:
    """``message`` (as ``GET /v1/messages`` shows it) keeps what the stream a re-attach replays
    (``replayed``) showed: exactly its answer, and every thought it announced, under the same id and
    position, at least as far on as last announced (a round's row stored just before the kill may be
    further on than the journal's last event of it: the journal writes behind, up to its interval)."""
    assert message["answer"] == shown(replayed)
    announced = {e["id"]: e for e in replayed if e["event"] == "agent_thought"}
    rows = {t["id"]: t for t in message["agent_thoughts"]}
    assert set(announced) <= set(rows), (list(announced), list(rows))
    for thought_id, event in announced.items():
        row = rows[thought_id]
        assert row["position"] == event["position"]
        assert row["tool"].startswith(event["tool"]), (row, event)
        assert row["observation"] or not event["observation"], (row, event)


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The server's database settings: a SQLite file, or the test server's PostgreSQL (an empty
    ``public`` schema; skipped without one, as ``tests/store/test_postgres.py``)."""
    if request.param == "sqlite":
        return {"LOOPWRIGHT_DB": str(tmp_path / "kill.db")}
    url = os.environ.get(URL_ENV)
    if not url:
        if os.environ.get("CI"):
            pytest.fail(f"{URL_ENV} is not set; under CI the PostgreSQL tests must run", pytrace=False)
        pytest.skip(f"{URL_ENV} is not set: no PostgreSQL server (`bash scripts/ci-postgres` prints a URL)")
    asyncio.run(_empty_schema(url))
    return {"DATABASE_URL": url}


async def _empty_schema(url: str) -> None:
    database = Database(url)
    try:
        async with database.engine.begin() as conn:
            await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            await conn.execute(text("CREATE SCHEMA public"))
    finally:
        await database.close()


def test_a_message_cut_by_kill_9_is_marked_interrupted_after_a_restart(
    tmp_path: Path, database: dict[str, str]
) -> None:
    script = tmp_path / "script.json"
    long_answer = "counting " * 400  # ~180 s at one 4-character chunk per 0.1 s: it is cut long before
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {"tool_calls": [["calculator", {"expression": "2 + 3"}]], "text": "Let me add."},
                    long_answer,
                ],
                "features": ["tool-call", "stream-tool-call"],
                "chunk_size": 4,
                "delay": 0.1,
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if k not in ("LOOPWRIGHT_DB", "DATABASE_URL")} | database

    def cli(*args: str) -> str:
        return subprocess.run(
            [str(EXE), *args], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()

    app_id = cli("app", "create", "counter", "--model", f"scripted:{script}", "--tool", "calculator")
    headers = {"Authorization": f"Bearer {cli('key', 'create', '--app', app_id)}"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    body = {"query": "Add and count.", "user": "alice", "response_mode": "streaming", "inputs": {}}

    live: list[dict[str, Any]] = []  # the events the client got before the kill
    with serve(env, port, headers) as server:
        with httpx.stream(
            "POST", f"{base}/v1/chat-messages", json=body, headers={**headers, **ACCEPT_SSE}, timeout=30
        ) as r:
            answers = 0
            for line in r.iter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                live.append(event)
                conversation_id, task_id = event["conversation_id"], event["task_id"]
                # the tool round is over (its thought stored) and the answer is streaming: kill now
                answers += event["event"] == "agent_message" and event.get("answer") == "coun"
                if answers >= 2:
                    os.kill(server.pid, signal.SIGKILL)
                    break
        server.wait(timeout=30)

    with serve(env, port, headers):
        params = {"user": "alice", "conversation_id": conversation_id}
        messages = httpx.get(f"{base}/v1/messages", params=params, headers=headers, timeout=30).json()["data"]
        events = f"{base}/v1/chat-messages/{task_id}/events"
        replay = httpx.get(events, params={"user": "alice"}, headers=headers, timeout=30)
    assert len(messages) == 1
    message = messages[0]
    assert message["status"] == "error"
    assert message["error"].startswith("interrupted:")
    thoughts = message["agent_thoughts"]
    assert thoughts and thoughts[0]["tool"] == "calculator" and thoughts[0]["observation"]
    # What the history keeps is what the journal stored — exactly the events a re-attach replays (then
    # the sweep's ``interrupted`` error) — which the client saw live, up to where either stopped: the
    # client may have read less than was stored, or been sent a few deltas the journal had not written
    # yet (its interval, 250 ms for a stream nobody follows).
    assert replay.status_code == 200, replay.text
    *stored, (_, last) = [(seq, e) for seq, e in numbered(replay.text) if seq is not None]
    assert last["event"] == "error" and last["message"].startswith("interrupted:")
    replayed = [e for _, e in stored]
    assert_saved_from_stream(message, replayed)
    answer, client = message["answer"], shown(live)
    assert answer.startswith("Let me add.") and "coun" in client  # the tool round's text, then the answer's
    assert client.startswith(answer) or answer.startswith(client), (answer, client)
    # the cut round is kept as announced: a row after the tool round's, without tools
    assert [t["position"] for t in thoughts] == [1, 2] and thoughts[1]["tool"] == ""
