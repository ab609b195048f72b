"""GET /health (outside /v1, no key) and the line ``loopwright serve`` prints once it accepts connections."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from tests.live_server import serving


async def test_health_answers_without_a_key(client: httpx.AsyncClient) -> None:
    r = await client.get("/health")
    assert (r.status_code, r.json()) == (200, {"status": "ok"})


async def test_health_is_503_when_the_database_does_not_answer(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    broken = Database(f"sqlite+aiosqlite:///{tmp_path}/file/x.db")  # a file where a folder should be
    async with serving(create_app(broken, Settings())) as url, httpx.AsyncClient(base_url=url) as c:
        r = await c.get("/health")
    assert r.status_code == 503 and r.json()["status"] == "unavailable"
    await broken.close()


def test_serve_prints_one_ready_line_once_it_accepts_connections(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("loopwright")
    env = {**os.environ, "LOOPWRIGHT_DB": str(tmp_path / "ready.db"), "PYTHONUNBUFFERED": "1"}
    env.pop("DATABASE_URL", None)
    subprocess.run(
        [str(exe), "app", "create", "one", "--model", "local"], env=env, check=True, capture_output=True
    )
    command = [str(exe), "serve", "--port", "0"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # the gate: nothing else is printed on stdout before it
        assert line.startswith("loopwright serving http://127.0.0.1:"), line
        assert f"database sqlite+aiosqlite:///{tmp_path / 'ready.db'}" in line and line.rstrip().endswith(
            "· 1 app"
        )
        address = line.split()[2]
        assert httpx.get(f"{address}/health", timeout=10).json() == {"status": "ok"}  # no retry needed
    finally:
        server.terminate()
        server.communicate(timeout=30)  # waits, and closes the pipe
