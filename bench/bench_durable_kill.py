"""``kill -9`` of a real ``loopwright serve --executor durable`` at seeded random points of a run (a tool
round, then a streamed answer), each followed by a new worker that takes the run over at its start
and a client that re-attaches after the last event it had: the message ends answered, the client gets
every event once, in order, to ``message_end``, and the whole stream replays the same (the long
version of tests/reliability/test_durable_takeover.py). SQLite files, one directory per kill.
Prints how many kills passed; exits non-zero at the first failure (with its assertion).

The new worker's scripted model is given the replies from the model call that is made again: the
round of the last step DBOS recorded (read with DBOSClient), as a provider would answer from there.

Run: .venv/bin/python bench/bench_durable_kill.py [--kills 20] [--seed 20261125]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.reliability.reattach import reattach  # noqa: E402
from tests.reliability.test_durable_takeover import _stored_seq, _wait_for  # noqa: E402
from tests.reliability.test_kill import EXE, free_port, serve  # noqa: E402
from tests.reliability.test_kill_reattach import stream_until  # noqa: E402

SEED = 20261125
FEATURES = ["tool-call", "stream-tool-call"]
REPLIES: list[Any] = [
    {"text": "Let me add.", "tool_calls": [["calculator", {"expression": "2 + 3"}]]},
    "counting " * 100 + "done.",
]


def _recorded_round(system_url: str, task_id: str) -> int:
    """The round of the last checkpoint DBOS recorded for the run (its workflow's input, or a step)."""
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=system_url)
    try:
        steps = [s["output"] for s in client.list_workflow_steps(task_id) if s["output"]]
        status = client.retrieve_workflow(task_id).get_status()
        first = status.input["args"][0]["first"] if status.input else {"agent": {"round": 0}}
        checkpoints = [first, *(s for s in steps if "agent" in s)]
        return int(checkpoints[-1]["agent"]["round"])
    finally:
        client.destroy()


def kill_and_take_over(directory: Path, point: int) -> None:
    script = directory / "script.json"
    script.write_text(json.dumps({"replies": REPLIES, "features": FEATURES, "chunk_size": 4, "delay": 0.02}))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "LOOPWRIGHT_DB")}
    url = f"sqlite+aiosqlite:///{directory / 'durable.db'}"
    env |= {"DATABASE_URL": url, "LOOPWRIGHT_EXECUTOR": "durable"}

    def cli(*args: str) -> str:
        done = subprocess.run([str(EXE), *args], env=env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    app_id = cli("app", "create", "counter", "--model", f"scripted:{script}", "--tool", "calculator")
    headers = {"Authorization": f"Bearer {cli('key', 'create', '--app', app_id)}"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with serve(env, port, headers) as worker:
        seen = stream_until(base, headers, point)
        task_id, last_seen = seen[0][1]["task_id"], seen[-1][0]
        _wait_for(lambda: asyncio.run(_stored_seq(url, task_id)) >= last_seen, "the journal")
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
    done_round = _recorded_round(f"sqlite:///{directory / 'durable.db'}.dbos", task_id)
    script.write_text(json.dumps({"replies": REPLIES[done_round:], "features": FEATURES, "chunk_size": 4}))
    with serve(env, port, headers):  # a new worker: it takes the dead one's run over at its start
        back = reattach(base, headers, task_id, seen[0][1]["conversation_id"], last_seen)
    tail, replayed = back.tail, back.replayed
    assert [s for s, _ in tail] == list(range(last_seen + 1, last_seen + 1 + len(tail))), point
    assert tail and tail[-1][1]["event"] == "message_end", (point, tail[-3:])
    assert [s for s, _ in replayed] == list(range(1, len(replayed) + 1)), point
    assert replayed[: len(seen)] == seen and replayed[len(seen) :] == tail, point
    [message] = back.history
    assert (message["status"], message["answer"]) == ("normal", REPLIES[1]), (point, message["status"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.perf_counter()
    for i in range(args.kills):
        point = rng.randint(2, 80)  # events into the stream: in the tool round or the answer
        with tempfile.TemporaryDirectory() as tmp:
            kill_and_take_over(Path(tmp), point)
        print(f"kill {i + 1}: at event {point}: taken over, answered, every event once")
    print(f"kills: {args.kills}  seed: {args.seed}  all passed  wall: {time.perf_counter() - started:.0f} s")
