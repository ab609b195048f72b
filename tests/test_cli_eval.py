"""``loopwright eval run|record|compare``: exit codes (0 passes, 1 below the threshold, 2 usage), the
JSON and HTML reports, a conversation recorded then replayed, two reports compared."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopwright.cli import app
from loopwright.config import clear_model_cache

FC = ["tool-call", "stream-tool-call"]


@pytest.fixture
def db_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "loopwright.db"
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("LOOPWRIGHT_DB", str(path))
    return path


def app_file(tmp_path: Path, replies: list[object]) -> Path:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": replies, "features": FC, "cycle": True}), encoding="utf-8")
    path = tmp_path / "app.yaml"
    path.write_text(
        f"name: Calc\nmodel: scripted:{script}\ntools: [{{name: calculator}}, {{name: current_time}}]\n",
        encoding="utf-8",
    )
    return path


SET = """\
name: calc
cases:
  - name: multiply
    query: What is 17 * 23?
    expect:
      answer: {contains: "391"}
      trajectory: {match: exact, tools: [{name: calculator, args: {expression: "17*23"}}]}
  - name: "<b>tags</b>"
    query: Say <script>.
    expect:
      answer: {contains: "<i>never</i>"}
"""
CALC = [
    {"text": "Computing.", "tool_calls": [["calculator", {"expression": "17*23"}]]},
    "It is 391 <script>.",
]


def test_run_prints_a_table_writes_reports_and_exits_by_the_threshold(tmp_path: Path) -> None:
    clear_model_cache()
    app_yaml = app_file(tmp_path, CALC)
    (tmp_path / "set.yaml").write_text(SET, encoding="utf-8")
    out_json, out_html = tmp_path / "r" / "report.json", tmp_path / "r" / "report.html"
    # One case at a time, each run from the script's start: the cases share the app's one script.
    args = ["eval", "run", str(tmp_path / "set.yaml"), "--app", str(app_yaml), "-j", "1"]
    runner = CliRunner()

    below = runner.invoke(app, [*args, "--json", str(out_json), "--html", str(out_html)])
    assert below.exit_code == 1, below.output
    assert "multiply" in below.stdout and "FAIL" in below.stdout and "1/2 passed (50%" in below.stdout

    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert report["summary"] == {**report["summary"], "cases": 2, "passed": 1, "ok": False}
    failing = next(c for c in report["cases"] if not c["passed"])
    assert failing["turns"][0]["tool_calls"][0]["name"] == "calculator"

    html = out_html.read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;" in html  # the answer, escaped
    assert "&lt;b&gt;tags&lt;/b&gt;" in html and "<b>tags</b>" not in html
    # the failing case's trajectory beside what it expected
    section = html[html.index("<h2>&lt;b&gt;tags") :]
    assert "expected" in section and "&lt;i&gt;never&lt;/i&gt;" in section and "trajectory" in section

    clear_model_cache()
    assert runner.invoke(app, [*args, "--threshold", "0.5"]).exit_code == 0


def test_usage_errors_exit_2(tmp_path: Path, db_path: Path) -> None:
    app_yaml = app_file(tmp_path, CALC)
    (tmp_path / "set.yaml").write_text(SET, encoding="utf-8")
    (tmp_path / "bad.yaml").write_text(
        "cases:\n  - name: a\n    query: q\n    expect: {answer: {contain: x}}\n"
    )
    runner = CliRunner()
    cases = [
        (["eval", "run", str(tmp_path / "missing.yaml"), "--app", str(app_yaml)], "cannot read the eval set"),
        (["eval", "run", str(tmp_path / "bad.yaml"), "--app", str(app_yaml)], "expect.answer.contain"),
        (["eval", "run", str(tmp_path / "set.yaml"), "--app", str(app_yaml), "--replay"], "recorded replies"),
        (["eval", "run", str(tmp_path / "set.yaml"), "--app", "no-such-app"], "no app 'no-such-app'"),
        (
            ["eval", "run", str(tmp_path / "set.yaml"), "--app", str(app_yaml), "--version", "3"],
            "no version 3",
        ),
        (
            ["eval", "run", str(tmp_path / "set.yaml"), "--app", str(app_yaml), "--threshold", "2"],
            "threshold",
        ),
        (
            ["eval", "compare", str(tmp_path / "set.yaml"), "--app", str(app_yaml)],
            "two --version or two --model",
        ),
    ]
    for args, says in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert says in " ".join(result.output.split()), (args, result.output)


def test_record_a_conversation_then_replay_it_then_compare_reports(tmp_path: Path, db_path: Path) -> None:
    script = tmp_path / "live.json"
    replies = [
        {"text": "Adding.", "tool_calls": [["calculator", {"expression": "2+3"}]]},
        {"tool_calls": [["current_time", {}]]},
        "5, and the clock says now.",
    ]
    script.write_text(json.dumps({"replies": replies, "features": FC}), encoding="utf-8")
    runner = CliRunner()
    made = runner.invoke(
        app,
        [
            "app",
            "create",
            "Two",
            "--model",
            f"scripted:{script}",
            "--tool",
            "calculator",
            "--tool",
            "current_time",
        ],
    )
    app_id = made.stdout.strip()
    asked = runner.invoke(app, ["app", "ask", app_id, "Add 2 and 3, then the time.", "--user", "ann"])
    assert asked.exit_code == 0, asked.output
    conversation = re.search(r"conversation: (\S+)", asked.stderr)
    assert conversation is not None
    out = tmp_path / "recorded.yaml"

    recorded = runner.invoke(
        app,
        [
            "eval",
            "record",
            "--app",
            app_id,
            "--conversation",
            conversation.group(1),
            "--out",
            str(out),
            "--name",
            "two",
        ],
    )
    assert recorded.exit_code == 0, recorded.output
    assert "recorded 'two' (1 turn)" in recorded.stdout
    again = runner.invoke(
        app,
        [
            "eval",
            "record",
            "--app",
            app_id,
            "--conversation",
            conversation.group(1),
            "--out",
            str(out),
            "--name",
            "two",
        ],
    )
    assert again.exit_code == 2 and "already has a case named 'two'" in again.output

    script.unlink()  # the replay needs no model
    base_json, cand_json = tmp_path / "a.json", tmp_path / "b.json"
    replayed = runner.invoke(
        app, ["eval", "run", str(out), "--app", app_id, "--replay", "--json", str(base_json)]
    )
    assert replayed.exit_code == 0, replayed.output
    assert "1/1 passed" in replayed.stdout and "calculator, current_time" in " ".join(replayed.stdout.split())

    # The same case with its answer edited: the candidate's verdict and nothing else changes
    edited = json.loads(base_json.read_text(encoding="utf-8"))
    edited["cases"][0]["passed"] = False
    cand_json.write_text(json.dumps(edited), encoding="utf-8")
    compared = runner.invoke(
        app,
        [
            "eval",
            "compare",
            "--reports",
            str(base_json),
            "--reports",
            str(cand_json),
            "--html",
            str(tmp_path / "c.html"),
        ],
    )
    assert compared.exit_code == 1, compared.output  # a case broke
    assert "1 broken" in compared.stdout and "broken" in (tmp_path / "c.html").read_text(encoding="utf-8")


def test_unknown_conversation_is_a_usage_error(tmp_path: Path, db_path: Path) -> None:
    runner = CliRunner()
    made = runner.invoke(
        app, ["app", "create", "X", "--model", "scripted:/nowhere.json", "--tool", "calculator"]
    )
    result = runner.invoke(
        app,
        [
            "eval",
            "record",
            "--app",
            made.stdout.strip(),
            "--conversation",
            "nope",
            "--out",
            str(tmp_path / "s.yaml"),
        ],
    )
    assert result.exit_code == 2 and "Conversation Not Exists." in result.output
