"""The server's allow-list of tool sources (``app.guards.tool_allowlist``): matching, the setting, refusal
at create and import (the CLI on a real SQLite file), at adding a toolset, and at run time."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopwright.app.admin import apps as admin
from loopwright.app.config import AppConfig
from loopwright.app.guards.tool_allowlist import ToolSourceNotAllowedError, check_config, source_names
from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runtime import AppRuntime
from loopwright.cli import app as cli
from loopwright.config import ConfigError, Settings, load_settings
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.testing import ScriptedModel

CONFIG = AppConfig.model_validate(
    {
        "tools": [{"name": "calculator"}, {"name": "web_fetch"}],
        "toolsets": [
            {"type": "openapi", "spec": "https://api.example.com/openapi.json"},
            {
                "type": "openapi",
                "spec": "/srv/specs/crm.yaml",
                "server_url": "https://CRM.internal.example/v2",
            },
            {"type": "openapi", "spec": "/srv/specs/local.yaml"},
            {"type": "mcp", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]},
            {"type": "mcp", "transport": "streamable-http", "url": "https://mcp.example.com/mcp"},
            {"type": "app", "app_id": "a1b2"},
            {"type": "knowledge", "datasets": ["handbook", "faq"]},
        ],
    }
)


def test_the_names_an_app_is_matched_by() -> None:
    assert source_names([t.name for t in CONFIG.tools], CONFIG.toolsets) == [
        "builtin:calculator",
        "builtin:web_fetch",
        "openapi:api.example.com",
        "openapi:crm.internal.example",  # the host calls go to: server_url's
        "openapi:/srv/specs/local.yaml",
        "mcp:npx",
        "mcp:https://mcp.example.com/mcp",
        "app:a1b2",
        "knowledge:handbook",
        "knowledge:faq",
    ]


@pytest.mark.parametrize(
    ("allow", "refused"),
    [
        ((), None),  # no list: anything
        (("*",), None),
        (
            (
                "builtin",
                "openapi:*.example.com",
                "openapi:crm.internal.example",
                "openapi:/srv/specs/*",
                "mcp:npx",
                "mcp:https://mcp.example.com/*",
                "app:*",
                "knowledge:*",
            ),
            None,
        ),
        (("builtin:calculator",), "builtin:web_fetch"),
        (("builtin", "openapi:api.example.com"), "openapi:crm.internal.example"),
        (("builtin", "openapi", "mcp:uvx"), "mcp:npx"),
        (("builtin", "openapi", "mcp", "knowledge:handbook"), "app:a1b2"),
        (("builtin", "openapi", "mcp", "app", "knowledge:handbook"), "knowledge:faq"),
    ],
)
def test_matching(allow: tuple[str, ...], refused: str | None) -> None:
    if refused is None:
        check_config(CONFIG, allow)
        return
    with pytest.raises(ToolSourceNotAllowedError) as info:
        check_config(CONFIG, allow)
    assert info.value.source == refused
    assert str(info.value) == (
        f"the app uses a tool source this server does not allow: {refused} "
        "(see tool_sources in loopwright.toml or LOOPWRIGHT_TOOL_SOURCES)"
    )


def test_the_apps_an_app_hands_conversations_to_are_matched_as_apps() -> None:
    config = AppConfig.model_validate({"tools": [], "handoffs": [{"app": "b3c4", "description": "billing"}]})
    check_config(config, ("app:b3c4",))
    with pytest.raises(ToolSourceNotAllowedError) as info:
        check_config(config, ("builtin", "app:a1b2"))
    assert info.value.source == "app:b3c4"


def test_the_setting_from_the_environment_and_the_file(tmp_path: Path) -> None:
    settings = load_settings({"LOOPWRIGHT_TOOL_SOURCES": "builtin, openapi:*.example.com"}, path=None)
    assert settings.tool_sources == ("builtin", "openapi:*.example.com")
    toml = tmp_path / "loopwright.toml"
    toml.write_text('tool_sources = ["builtin:calculator", "app:*"]\n', encoding="utf-8")
    assert load_settings({}, path=toml).tool_sources == ("builtin:calculator", "app:*")
    with pytest.raises(ConfigError, match="LOOPWRIGHT_TOOL_SOURCES: tool_sources: 'plugin:x' must be"):
        load_settings({"LOOPWRIGHT_TOOL_SOURCES": "plugin:x"})


@pytest.fixture
def db_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "lw.db"
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("LOOPWRIGHT_CONFIG", raising=False)
    monkeypatch.setenv("LOOPWRIGHT_DB", str(path))
    monkeypatch.chdir(tmp_path)
    return path


def test_create_and_import_refuse_a_source_not_allowed(
    db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPWRIGHT_TOOL_SOURCES", "builtin:calculator")
    runner = CliRunner()
    made = runner.invoke(cli, ["app", "create", "Calc", "--tool", "calculator"])
    assert made.exit_code == 0, made.output
    refused = runner.invoke(cli, ["app", "create", "Fetch", "--tool", "web_fetch"])
    assert refused.exit_code == 1
    assert "error: the app uses a tool source this server does not allow: builtin:web_fetch" in refused.output
    yaml_file = db_file.parent / "app.yaml"
    yaml_file.write_text(
        "name: Crm\ntools:\n  - name: calculator\ntoolsets:\n"
        "  - type: mcp\n    transport: streamable-http\n    url: https://mcp.example.com/mcp\n",
        encoding="utf-8",
    )
    imported = runner.invoke(cli, ["app", "create", "--from-yaml", str(yaml_file)])
    assert imported.exit_code == 1
    assert "not allow: mcp:https://mcp.example.com/mcp" in imported.output
    apps = runner.invoke(cli, ["app", "list", "--json"])
    assert apps.exit_code == 0 and apps.output.count('"name"') == 1  # only Calc was stored


async def test_adding_a_toolset_is_refused_too(db_file: Path) -> None:
    app_id = await admin.create_app("Calc", AppConfig(), allow=("builtin",))
    with pytest.raises(ToolSourceNotAllowedError, match="app:other"):
        await admin.add_toolset(app_id, {"type": "app", "app_id": "other"}, allow=("builtin", "knowledge"))
    assert (
        await admin.add_toolset(app_id, {"type": "knowledge", "datasets": ["faq"]}, allow=("knowledge",)) == 2
    )


async def test_an_app_stored_before_the_list_is_refused_when_it_runs(db: Database) -> None:
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "fetch", {"model": "scripted", "tools": [{"name": "calculator"}]})
    runtime = AppRuntime(
        db, Settings(tool_sources=("builtin:web_fetch",)), models={"scripted": ScriptedModel([])}
    )
    try:
        with pytest.raises(ToolSourceNotAllowedError, match="builtin:calculator"):
            await runtime.start(MessageRequest(app.id, "alice", "1 + 1?"))
    finally:
        await runtime.aclose()
