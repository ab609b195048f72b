"""``loopwright plugins install|list|credentials|remove`` and ``app create --install-plugins`` on a
data directory of the test's own (environments from the shared cache)."""

from __future__ import annotations

import asyncio
import json
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from loopwright.cli import app
from tests.tools.dify_plugins.conftest import ENVS_CACHE, SearxngServer, fixture_plugin

runner = CliRunner()


async def in_thread(args: list[str]) -> Result:
    """The command in a thread, so this test's event loop (the SearXNG-like server's) goes on."""
    return await asyncio.to_thread(runner.invoke, app, args)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOOPWRIGHT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LOOPWRIGHT_PLUGIN_ENVS", str(ENVS_CACHE))
    monkeypatch.setenv("LOOPWRIGHT_SECRET_KEY", "cli-test-secret")
    monkeypatch.setenv("LOOPWRIGHT_DB", str(tmp_path / "lw.db"))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "data"


def pack(name: str, target: Path) -> Path:
    folder = fixture_plugin(name)
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return target


async def test_install_list_set_credentials_and_remove(data_dir: Path, searxng: SearxngServer) -> None:
    result = runner.invoke(
        app, ["plugins", "install", str(fixture_plugin("searxng")), str(fixture_plugin("regex"))]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["langgenius/searxng", "langgenius/regex"]
    assert (data_dir / "plugins/langgenius/searxng/code/manifest.yaml").is_file()
    listed = json.loads(runner.invoke(app, ["plugins", "list", "--json"]).stdout)
    by_id = {row["plugin"]: row for row in listed}
    assert by_id["langgenius/searxng"]["credentials"] == "missing: searxng_base_url"
    assert by_id["langgenius/regex"]["credentials"] == "not needed"
    assert by_id["langgenius/regex"]["tools"] == ["regex_extract"]
    bad = runner.invoke(app, ["plugins", "credentials", "searxng", "--set", "api_key=x"])
    assert bad.exit_code == 1 and "has no credential 'api_key'" in bad.output
    done = await in_thread(
        ["plugins", "credentials", "langgenius/searxng", "--set", f"searxng_base_url={searxng.url}"]
    )
    assert done.exit_code == 0, done.output
    assert searxng.url not in done.output  # values are never printed
    assert searxng.queries and searxng.queries[-1]["q"] == "SearXNG"  # the plugin checked them
    shown = runner.invoke(app, ["plugins", "credentials", "langgenius/searxng"])
    assert "searxng_base_url: set" in shown.stdout and searxng.url not in shown.stdout
    assert searxng.url.encode() not in (data_dir / "plugins/langgenius/searxng/credentials").read_bytes()
    assert "credentials set" in runner.invoke(app, ["plugins", "list"]).stdout
    assert runner.invoke(app, ["plugins", "remove", "langgenius/regex"]).exit_code == 0
    gone = runner.invoke(app, ["plugins", "remove", "langgenius/regex"])
    assert gone.exit_code == 1 and "not installed" in gone.output


async def test_credentials_the_plugin_refuses_are_not_stored(data_dir: Path, searxng: SearxngServer) -> None:
    assert runner.invoke(app, ["plugins", "install", str(fixture_plugin("searxng"))]).exit_code == 0
    searxng.status = 503
    refused = await in_thread(
        ["plugins", "credentials", "searxng", "--set", f"searxng_base_url={searxng.url}"]
    )
    assert refused.exit_code == 1 and "were not stored" in refused.output and "Error 503" in refused.output
    assert not (data_dir / "plugins/langgenius/searxng/credentials").exists()


def test_app_create_installs_a_folder_of_packages_first(data_dir: Path, tmp_path: Path) -> None:
    packages = tmp_path / "packages"
    packages.mkdir()
    pack("qrcode", packages / "qrcode-0.1.2.difypkg")
    pack("maths", packages / "maths.difypkg")
    spec = tmp_path / "app.yaml"
    spec.write_text(
        "name: tools\nmodel: local\n"
        "toolsets:\n  - type: dify_plugin\n    plugin: langgenius/qrcode\n"
        "  - type: dify_plugin\n    plugin: langgenius/maths\n"
    )
    result = runner.invoke(
        app, ["app", "create", "--from-yaml", str(spec), "--install-plugins", str(packages)]
    )
    assert result.exit_code == 0, result.output
    assert "installed langgenius/maths" in result.output and "installed langgenius/qrcode" in result.output
    assert len(result.stdout.strip().splitlines()[-1]) == 36  # the app's id
    listed = json.loads(runner.invoke(app, ["plugins", "list", "--json"]).stdout)
    assert sorted(row["plugin"] for row in listed) == ["langgenius/maths", "langgenius/qrcode"]
    empty = tmp_path / "empty"
    empty.mkdir()
    none = runner.invoke(app, ["app", "create", "--from-yaml", str(spec), "--install-plugins", str(empty)])
    assert none.exit_code == 1 and "has no .difypkg files" in none.output


def test_run_takes_an_installed_plugins_tool(data_dir: Path) -> None:
    """As a user would: install a plugin, then ``loopwright run --tool`` with one of its tools."""
    installed = runner.invoke(app, ["plugins", "install", str(fixture_plugin("regex"))])
    assert installed.exit_code == 0, installed.output
    script = data_dir.parent / "script.json"
    call = ["regex_extract", {"content": "order 66 shipped on day 12", "expression": r"\d+"}]
    replies = [{"text": "", "tool_calls": [call]}, "The numbers are 66 and 12."]
    script.write_text(json.dumps({"replies": replies * 2, "features": ["tool-call"]}), encoding="utf-8")
    env = {"LOOPWRIGHT_MODEL": f"scripted:{script}"}
    result = runner.invoke(app, ["run", "--tool", "regex_extract", "--json", "Which numbers?"], env=env)
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    finished = [e for e in events if e["type"] == "tool_call_finished"]
    assert len(finished) == 1 and finished[0]["name"] == "regex_extract"
    assert "66" in json.dumps(finished[0]) and "12" in json.dumps(finished[0])
    assert events[-1]["type"] == "finished"
    # the qualified name picks the same tool; a name no plugin has says what there is
    qualified = runner.invoke(
        app, ["run", "--tool", "langgenius/regex/regex_extract", "--json", "Which numbers?"], env=env
    )
    assert qualified.exit_code == 0, qualified.output
    unknown = runner.invoke(app, ["run", "--tool", "regex_replace", "hi"], env=env)
    assert unknown.exit_code != 0
    assert "unknown tool 'regex_replace'" in unknown.stderr and "installed plugins' tools: regex_extract" in (
        unknown.stderr
    )


def test_chat_takes_an_installed_plugins_tools_by_plugin(data_dir: Path) -> None:
    installed = runner.invoke(app, ["plugins", "install", str(fixture_plugin("regex"))])
    assert installed.exit_code == 0, installed.output
    script = data_dir.parent / "chat-script.json"
    call = ["regex_extract", {"content": "room 101", "expression": r"\d+"}]
    replies = [{"text": "", "tool_calls": [call]}, "Room 101."]
    script.write_text(json.dumps({"replies": replies, "features": ["tool-call"]}), encoding="utf-8")
    env = {"LOOPWRIGHT_MODEL": f"scripted:{script}"}
    result = runner.invoke(app, ["chat", "--tool", "langgenius/regex"], input="Which room?\n/exit\n", env=env)
    assert result.exit_code == 0, result.output
    assert "tools: regex_extract" in result.stdout and "Room 101." in result.stdout
