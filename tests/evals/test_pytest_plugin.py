"""The pytest plugin: a project's own test runs an eval set with the ``loopwright_eval`` fixture, and
fails naming the case and the check when the set falls below its threshold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import loopwright

SRC = Path(loopwright.__file__).resolve().parent.parent

APP = """\
name: Calc
model: scripted:{script}
tools: [{{name: calculator}}]
"""
SET = """\
cases:
  - name: multiply
    query: What is 17 * 23?
    replies:
      - {{tool_calls: [[calculator, {{expression: "17*23"}}]]}}
      - It is 391.
    expect:
      answer: {{contains: "{expected}"}}
      trajectory: {{match: exact, tools: [calculator]}}
"""
TEST = """\
def test_the_app(loopwright_eval):
    report = loopwright_eval.check("set.yaml", app="app.yaml", replay=True)
    assert report.passed == 1
"""


def run_pytest(tmp_path: Path, expected: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "never.json"  # a replay never loads it
    (tmp_path / "app.yaml").write_text(APP.format(script=script), encoding="utf-8")
    (tmp_path / "set.yaml").write_text(SET.format(expected=expected), encoding="utf-8")
    (tmp_path / "test_app.py").write_text(TEST, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    # Only -p loads the plugin (an installed loopwright would load it by its entry point too).
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "loopwright.evals.pytest_plugin",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_passing_set_passes_the_test(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, "391")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_a_failing_set_fails_the_test_naming_the_case_and_check(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, "392")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "0/1 passed" in done.stdout
    assert "multiply (turn 1) answer.contains: expected '392'" in done.stdout
    assert json.dumps("It is 391.")[1:-1] in done.stdout
