"""``check_app``: one readiness line per tool source, against real peers (an MCP server subprocess, a spec
file, the plugin directory)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from loopwright.app.admin.readiness import Readiness, ReadinessChecks, check_app, plugin_installed
from loopwright.app.config import AppConfig
from loopwright.tools.builtin import builtin_tools
from loopwright.tools.net import DEFAULT_POLICY

SPEC = Path(__file__).parents[1] / "tools" / "openapi" / "fixtures" / "swagger2.yaml"
TIME_SERVER = {
    "type": "mcp",
    "transport": "stdio",
    "command": sys.executable,
    "args": ["-m", "mcp_server_time"],
}


async def app_exists(app_id: str) -> bool:
    return app_id == "app-1"


async def datasets_exist(names: Sequence[str]) -> list[str]:
    return [n for n in names if n != "handbook"]


def checks(**kwargs: object) -> ReadinessChecks:
    return ReadinessChecks(builtin_tools(), DEFAULT_POLICY, app_exists, datasets_exist, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOOPWRIGHT_DATA_DIR", str(tmp_path))
    installed = tmp_path / "plugins" / "langgenius" / "searxng"
    installed.mkdir(parents=True)
    (installed / "plugin.json").write_text("{}", encoding="utf-8")  # the host's install record
    return tmp_path


def by_what(lines: list[Readiness]) -> dict[str, tuple[bool, str]]:
    return {line.what: (line.ready, line.detail) for line in lines}


async def test_plugins_are_looked_up_in_the_data_directory(data_dir: Path) -> None:
    assert plugin_installed("langgenius/searxng")
    assert not plugin_installed("langgenius/yahoo") and not plugin_installed("nonsense")
    config = AppConfig(
        toolsets=[
            {
                "type": "dify_plugin",
                "plugin": "langgenius/searxng",
                "provider": "searxng",
                "tools": ["searxng_search"],
            },
            {"type": "dify_plugin", "plugin": "langgenius/yahoo", "provider": "yahoo"},
        ]
    )
    lines = by_what(await check_app(config, checks()))
    assert lines["Dify plugin langgenius/searxng (searxng_search)"] == (True, "installed")
    ready, detail = lines["Dify plugin langgenius/yahoo (all tools)"]
    assert not ready and "loopwright plugins install" in detail


async def test_builtins_need_their_configuration() -> None:
    config = AppConfig(tools=[{"name": "current_time"}, {"name": "tts"}, {"name": "simple_code"}])  # type: ignore[list-item]
    lines = by_what(await check_app(config, checks()))
    assert lines["tool current_time"] == (True, "built-in")
    assert lines["tool tts"][0] is False and "OPENAI_BASE_URL" in lines["tool tts"][1]
    assert lines["tool simple_code"][0] is True  # this host can make a network namespace
    configured = by_what(await check_app(config, checks(audio_configured=True)))
    assert configured["tool tts"] == (True, "built-in")


async def test_mcp_servers_are_started_and_asked_for_their_tools() -> None:
    config = AppConfig(
        toolsets=[
            {**TIME_SERVER, "name": "time", "tools": ["get_current_time"]},
            {**TIME_SERVER, "name": "time-missing", "tools": ["get_weather"]},
            {"type": "mcp", "transport": "stdio", "command": "/nonexistent/mcp-server", "name": "ghost"},
        ]
    )
    lines = by_what(await check_app(config, checks()))
    assert lines["MCP server time"] == (True, "reachable, 1 tool(s)")
    assert lines["MCP server time-missing"] == (False, "has no tool get_weather")
    ready, detail = lines["MCP server ghost"]
    assert not ready and detail.startswith("not reachable")


async def test_openapi_apps_and_knowledge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PETS_KEY", raising=False)
    config = AppConfig(
        toolsets=[
            {"type": "openapi", "spec": str(SPEC), "include": ["getPet"]},
            {"type": "openapi", "spec": str(SPEC), "auth_type": "api_key_header", "api_key_env": "PETS_KEY"},
            {"type": "app", "app_id": "app-1"},
            {"type": "app", "app_id": "app-2"},
            {"type": "knowledge", "datasets": ["handbook", "faq"]},
        ]
    )
    lines = await check_app(config, checks())
    assert [(line.ready, line.detail) for line in lines] == [
        (True, "spec loads, 1 tool(s)"),
        (False, "the environment variable PETS_KEY (the API key) is not set"),
        (True, "exists"),
        (False, "no such app"),
        (False, "missing: faq"),
    ]
