"""The durable executor survives ``kill -9``: two real ``loopwright serve`` workers on PostgreSQL
(``LOOPWRIGHT_TEST_POSTGRES_URL``), the one running a message killed while two of its tool calls hang
on a gate; the other takes the run over at its next heartbeat and finishes it.

The tools are real HTTP endpoints on 127.0.0.1 (an OpenAPI toolset) that count their executions:
a GET that finished before the kill is never run again; a GET cut by the kill is run again (at least
once); a POST (not idempotent) cut by the kill is not, and the model is told its result is unknown.
The client re-attaches to the other worker with its Last-Event-ID and gets every event once, in
order, to ``message_end``; the same request sent again (its Idempotency-Key) starts nothing."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from loopwright.agent.durability import INTERRUPTED_OBSERVATION
from loopwright.store.db import Database
from tests.reliability.gated_tools import GatedToolServer, Operation, serving
from tests.reliability.reattach import reattach
from tests.reliability.test_kill import EXE, free_port, serve
from tests.sse import ACCEPT_SSE, numbered

pytest.importorskip("dbos")
pytestmark = pytest.mark.timeout(240)

URL_ENV = "LOOPWRIGHT_TEST_POSTGRES_URL"
FEATURES = ["tool-call", "multi-tool-call", "stream-tool-call"]
FIRST = {"text": "Looking it up.", "tool_calls": [["lookup", {}, "call_lookup"]]}
SECOND = {
    "text": "Now waiting and charging.",
    "tool_calls": [["wait", {}, "call_wait"], ["charge", {"amount": 5}, "call_charge"]],
}
ANSWER = "The value is 42; the charge may not have gone through."


def tool_server() -> GatedToolServer:
    """``GET /lookup`` answers at once; ``GET /wait`` and ``POST /charge`` hang until released."""
    amount = [{"name": "amount", "in": "query", "required": True, "schema": {"type": "integer"}}]
    operations = {
        "lookup": Operation("get", {"value": 42}),
        "wait": Operation("get", {"waited": True}),
        "charge": Operation("post", {"ok": True}, amount),
    }
    return GatedToolServer("counted", operations, gated=["wait", "charge"])


async def _reset(url: str, schema: str, *, drop_only: bool = False) -> None:
    database = Database(url)
    try:
        async with database.engine.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            if not drop_only:
                await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
                await conn.execute(text("CREATE SCHEMA public"))
    finally:
        await database.close()


async def _stored_seq(url: str, task_id: str) -> int:
    database = Database(url)
    try:
        async with database.engine.begin() as conn:
            found = await conn.scalar(
                text("SELECT max(last_seq) FROM run_events WHERE task_id = :t"), {"t": task_id}
            )
    finally:
        await database.close()
    return int(found or 0)


@pytest.fixture(params=["postgresql", "sqlite"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """Two workers' environment: PostgreSQL (a DBOS schema of the test's own), or SQLite files (the
    workers of one host)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("LOOPWRIGHT_DB",)}
    environ["LOOPWRIGHT_EXECUTOR"] = "durable"
    if request.param == "sqlite":
        environ["DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'durable.db'}"
        yield environ
        return
    url = os.environ.get(URL_ENV)
    if not url:
        if os.environ.get("CI"):
            pytest.fail(f"{URL_ENV} is not set; under CI the PostgreSQL tests must run", pytrace=False)
        pytest.skip(f"{URL_ENV} is not set: no PostgreSQL server (`bash scripts/ci-postgres` prints a URL)")
    schema = f"dbos_kill_{uuid.uuid4().hex[:10]}"
    asyncio.run(_reset(url, schema))
    environ |= {"DATABASE_URL": url, "LOOPWRIGHT_DBOS_SCHEMA": schema}
    yield environ
    asyncio.run(_reset(url, schema, drop_only=True))


def _read_until_both_calls_shown(
    response: httpx.Response, seen: list[tuple[int, dict[str, Any]]], done: threading.Event
) -> None:
    """The client: numbered events as they come, until the stream breaks (its worker is killed)."""
    buffer = ""
    try:
        for chunk in response.iter_text():
            buffer += chunk
            *frames, buffer = buffer.split("\n\n")
            seen.extend((s, e) for f in frames for s, e in numbered(f + "\n\n") if s is not None)
    except httpx.HTTPError:
        pass
    finally:
        done.set()


@contextmanager
def stream_until_cut(
    url: str, body: dict[str, Any], headers: dict[str, str]
) -> Iterator[list[tuple[int, dict[str, Any]]]]:
    """A streaming chat message posted to ``url``, its numbered events read in a thread into the list
    yielded; on leaving, the stream has broken (the test killed its worker) and is closed."""
    seen: list[tuple[int, dict[str, Any]]] = []
    broken = threading.Event()
    with httpx.Client(timeout=httpx.Timeout(10, read=None)) as client:
        response = client.send(
            client.build_request("POST", url, json=body, headers={**headers, **ACCEPT_SSE}), stream=True
        )
        try:
            assert response.status_code == 200
            reader = threading.Thread(target=_read_until_both_calls_shown, args=(response, seen, broken))
            reader.start()
            yield seen
            assert broken.wait(30)
            reader.join(30)
        finally:
            response.close()


def _shown(seen: list[tuple[int, dict[str, Any]]], tool: str) -> bool:
    return any(e["event"] == "agent_thought" and tool in e.get("tool", "") for _, e in seen)


def client_view(events: list[tuple[int, dict[str, Any]]]) -> str:
    """The answer a Dify client shows after these events: ``agent_message`` text appended, a
    ``message_replace`` putting its answer in place of what was shown."""
    shown = ""
    for _, event in events:
        if event["event"] == "agent_message":
            shown += event["answer"]
        elif event["event"] == "message_replace":
            shown = event["answer"]
    return shown


def _wait_for(condition: Any, what: str, timeout: float = 60.0) -> None:
    """Wait for a condition the system reports (an event gate polled), failing after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_a_killed_workers_durable_run_is_finished_by_another_worker(
    env: dict[str, str], tmp_path: Path
) -> None:
    url = env["DATABASE_URL"]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [FIRST, SECOND], "features": FEATURES, "chunk_size": 8}))

    def cli(*args: str) -> str:
        done = subprocess.run([str(EXE), *args], env=env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    with serving(tool_server()) as tools:
        spec = tmp_path / "tools.json"
        spec.write_text(json.dumps(tools.spec()))
        app_yaml = tmp_path / "app.yaml"
        toolset = {"type": "openapi", "spec": str(spec), "allow_hosts": ["127.0.0.1"]}
        app_yaml.write_text(
            json.dumps({"name": "durable", "model": f"scripted:{script}", "toolsets": [toolset]})
        )
        app_id = cli("app", "create", "durable", "--from-yaml", str(app_yaml))
        headers = {"Authorization": f"Bearer {cli('key', 'create', '--app', app_id)}"}
        port_a, port_b = free_port(), free_port()
        base_a, base_b = f"http://127.0.0.1:{port_a}", f"http://127.0.0.1:{port_b}"
        body = {
            "query": "Look it up, wait and charge.",
            "user": "alice",
            "response_mode": "streaming",
            "inputs": {},
        }
        retry_headers = {**headers, "Idempotency-Key": "order-7"}

        with serve(env, port_b, headers), serve(env, port_a, headers) as worker_a:
            with stream_until_cut(f"{base_a}/v1/chat-messages", body, retry_headers) as seen:
                # Round 1's lookup is done; round 2's two calls hang in the tool server.
                assert tools.entered["wait"].wait(60) and tools.entered["charge"].wait(60)
                _wait_for(lambda: _shown(seen, "charge"), "the client to see both calls")
                task_id = seen[0][1]["task_id"]
                last_seen = seen[-1][0]
                # what the client saw is stored (the journal writes every 50 ms)
                _wait_for(lambda: asyncio.run(_stored_seq(url, task_id)) >= last_seen, "the journal")
                # The other worker's model goes on with the rest of the script (a scripted model
                # starts over in a new process; a real provider has no such state).
                script.write_text(json.dumps({"replies": [ANSWER], "features": FEATURES, "chunk_size": 8}))
                worker_a.send_signal(signal.SIGKILL)
                worker_a.wait(timeout=30)
            tools.release()  # the cut calls' requests end; a call run again answers at once

            # Worker B sees A's lease go stale (or its process gone) at its next heartbeat and takes
            # the run over; the client re-attaches to B after the last event it saw.
            conversation_id = seen[0][1]["conversation_id"]
            back = reattach(base_b, headers, task_id, conversation_id, last_seen)
            tail, replayed = back.tail, back.replayed
            again = httpx.post(
                f"{base_b}/v1/chat-messages", json=body, headers={**retry_headers, **ACCEPT_SSE}, timeout=60
            )
            params = {"user": "alice", "conversation_id": conversation_id}
            history_after = httpx.get(
                f"{base_b}/v1/messages", params=params, headers=headers, timeout=30
            ).json()

    # the re-attached client gets the rest once, in order, to the end: no error
    assert [s for s, _ in tail] == list(range(last_seen + 1, last_seen + 1 + len(tail)))
    assert tail[-1][1]["event"] == "message_end"
    assert all(e["event"] != "error" for _, e in tail)
    assert "".join(e["answer"] for _, e in tail if e["event"] == "agent_message").endswith(ANSWER)
    # the whole stream: every event once, in order; what the client saw live is its beginning
    assert [s for s, _ in replayed] == list(range(1, len(replayed) + 1))
    assert replayed[: len(seen)] == seen and replayed[len(seen) :] == tail
    # the tool calls: the one that finished before the kill was not run again, the idempotent one
    # that was cut was run again, the non-idempotent one was not
    assert tools.counts == {"lookup": 1, "wait": 2, "charge": 1}
    [message] = back.history
    assert (
        message["status"] == "normal"
        and message["answer"] == f"Looking it up.\nNow waiting and charging.\n{ANSWER}"
        and message["error"] is None
    )
    observations = [json.loads(t["observation"]) for t in message["agent_thoughts"] if t["observation"]]
    assert observations[0] == {"lookup": json.dumps({"value": 42})} or "lookup" in observations[0]
    assert observations[1]["charge"] == INTERRUPTED_OBSERVATION
    assert "waited" in observations[1]["wait"]
    # the same request again (its Idempotency-Key): the first run's stream, no second run
    assert again.status_code == 200
    assert [(s, e) for s, e in numbered(again.text) if s is not None] == replayed
    assert len(history_after["data"]) == 1


def test_a_durable_run_waiting_for_approval_survives_kill_9(env: dict[str, str], tmp_path: Path) -> None:
    """The paused run's workflow has ended with it; its ``pending_approvals`` row is what survives, and
    the decision sent to a new worker resumes it (a workflow of its own) to its answer."""
    from tests.reliability.test_approvals_restart import test_a_paused_run_resumes_after_a_server_restart

    test_a_paused_run_resumes_after_a_server_restart(env, tmp_path, signal.SIGKILL)


def test_a_run_killed_mid_answer_is_answered_again_by_another_worker(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Killed while the model streams its answer: the other worker makes that model call again (at
    least once) and the message ends answered; the re-attached client gets every event once, in order,
    and a ``message_replace`` first, so that it shows the cut answer's text once (not the first
    attempt's partial text before the second attempt's)."""
    script = tmp_path / "script.json"
    long_answer = "counting " * 400  # 20 s at one chunk per 50 ms: it is cut long before its end
    replies = [{"text": "Adding.", "tool_calls": [["calculator", {"expression": "2+3"}]]}, long_answer]
    script.write_text(json.dumps({"replies": replies, "features": FEATURES, "chunk_size": 4, "delay": 0.05}))

    def cli(*args: str) -> str:
        done = subprocess.run([str(EXE), *args], env=env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    app_id = cli("app", "create", "counter", "--model", f"scripted:{script}", "--tool", "calculator")
    headers = {"Authorization": f"Bearer {cli('key', 'create', '--app', app_id)}"}
    url = env["DATABASE_URL"]
    port_a, port_b = free_port(), free_port()
    body = {"query": "Add, then count.", "user": "alice", "response_mode": "streaming", "inputs": {}}
    with serve(env, port_b, headers), serve(env, port_a, headers) as worker_a:
        seen: list[tuple[int, Any]] = []
        with httpx.stream(
            "POST",
            f"http://127.0.0.1:{port_a}/v1/chat-messages",
            json=body,
            headers={**headers, **ACCEPT_SSE},
            timeout=30,
        ) as r:
            buffer = ""
            for chunk in r.iter_text():
                buffer += chunk
                *frames, buffer = buffer.split("\n\n")
                seen.extend((s, e) for f in frames for s, e in numbered(f + "\n\n") if s is not None)
                observed = [
                    i for i, (_, e) in enumerate(seen) if e["event"] == "agent_thought" and e["observation"]
                ]
                if observed and len(seen) - observed[0] > 10:
                    break  # ten events into the answer the client stops reading; the run goes on
        task_id, last_seen = seen[0][1]["task_id"], seen[-1][0]
        _wait_for(lambda: asyncio.run(_stored_seq(url, task_id)) >= last_seen, "the journal")
        script.write_text(json.dumps({"replies": ["Five. Done counting."], "features": FEATURES}))
        worker_a.send_signal(signal.SIGKILL)
        worker_a.wait(timeout=30)
        back = reattach(
            f"http://127.0.0.1:{port_b}", headers, task_id, seen[0][1]["conversation_id"], last_seen
        )
    tail, replayed = back.tail, back.replayed
    assert [s for s, _ in tail] == list(range(last_seen + 1, last_seen + 1 + len(tail)))
    assert tail[-1][1]["event"] == "message_end" and all(e["event"] != "error" for _, e in tail)
    assert [s for s, _ in replayed] == list(range(1, len(replayed) + 1))
    assert replayed[: len(seen)] == seen and replayed[len(seen) :] == tail
    # the cut answer's partial text was stored: the resumed run replaces it with the text before it
    assert "counting" in client_view(seen)
    replaced = [e for _, e in tail if e["event"] == "message_replace"]
    assert [(e["answer"], e["reason"]) for e in replaced] == [("Adding.", "resumed")]
    assert client_view(replayed) == client_view(seen + tail) == "Adding." + "Five. Done counting."
    [message] = back.history
    assert (message["status"], message["answer"]) == (
        "normal",
        "Adding.\nFive. Done counting.",
    )  # every round, as Dify
    assert json.loads(message["agent_thoughts"][0]["observation"]) == {"calculator": "5"}
