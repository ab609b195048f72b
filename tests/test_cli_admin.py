"""``loopwright app create`` and ``loopwright key create`` against a real SQLite file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopwright.cli import app
from loopwright.store import repositories as repo
from loopwright.store.db import Database

DSL = Path(__file__).parent / "app" / "fixtures" / "dify-agent-app.yml"


@pytest.fixture
def db_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "lw.db"
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("LOOPWRIGHT_DB", str(path))
    return path


async def _lookup(path: Path, token: str) -> tuple[str, dict[str, object]] | None:
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        async with db.transaction() as s:
            found = await repo.find_app_by_key(s, token)
            if found is None:
                return None
            config = await repo.latest_config(s, found.id)
            assert config is not None
            return found.id, dict(config.config)
    finally:
        await db.close()


def test_create_an_app_and_a_key_that_finds_it(db_path: Path) -> None:
    runner = CliRunner()
    made = runner.invoke(app, ["app", "create", "Calc", "--model", "local", "--tool", "calculator"])
    assert made.exit_code == 0, made.output
    app_id = made.output.strip()
    key = runner.invoke(app, ["key", "create", "--app", app_id])
    assert key.exit_code == 0 and key.output.strip().startswith("app-")
    found = asyncio.run(_lookup(db_path, key.output.strip()))
    assert found is not None and found[0] == app_id
    assert found[1]["model"] == "local" and found[1]["tools"] == [{"name": "calculator", "form_values": {}}]


def test_create_from_a_dify_export_reports_what_was_left_out(db_path: Path) -> None:
    result = CliRunner().invoke(app, ["app", "create", "--from-yaml", str(DSL)])
    assert result.exit_code == 0
    assert "warning:" in result.output and "google_search" in result.output


def test_errors_are_one_clear_line(db_path: Path) -> None:
    runner = CliRunner()
    bad_tool = runner.invoke(app, ["app", "create", "X", "--tool", "search"])
    assert bad_tool.exit_code == 1 and "unknown tool 'search'" in bad_tool.output
    no_app = runner.invoke(app, ["key", "create", "--app", "nope"])
    assert no_app.exit_code == 1 and "no app with id 'nope'" in no_app.output


def test_the_cli_never_imports_the_store() -> None:
    """The commands reach the database through the app layer (loopwright.app.admin.apps) only."""
    import ast

    import loopwright.cli

    for file in Path(loopwright.cli.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not [n for n in names if n.split(".")[:2] == ["loopwright", "store"]], file.name


def test_ask_an_app_through_the_runtime_and_continue_the_conversation(db_path: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    replies = [
        {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "17*23"}]]},
        "It is 391.",
        "You asked for 17 * 23.",
    ]
    script.write_text(json.dumps({"replies": replies, "features": ["tool-call", "stream-tool-call"]}))
    runner = CliRunner()
    made = runner.invoke(
        app, ["app", "create", "Calc", "--model", f"scripted:{script}", "--tool", "calculator"]
    )
    app_id = made.output.strip()
    first = runner.invoke(app, ["app", "ask", app_id, "What is 17 * 23?"])
    assert first.exit_code == 0, first.output
    assert first.stdout.strip() == "Let me compute.\nIt is 391."  # what was streamed, as Dify saves it
    assert "calculator" in first.stderr and "391" in first.stderr
    conversation = first.stderr.strip().rsplit("conversation: ", 1)[1]
    again = runner.invoke(app, ["app", "ask", app_id, "What did I ask?", "--conversation", conversation])
    assert again.exit_code == 0 and again.stdout.strip() == "You asked for 17 * 23."
    stranger = runner.invoke(
        app, ["app", "ask", app_id, "hi", "--conversation", conversation, "--user", "eve"]
    )
    assert stranger.exit_code == 1 and "Conversation Not Exists." in stranger.stderr


def test_ask_refuses_a_malformed_input(db_path: Path) -> None:
    result = CliRunner().invoke(app, ["app", "ask", "some-app", "hi", "--input", "novalue"])
    assert result.exit_code == 1 and "NAME=VALUE" in result.stderr


def test_list_apps_and_keys_and_revoke_one(db_path: Path) -> None:
    runner = CliRunner()
    app_id = runner.invoke(
        app, ["app", "create", "Calc", "--model", "local", "--tool", "calculator"]
    ).output.strip()
    first = runner.invoke(app, ["key", "create", "--app", app_id]).output.strip()
    second = runner.invoke(app, ["key", "create", "--app", app_id]).output.strip()

    listed = runner.invoke(app, ["app", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    [row] = json.loads(listed.output)
    assert (row["id"], row["name"], row["model"], row["tools"]) == (app_id, "Calc", "local", 1)
    table = runner.invoke(app, ["app", "list"]).output
    assert app_id in table and "Calc" in table

    keys = json.loads(runner.invoke(app, ["key", "list", "--app", app_id, "--json"]).output)
    assert len(keys) == 2 and all(k["app_id"] == app_id for k in keys)
    assert first not in json.dumps(keys) and keys[0]["token"].startswith(first[:6])  # masked: a secret
    assert runner.invoke(app, ["key", "list", "--app", "nope"]).exit_code == 1

    revoked = runner.invoke(app, ["key", "revoke", keys[0]["id"]])
    assert revoked.exit_code == 0 and revoked.output.strip() == "revoked"
    assert asyncio.run(_lookup(db_path, first)) is None  # the revoked key finds nothing
    assert asyncio.run(_lookup(db_path, second)) is not None
    by_token = runner.invoke(app, ["key", "revoke", second])
    assert by_token.exit_code == 0 and asyncio.run(_lookup(db_path, second)) is None
    again = runner.invoke(app, ["key", "revoke", second])
    assert again.exit_code == 1 and "no such API key" in again.output


def test_disable_and_enable_an_app_and_its_api(db_path: Path) -> None:
    runner = CliRunner()
    app_id = runner.invoke(app, ["app", "create", "Calc", "--model", "local"]).output.strip()

    def row() -> tuple[str, bool]:
        [listed] = json.loads(runner.invoke(app, ["app", "list", "--json"]).output)
        return listed["status"], listed["api"]

    assert row() == ("normal", True)
    done = runner.invoke(app, ["app", "disable", app_id])
    assert done.exit_code == 0 and done.output.strip() == "disabled"
    assert row() == ("disabled", True)
    assert runner.invoke(app, ["app", "disable", app_id, "--api"]).output.strip() == "API disabled"
    assert row() == ("disabled", False)
    assert runner.invoke(app, ["app", "enable", app_id]).output.strip() == "enabled"
    assert row() == ("normal", False)
    assert runner.invoke(app, ["app", "enable", app_id, "--api"]).output.strip() == "API enabled"
    assert row() == ("normal", True)
    runner.invoke(app, ["app", "disable", app_id, "--api"])
    shown = json.loads(runner.invoke(app, ["app", "show", app_id, "--json"]).output)
    assert (shown["status"], shown["api"]) == ("normal", False)
    assert "status:   normal, Service API off" in runner.invoke(app, ["app", "show", app_id]).output
    missing = runner.invoke(app, ["app", "disable", "nope"])
    assert missing.exit_code == 1 and "no app with id 'nope'" in missing.output


def _new_app(runner: CliRunner) -> str:
    made = runner.invoke(
        app, ["app", "create", "Calc", "--model", "openai:gpt-4o-mini", "--tool", "calculator"]
    )
    assert made.exit_code == 0, made.output
    return made.stdout.strip().splitlines()[-1]  # after the warning that no OPENAI_API_KEY is set


def test_show_an_app_with_its_configuration(db_path: Path) -> None:
    runner = CliRunner()
    app_id = _new_app(runner)
    runner.invoke(app, ["key", "create", "--app", app_id])
    shown = runner.invoke(app, ["app", "show", app_id, "--json"])
    assert shown.exit_code == 0, shown.output
    details = json.loads(shown.output)
    assert (details["id"], details["name"], details["version"], details["keys"]) == (app_id, "Calc", 1, 1)
    assert details["config"]["model"] == "openai:gpt-4o-mini"
    table = runner.invoke(app, ["app", "show", app_id])
    assert "name:     Calc" in table.output and "model: openai:gpt-4o-mini" in table.output


def test_delete_an_app_takes_its_keys_with_it(db_path: Path) -> None:
    runner = CliRunner()
    app_id = _new_app(runner)
    token = runner.invoke(app, ["key", "create", "--app", app_id]).output.strip()
    refused = runner.invoke(app, ["app", "delete", app_id], input="n\n")
    assert refused.exit_code == 1 and asyncio.run(_lookup(db_path, token)) is not None
    deleted = runner.invoke(app, ["app", "delete", app_id, "--yes"])
    assert deleted.exit_code == 0 and deleted.output.strip() == "deleted"
    assert asyncio.run(_lookup(db_path, token)) is None
    assert json.loads(runner.invoke(app, ["app", "list", "--json"]).output) == []
    again = runner.invoke(app, ["app", "delete", app_id, "--yes"])
    assert again.exit_code == 1 and f"no app with id '{app_id}'" in again.output


def test_export_as_dify_dsl_imports_back_the_same_app(db_path: Path, tmp_path: Path) -> None:
    """An app goes to Dify and back: the DSL export is what the Dify import reads."""
    runner = CliRunner()
    created = runner.invoke(app, ["app", "create", "--from-yaml", str(DSL)])
    app_id = created.output.strip().splitlines()[-1]
    out = tmp_path / "export.yml"
    exported = runner.invoke(app, ["app", "export", app_id, "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    again = runner.invoke(app, ["app", "create", "--from-yaml", str(out)])
    assert again.exit_code == 0, again.output
    second = again.output.strip().splitlines()[-1]
    first_config = json.loads(runner.invoke(app, ["app", "show", app_id, "--json"]).output)["config"]
    second_config = json.loads(runner.invoke(app, ["app", "show", second, "--json"]).output)["config"]
    assert second_config == first_config


def test_export_as_loopwright_yaml_is_lossless(db_path: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    app_id = _new_app(runner)
    out = tmp_path / "calc.yml"
    assert (
        runner.invoke(app, ["app", "export", app_id, "--format", "loopwright", "-o", str(out)]).exit_code == 0
    )
    second = runner.invoke(app, ["app", "create", "--from-yaml", str(out)]).stdout.strip().splitlines()[-1]
    shown = [json.loads(runner.invoke(app, ["app", "show", i, "--json"]).output) for i in (app_id, second)]
    assert shown[0]["config"] == shown[1]["config"] and shown[1]["name"] == "Calc"


def test_export_says_what_dify_cannot_take(db_path: Path) -> None:
    made = CliRunner().invoke(app, ["app", "create", "Local", "--model", "local", "--tool", "web_fetch"])
    result = CliRunner().invoke(app, ["app", "export", made.output.strip()])
    assert result.exit_code == 0
    assert "warning: model 'local' has no Dify provider" in result.output
    assert "kind: app" in result.output and "mode: agent-chat" in result.output


WORKFLOW_EXPORT = """\
app:
  mode: advanced-chat
  name: Support flow
