"""``PluginProcess`` with a small real subprocess standing in for a plugin that misbehaves: lines that
are not JSON, messages for sessions nobody opened, an over-long line, then an exit with stderr."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from loopwright.tools.dify_plugins.process import PluginProcess, plugin_environment
from loopwright.tools.dify_plugins.protocol import Exited, Stream

SCRIPT = r"""
import sys, json
print(json.dumps({"name": "fake", "version": "1"}), flush=True)   # a declaration line
print("", flush=True)
print("not json at all", flush=True)
end = {"type": "end", "data": {}}
print(json.dumps({"event": "session", "session_id": "nobody", "data": end}), flush=True)
print("x" * 200_000, flush=True)                                   # over the reader's line limit
line = sys.stdin.readline()                                        # the host's request
sid = json.loads(line)["session_id"]
msg = {"type": "stream", "data": {"type": "text", "message": {"text": "pong"}, "meta": None}}
print(json.dumps({"event": "session", "session_id": sid, "data": msg}), flush=True)
sys.stderr.write("fatal: the fake plugin gives up\n")
sys.exit(3)
"""


async def test_a_misbehaving_process_is_read_safely_and_its_end_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("loopwright.tools.dify_plugins.process.LINE_LIMIT", 100_000)  # under the long line
    proc = PluginProcess(
        "fake/plugin", [sys.executable, "-c", SCRIPT], tmp_path, plugin_environment(), time.monotonic
    )
    await proc.start()
    session_id, queue = proc.open_session()
    await proc.send(b'{"session_id": "%s", "event": "request", "data": {}}\n' % session_id.encode())
    first = await asyncio.wait_for(queue.get(), 30)
    assert isinstance(first, Stream) and first.message["message"] == {"text": "pong"}
    ended = await asyncio.wait_for(queue.get(), 30)
    assert isinstance(ended, Exited) and ended.returncode == 3
    assert "fatal: the fake plugin gives up" in ended.stderr
    assert proc.declaration == [{"name": "fake", "version": "1"}]
    assert not proc.alive
    # A session opened after the end learns it at once.
    _, late = proc.open_session()
    assert isinstance(late.get_nowait(), Exited)
    await proc.stop()
