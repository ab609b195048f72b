"""One data directory: ``loopwright serve`` started from another folder serves the apps created in the
first — real processes, the platform's default data directory (XDG_DATA_HOME on Linux)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

EXE = str(Path(sys.executable).with_name("loopwright"))


def test_serve_from_another_folder_sees_the_same_apps(tmp_path: Path) -> None:
    first, second, home = tmp_path / "first", tmp_path / "second", tmp_path / "xdg"
    first.mkdir()
    second.mkdir()
    env = {**os.environ, "XDG_DATA_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    for name in ("LOOPWRIGHT_DATA_DIR", "LOOPWRIGHT_DB", "DATABASE_URL"):
        env.pop(name, None)

    def cli(*args: str) -> str:
        done = subprocess.run([EXE, *args], env=env, cwd=first, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    app_id = cli("app", "create", "Calc", "--model", "local", "--tool", "calculator")
    key = cli("key", "create", "--app", app_id)
    assert (home / "loopwright" / "loopwright.db").is_file()  # not ./loopwright.db in the first folder
    assert not (first / "loopwright.db").exists()

    server = subprocess.Popen(
        [EXE, "serve", "--port", "0"],
        env=env,
        cwd=second,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.rstrip().endswith("· 1 app"), line
        address = line.split()[2]
        r = httpx.get(f"{address}/v1/info", headers={"Authorization": f"Bearer {key}"}, timeout=10)
        assert r.status_code == 200 and r.json()["name"] == "Calc"
    finally:
        server.terminate()
        server.communicate(timeout=30)
