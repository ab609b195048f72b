"""Expected errors in every corner of the CLI: one ``error: …`` line naming the problem, exit code ≠ 0,
and no Python traceback — each case run as a user runs it, as a real ``loopwright`` process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXE = str(Path(sys.executable).with_name("loopwright"))
CLOSED_PORT_URL = "http://127.0.0.1:9/v1"  # the discard port: nothing listens on loopback here


def _run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "LOOPWRIGHT_DATA_DIR": str(tmp_path / "data"), **env}
    for name in ("DATABASE_URL", "LOOPWRIGHT_DB", "OPENAI_API_KEY", "OPENAI_BASE_URL", "LOOPWRIGHT_DEBUG"):
        if name not in env:
            full_env.pop(name, None)
    return subprocess.run(
        [EXE, *args], env=full_env, cwd=tmp_path, capture_output=True, text=True, timeout=120, input=""
    )


def _one_error_line(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for text in expected:
        assert text in errors[0], errors[0]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "bad.yml").write_text("name: [unclosed\n", encoding="utf-8")
    (tmp_path / "doc.txt").write_text("Parking is free in the garage.", encoding="utf-8")
    return tmp_path


CASES = {
    "missing file": (["app", "create", "--from-yaml", "nothing.yml"], {}, ["no such file", "nothing.yml"]),
    "bad YAML": (["app", "create", "--from-yaml", "bad.yml"], {}, ["not valid YAML"]),
    "unknown app": (["app", "show", "nope"], {}, ["no app with id 'nope'"]),
    "unknown app's keys": (["key", "list", "--app", "nope"], {}, ["no app with id 'nope'"]),
    "unknown tool": (["run", "--tool", "nope", "hi"], {}, ["nope", "calculator"]),
    "missing API key": (["run", "--model", "openai:gpt-4o-mini", "hi"], {}, ["OPENAI_API_KEY"]),
    "unreachable model": (
        ["run", "--model", "openai-compatible:m", "hi"],
        {"OPENAI_BASE_URL": CLOSED_PORT_URL},
        ["127.0.0.1:9"],
    ),
    "unreachable spec server": (
        ["tools", "import", "http://127.0.0.1:9/openapi.json", "--check"],
        {"LOOPWRIGHT_TOOL_ALLOW_HOSTS": "127.0.0.1"},
        ["127.0.0.1:9"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_expected_errors_are_one_line(case: str, files: Path) -> None:
    args, env, expected = CASES[case]
    _one_error_line(_run(args, files, **env), *expected)


def test_missing_embedding_key_when_adding_to_a_knowledge_base(files: Path) -> None:
    made = _run(["kb", "create", "H", "--embedding", "openai:text-embedding-3-small"], files)
    assert made.returncode == 0, made.stderr
    added = _run(["kb", "add", "H", "doc.txt"], files)
    assert added.returncode != 0 and "Traceback" not in added.stderr, added.stderr
    assert added.stderr.strip() == (
        "doc.txt: error: embedding model openai:text-embedding-3-small needs an API key: set OPENAI_API_KEY"
    )


def test_debug_shows_the_traceback(files: Path) -> None:
    result = _run(["--debug", "app", "create", "--from-yaml", "nothing.yml"], files)
    assert result.returncode != 0 and "Traceback" in result.stderr


def test_info_names_the_data_directory_and_database(files: Path) -> None:
    result = _run(["--data-dir", str(files / "elsewhere"), "info", "--json"], files)
    assert result.returncode == 0, result.stderr
    import json

    shown = json.loads(result.stdout)
    assert shown["data_directory"] == str(files / "elsewhere")
    assert shown["database"] == f"sqlite+aiosqlite:///{files / 'elsewhere' / 'loopwright.db'}"
    assert shown["files"] == str(files / "elsewhere" / "files")


def test_a_database_left_in_the_working_directory_is_pointed_out(files: Path) -> None:
    (files / "loopwright.db").write_bytes(b"")
    result = _run(["app", "list"], files)
    assert result.returncode == 0
    assert "note: " in result.stderr and "loopwright.db is not used any more" in result.stderr
