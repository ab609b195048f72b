"""``kill -9`` of a real ``loopwright serve`` at seeded random points of a stream, then a restart and a
re-attach: nothing lost — the message is marked interrupted with the rounds it finished and the answer
and thoughts of the stored events, and the client gets every stored event once, in order, the same
frames it saw live, then an ``error`` (``interrupted: …``) that ends the stream."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx

from tests.reliability.test_kill import EXE, assert_saved_from_stream, free_port, serve, shown
from tests.sse import ACCEPT_SSE, numbered

SEED = 20261125
KILLS = 3  # points per run of the suite (bench/ has the long version)


def setup(tmp_path: Path) -> tuple[dict[str, str], dict[str, str]]:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {"tool_calls": [["calculator", {"expression": "2 + 3"}]], "text": "Let me add."},
                    "counting " * 400,
                ]
                * 10,
                "features": ["tool-call", "stream-tool-call"],
                "chunk_size": 4,
                "delay": 0.01,
            }
        )
    )
    env = {**os.environ, "LOOPWRIGHT_DB": str(tmp_path / "kill.db")}
    env.pop("DATABASE_URL", None)

    def cli(*args: str) -> str:
        done = subprocess.run([str(EXE), *args], env=env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    app_id = cli("app", "create", "counter", "--model", f"scripted:{script}", "--tool", "calculator")
    return env, {"Authorization": f"Bearer {cli('key', 'create', '--app', app_id)}"}


def stream_until(
    base: str, headers: dict[str, str], count: int, pid: int | None = None
) -> list[tuple[int, Any]]:
    """Stream a message and, after ``count`` numbered events, ``kill -9`` its server (``pid``) or,
    without one, just stop reading."""
    body = {"query": "Add and count.", "user": "alice", "response_mode": "streaming", "inputs": {}}
    seen: list[tuple[int, Any]] = []
    with httpx.stream(
        "POST", f"{base}/v1/chat-messages", json=body, headers={**headers, **ACCEPT_SSE}, timeout=60
    ) as r:
        buffer = ""
        for text in r.iter_text():
            buffer += text
            *frames, buffer = buffer.split("\n\n")
            seen.extend((s, e) for f in frames for s, e in numbered(f + "\n\n") if s is not None)
            if len(seen) >= count:
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                break
    return seen


def test_kill_9_at_random_points_then_reattach(tmp_path: Path) -> None:
    kill_and_reattach(tmp_path, KILLS, SEED)


def kill_and_reattach(tmp_path: Path, kills: int, seed: int) -> None:
    """``kills`` times: stream, ``kill -9`` at a random point, restart, re-attach, check."""
    env, headers = setup(tmp_path)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    rng = random.Random(seed)
    for _ in range(kills):
        point = rng.randint(2, 120)  # events into the stream: in the tool round or the answer
        with serve(env, port, headers) as server:
            seen = stream_until(base, headers, point, server.pid)
            server.wait(timeout=30)
        task_id = seen[0][1]["task_id"]
        with serve(env, port, headers):  # the restarted server sweeps its predecessor's runs at start
            replay = httpx.get(
                f"{base}/v1/chat-messages/{task_id}/events?user=alice", headers=headers, timeout=30
            )
            params = {"user": "alice", "conversation_id": seen[0][1]["conversation_id"]}
            history = httpx.get(f"{base}/v1/messages", params=params, headers=headers, timeout=30).json()
        if replay.status_code == 404:
            # killed before the first write behind landed: neither the stream nor the message is stored
            assert len(seen) <= 10 and history.get("code") == "not_found", (point, replay.text)
            continue
        assert replay.status_code == 200, (point, replay.text)
        events = [(s, e) for s, e in numbered(replay.text) if s is not None]
        *stored, (_, last) = events
        assert [s for s, _ in events] == list(range(1, len(events) + 1)), point  # once each, in order
        assert last["event"] == "error" and last["message"].startswith("interrupted:")
        # what was stored is what the client saw (up to where either stopped: at most one batch is lost)
        common = min(len(stored), len(seen))
        assert stored[:common] == seen[:common] and len(stored) >= len(seen) - 60, point
        if "data" not in history:
            # Killed in the message's first moments, before its rows were written behind (a new
            # conversation's wait for its end user's id): the message was never stored, its stream says
            # it was interrupted. Only a kill that early may do that.
            assert history["code"] == "not_found" and len(stored) <= 10, (point, history)
            continue
        [message] = history["data"]
        assert message["status"] == "error" and message["error"].startswith("interrupted:")
        # it keeps what the stream stored: the answer a re-attach shows, the thoughts it announced
        assert_saved_from_stream(message, [e for _, e in stored])
        answer, client = message["answer"], shown(e for _, e in seen)
        assert client.startswith(answer) or answer.startswith(client), (point, answer, client)
