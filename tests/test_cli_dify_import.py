"""``loopwright app create --from-yaml`` on Dify exports (per-tool report, import options) and
``loopwright app check``, against a real SQLite file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopwright.cli import app

DSL = Path(__file__).parent / "fixtures" / "dify-dsl"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("LOOPWRIGHT_DB", str(tmp_path / "lw.db"))
    monkeypatch.setenv("LOOPWRIGHT_DATA_DIR", str(tmp_path / "data"))
    return tmp_path


def test_each_tool_is_reported_and_check_names_the_plugin_to_install(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the export's hosted model is ready
    runner = CliRunner()
    made = runner.invoke(app, ["app", "create", "--from-yaml", str(DSL / "investment-analysis-copilot.yml")])
    assert made.exit_code == 0, made.output
    assert (
        "tool yahoo_finance_news (builtin yahoo) → Dify plugin langgenius/yahoo (provider yahoo)"
        in made.stderr
    )
    app_id = made.stdout.strip().splitlines()[-1]
    check = runner.invoke(app, ["app", "check", app_id, "--json"])
    assert check.exit_code == 1  # the plugin is not installed
    rows = json.loads(check.stdout)
    assert [r["ready"] for r in rows] == [True, False] and rows[0]["what"].startswith("model openai:")
    assert "langgenius/yahoo" in rows[1]["what"]
    installed = env / "data" / "plugins" / "langgenius" / "yahoo"
    installed.mkdir(parents=True)
    (installed / "plugin.json").write_text("{}", encoding="utf-8")  # the plugin host's install record
    again = runner.invoke(app, ["app", "check", app_id])
    assert again.exit_code == 0 and "installed" in again.stdout


def test_import_options_from_the_command_line(env: Path) -> None:
    servers = env / "mcp.yaml"
    servers.write_text(
        f"notes:\n  transport: stdio\n  command: {sys.executable}\n  args: [-m, mcp_server_time]\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    made = runner.invoke(
        app,
        [
            "app",
            "create",
            "--from-yaml",
            str(DSL / "dify1-all-kinds.yml"),
            "--mcp-config",
            str(servers),
            "--map-workflow",
            "weekly_report=app-elsewhere",
            "--api-spec",
            "petstore=/nonexistent/petstore.yaml",
        ],
    )
    assert made.exit_code == 0, made.output
    assert "tool search_notes (mcp notes-server) → MCP server 'notes'" in made.stderr
    assert "tool weekly_report (workflow" in made.stderr and "→ app app-elsewhere" in made.stderr
    assert "warning: tool" not in made.stderr  # every tool found its way
    app_id = made.stdout.strip().splitlines()[-1]
    check = runner.invoke(app, ["app", "check", app_id, "--json"])
    rows = {r["what"]: r for r in json.loads(check.stdout)}
    assert check.exit_code == 1
    assert rows["app app-elsewhere"]["ready"] is False
    assert rows["tool tts"]["ready"] is False  # no audio endpoint configured
    assert rows["tool current_time"]["ready"] is True
    (mcp,) = [r for what, r in rows.items() if what.startswith("MCP server")]
    assert mcp["ready"] is False and mcp["detail"] == "has no tool search_notes"  # the server answered


def test_a_bad_option_is_one_clear_line(env: Path) -> None:
    result = CliRunner().invoke(
        app, ["app", "create", "--from-yaml", str(DSL / "dify1-all-kinds.yml"), "--map-workflow", "nothing"]
    )
    assert result.exit_code == 1 and "--map-workflow takes NAME=VALUE" in result.stderr


def test_check_of_an_unknown_app(env: Path) -> None:
    result = CliRunner().invoke(app, ["app", "check", "no-such-app"])
    assert result.exit_code == 1 and "no app with id" in result.stderr


def test_at_a_terminal_the_import_asks_for_each_mcp_server(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import loopwright.cli.admin

    monkeypatch.setattr(loopwright.cli.admin, "interactive", lambda: True)
    runner = CliRunner()
    made = runner.invoke(
        app,
        ["app", "create", "--from-yaml", str(DSL / "dify1-all-kinds.yml")],
        input="http://127.0.0.1:9/mcp\n",
    )
    assert made.exit_code == 0, made.output
    assert "MCP server for 'notes-server'" in made.stdout  # the prompt names the export's provider
    assert "tool search_notes (mcp notes-server) → MCP server 'notes-server'" in made.stderr


def test_an_agent_export_prints_its_warnings_and_takes_its_skills_from_skills_dir(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    skill = env / "skills" / "changelog-style"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: changelog-style\ndescription: Our style\n---\nBe brief.\n")
    runner = CliRunner()
    export = str(DSL / "dify-0.7.0-agent.yml")
    made = runner.invoke(app, ["app", "create", "--from-yaml", export, "--skills-dir", str(env / "skills")])
    assert made.exit_code == 0, made.output
    assert "warning: CLI tool 'gh-release' runs commands in Dify's sandbox" in made.stderr
    assert "warning: skill" not in made.stderr  # found in --skills-dir
    app_id = made.stdout.strip().splitlines()[-1]
    shown = runner.invoke(app, ["app", "show", app_id, "--json"])
    assert shown.exit_code == 0, shown.output
    config = json.loads(shown.stdout)["config"]
    assert config["mode"] == "agent" and config["skills"] == [str(skill.resolve())]
    without = runner.invoke(app, ["app", "create", "--from-yaml", export])
    assert "warning: skill 'changelog-style': Dify exports a skill's name but not its files" in without.stderr