kind: app
version: 0.1.5
workflow:
  graph: {nodes: [], edges: []}
"""


def test_importing_as_a_user_does(db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    runner = CliRunner()
    # a chatflow export says what it is
    flow = tmp_path / "flow.yml"
    flow.write_text(WORKFLOW_EXPORT, encoding="utf-8")
    refused = runner.invoke(app, ["app", "create", "--from-yaml", str(flow)])
    assert (
        refused.exit_code == 1 and "Dify chatflow (advanced-chat) app export 'Support flow'" in refused.output
    )
    assert "no name" not in refused.output
    # NAME and --model given with --from-yaml win over the export's
    made = runner.invoke(app, ["app", "create", "Mine", "--from-yaml", str(DSL), "--model", "local"])
    assert made.exit_code == 0, made.output
    app_id = made.stdout.strip().splitlines()[-1]
    shown = json.loads(runner.invoke(app, ["app", "show", app_id, "--json"]).stdout)
    assert shown["name"] == "Mine" and shown["config"]["model"] == "local"
    assert "replaced by local" in made.stderr
    # a model file that does not exist is refused; a hosted model without its key is a warning
    missing = runner.invoke(app, ["app", "create", "X", "--model", f"local:{tmp_path / 'none.gguf'}"])
    assert missing.exit_code == 1 and "local model file not found" in missing.output
    hosted = runner.invoke(app, ["app", "create", "Y", "--model", "openai:gpt-4o-mini"])
    assert hosted.exit_code == 0 and "needs an API key: set OPENAI_API_KEY" in hosted.stderr
    hosted_id = hosted.stdout.strip().splitlines()[-1]
    checked = runner.invoke(app, ["app", "check", hosted_id])
    assert checked.exit_code == 1 and "NOT READY" in checked.stdout and "OPENAI_API_KEY" in checked.stdout
    # the command that changes the model: a new configuration version, and the check passes
    changed = runner.invoke(app, ["app", "set", hosted_id, "--model", "local", "--set", "max_iterations=3"])
    assert changed.exit_code == 0 and changed.stdout.strip() == "2", changed.output
    shown = json.loads(runner.invoke(app, ["app", "show", hosted_id, "--json"]).stdout)
    assert shown["config"]["model"] == "local" and shown["config"]["max_iterations"] == 3
    assert runner.invoke(app, ["app", "check", hosted_id]).exit_code == 0
    bad = runner.invoke(app, ["app", "set", hosted_id, "--set", "strategy=sideways"])
    assert bad.exit_code == 1 and "strategy" in bad.output
    nothing = runner.invoke(app, ["app", "set", hosted_id])
    assert nothing.exit_code == 2 and "nothing to change" in nothing.output


def test_ask_an_unknown_app_says_there_is_no_such_app(db_path: Path) -> None:
    result = CliRunner().invoke(app, ["app", "ask", "no-such-app", "hi"])
    assert result.exit_code == 1 and "no app with id 'no-such-app'" in result.stderr


@pytest.mark.parametrize("export", sorted((Path(__file__).parent.parent / "examples" / "dify").glob("*.yml")))
def test_the_example_exports_import_on_the_embedded_model(db_path: Path, export: Path) -> None:
    made = CliRunner().invoke(app, ["app", "create", "--from-yaml", str(export), "--model", "local"])
    assert made.exit_code == 0, made.output
    assert "replaced by local" in made.stderr


def test_app_create_makes_chat_and_completion_apps(db_path: Path) -> None:
    runner = CliRunner()
    chat = runner.invoke(app, ["app", "create", "helper", "--mode", "chat", "--instruction", "Be brief."])
    assert chat.exit_code == 0, chat.output
    completion = runner.invoke(
        app, ["app", "create", "summer", "--mode", "completion", "--instruction", "Sum up:"]
    )
    assert completion.exit_code == 0, completion.output
    shown = json.loads(runner.invoke(app, ["app", "show", completion.stdout.strip(), "--json"]).stdout)
    # Dify's new text generator: a required `query` paragraph, which the instruction shows
    assert [(f["variable"], f["type"], f["required"]) for f in shown["config"]["user_input_form"]] == [
        ("query", "paragraph", True)
    ]
    assert shown["config"]["instruction"] == "Sum up:\n\n{{query}}"
    listed = runner.invoke(app, ["app", "show", chat.stdout.strip()])
    assert "mode: chat" in listed.stdout
    with_tools = runner.invoke(app, ["app", "create", "bad", "--mode", "chat", "--tool", "calculator"])
    assert with_tools.exit_code == 1 and "a chat app has no tools" in with_tools.stderr
    unknown = runner.invoke(app, ["app", "create", "bad", "--mode", "workflow"])
    assert unknown.exit_code == 1 and "'agent-chat', 'agent', 'chat' or 'completion'" in unknown.stderr


def test_an_apps_mode_stays_what_it_was_made_as(db_path: Path) -> None:
    runner = CliRunner()
    made = runner.invoke(app, ["app", "create", "helper", "--mode", "chat"])
    changed = runner.invoke(app, ["app", "set", made.stdout.strip(), "--set", "mode=agent-chat"])
    assert changed.exit_code == 1 and "its mode cannot change" in changed.stderr


def test_from_yaml_with_another_mode_is_refused(db_path: Path) -> None:
    export = Path(__file__).parent.parent / "examples" / "dify" / "sql-creator.yml"
    made = CliRunner().invoke(
        app, ["app", "create", "--from-yaml", str(export), "--model", "local", "--mode", "chat"]
    )
    assert made.exit_code == 1 and "the file is a completion app, not chat" in made.stderr
