"""A durable run's recorded steps carry its events: a worker killed after a step was recorded but
before the journal stored that step's events loses none of them. Two real ``loopwright serve``
workers on PostgreSQL (``LOOPWRIGHT_TEST_POSTGRES_URL``); the journal's writes are held back by a
lock on ``run_events`` taken by the test (a gate: the inserts wait, DBOS's step records do not), the
worker is killed while a tool call hangs, and the other worker, taking the run up, stores the
carried events the journal lacks before it goes on. The client re-attaches and gets every event
once, in order, numbered on from the last stored one."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, make_url, text

from tests.reliability.gated_tools import GatedToolServer, Operation, serving
from tests.reliability.reattach import reattach
from tests.reliability.test_durable_takeover import _reset, _stored_seq, _wait_for, stream_until_cut
from tests.reliability.test_kill import EXE, free_port, serve

pytest.importorskip("dbos")
pytestmark = pytest.mark.timeout(240)

URL_ENV = "LOOPWRIGHT_TEST_POSTGRES_URL"
FEATURES = ["tool-call", "multi-tool-call", "stream-tool-call"]
REPLIES = [
    {"text": "Checking first.", "tool_calls": [["first", {}, "call_first"]]},
    {"text": "Now the second.", "tool_calls": [["second", {}, "call_second"]]},
]
ANSWER = "Both are done."


def gated_tools() -> GatedToolServer:
    """``GET /first`` and ``GET /second`` (idempotent), each hanging until its own gate is set."""
    operations = {name: Operation("get", {"tool": name, "done": True}) for name in ("first", "second")}
    return GatedToolServer("gated", operations, gated=operations)


@contextmanager
def journal_held(url: str) -> Iterator[Any]:
    """Hold the journal's inserts (``run_events``) until ``release()`` (reads go on)."""
    engine = create_engine(make_url(url).set(drivername="postgresql+psycopg"))
    conn = engine.connect()
    try:
        conn.execute(text("LOCK TABLE run_events IN EXCLUSIVE MODE"))
        yield conn
    finally:
        conn.rollback()
        conn.close()
        engine.dispose()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    url = os.environ.get(URL_ENV)
    if not url:
        if os.environ.get("CI"):
            pytest.fail(f"{URL_ENV} is not set; under CI the PostgreSQL tests must run", pytrace=False)
        pytest.skip(f"{URL_ENV} is not set: no PostgreSQL server (`bash scripts/ci-postgres` prints a URL)")
    schema = f"dbos_carry_{uuid.uuid4().hex[:10]}"
    asyncio.run(_reset(url, schema))
    environ = {k: v for k, v in os.environ.items() if k != "LOOPWRIGHT_DB"}
    environ |= {"LOOPWRIGHT_EXECUTOR": "durable", "DATABASE_URL": url, "LOOPWRIGHT_DBOS_SCHEMA": schema}
    yield environ
    asyncio.run(_reset(url, schema, drop_only=True))


def _started(event: dict[str, Any], tool: str) -> bool:
    return event["event"] == "agent_thought" and event.get("tool") == tool and not event.get("observation")


def test_events_recorded_with_a_step_but_not_stored_are_stored_by_the_worker_taking_the_run_up(
    env: dict[str, str], tmp_path: Path
) -> None:
    url = env["DATABASE_URL"]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": REPLIES, "features": FEATURES, "chunk_size": 4}))

    def cli(*args: str) -> str:
        done = subprocess.run([str(EXE), *args], env=env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    with serving(gated_tools()) as tools:
        spec = tmp_path / "tools.json"
        spec.write_text(json.dumps(tools.spec()))
        toolset = {"type": "openapi", "spec": str(spec), "allow_hosts": ["127.0.0.1"]}
        app_yaml = tmp_path / "app.yaml"
        app_yaml.write_text(
            json.dumps({"name": "carry", "model": f"scripted:{script}", "toolsets": [toolset]})
        )
        app_id = cli("app", "create", "carry", "--from-yaml", str(app_yaml))
        headers = {"Authorization": f"Bearer {cli('key', 'create', '--app', app_id)}"}
        port_a, port_b = free_port(), free_port()
        body = {"query": "First, then second.", "user": "alice", "response_mode": "streaming", "inputs": {}}
        with serve(env, port_b, headers), serve(env, port_a, headers) as worker_a:
            with stream_until_cut(f"http://127.0.0.1:{port_a}/v1/chat-messages", body, headers) as seen:
                # Round 1's call hangs; what the client saw so far is stored. Then the journal is held.
                assert tools.entered["first"].wait(60)
                _wait_for(lambda: any(_started(e, "first") for _, e in seen), "the first call shown")
                task_id = seen[0][1]["task_id"]
                _wait_for(lambda: asyncio.run(_stored_seq(url, task_id)) >= seen[-1][0], "the journal")
                stored_before = seen[-1][0]
                with journal_held(url):
                    # Round 1's call ends and round 2's reply streams: its steps are recorded (before
                    # round 2's model call; after its reply asked for the second tool), its events not.
                    tools.gates["first"].set()
                    assert tools.entered["second"].wait(60)
                    _wait_for(lambda: any(_started(e, "second") for _, e in seen), "the second call shown")
                    script.write_text(json.dumps({"replies": [ANSWER], "features": FEATURES}))
                    worker_a.send_signal(signal.SIGKILL)
                    worker_a.wait(timeout=30)
            # the journal stored none of the events after the lock (the killed worker's write is gone)
            assert asyncio.run(_stored_seq(url, task_id)) == stored_before
            tools.gates["second"].set()

            # The last event the client saw that the recorded steps carried: the one before the second
            # call's start (that start came after the last recorded step, so it belongs to the cut step).
            last_carried = next(s for s, e in seen if _started(e, "second")) - 1
            assert last_carried > stored_before
            back = reattach(
                f"http://127.0.0.1:{port_b}", headers, task_id, seen[0][1]["conversation_id"], last_carried
            )

    tail, replayed = back.tail, back.replayed
    # the re-attached client gets the rest once, in order, to the end
    assert [s for s, _ in tail] == list(range(last_carried + 1, last_carried + 1 + len(tail)))
    assert tail[-1][1]["event"] == "message_end" and all(e["event"] != "error" for _, e in tail)
    # the whole stream: every event once, in order; what the client saw up to the last recorded step
    # (the events the journal never stored among them) is its beginning
    assert [s for s, _ in replayed] == list(range(1, len(replayed) + 1))
    assert replayed[:last_carried] == seen[:last_carried] and replayed[last_carried:] == tail
    text_shown = "".join(e["answer"] for _, e in replayed if e["event"] == "agent_message")
    assert text_shown == "Checking first." + "Now the second." + ANSWER
    assert sum(_started(e, "second") for _, e in replayed) == 1
    # the first call finished before the kill and was not run again; the second, cut, was
    assert tools.counts == {"first": 1, "second": 2}
    [message] = back.history
    # the saved answer is every round's text, joined, as Dify saves a function-calling run's
    assert (message["status"], message["answer"]) == ("normal", "Checking first.\nNow the second.\n" + ANSWER)
