"""``SelectedTools`` and the ``tools`` selection of a toolset entry (built by the app's toolset pool)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from loopwright.app.config import AppConfig, ConfigImportError, load_app_yaml
from loopwright.app.toolset_sources import check_source
from loopwright.app.toolsets import ToolsetPool
from loopwright.tools.base import Tool, ToolError, ToolLike
from loopwright.tools.builtin import builtin_tools
from loopwright.tools.dify_plugins.source import DifyPluginSource
from loopwright.tools.selection import SelectedTools


class Listing:
    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = list(tools)
        self.closed = False

    async def get_tools(self) -> list[Tool]:
        return self.tools

    async def aclose(self) -> None:
        self.closed = True


async def test_only_the_named_tools_in_the_inner_order_and_close_passes_on() -> None:
    inner = Listing(builtin_tools())
    selected = SelectedTools(inner, ["weekday", "calculator"])
    assert [t.name for t in await selected.get_tools()] == ["calculator", "weekday"]
    await selected.aclose()
    assert inner.closed


async def test_a_misspelt_name_is_an_error_not_an_empty_toolset() -> None:
    with pytest.raises(ToolError, match="no tool 'calculater'"):
        await SelectedTools(Listing(builtin_tools()), ["calculater"]).get_tools()


def test_entries_are_checked_with_their_selection() -> None:
    entry = {"type": "app", "app_id": "a1", "tools": ["x"]}
    assert check_source(entry) == entry
    with pytest.raises(ValueError, match="list of tool names"):
        check_source({"type": "app", "app_id": "a1", "tools": "x"})
    with pytest.raises(ConfigImportError, match="plugin"):
        load_app_yaml("name: x\ntoolsets:\n  - {type: dify_plugin, plugin: no-slash, provider: p}\n")


async def test_the_pool_hands_dify_plugins_to_the_plugin_host() -> None:
    asked: list[DifyPluginSource] = []

    class Host:  # the plugin host's side of the pool (tested with real plugins in tests/tools/dify_plugins)
        async def toolset(self, source: DifyPluginSource) -> ToolLike:
            asked.append(source)
            return Listing([t for t in builtin_tools() if t.name == "calculator"])

    async def plugins() -> Host:
        return Host()

    entry = {
        "type": "dify_plugin",
        "plugin": "langgenius/maths",
        "provider": "maths",
        "tools": ["eval_expression"],
        "parameters": {"eval_expression": {"precision": None}},
    }
    config = AppConfig(toolsets=[entry, {"type": "dify_plugin", "plugin": "a/b", "provider": "b"}])
    built = await ToolsetPool(plugins=plugins).tools_for(config)  # type: ignore[arg-type]
    assert len(built) == 2 and [s.plugin for s in asked] == ["langgenius/maths", "a/b"]
    assert asked[0].parameters == {"eval_expression": {"precision": None}}
    # without a plugin host the toolset is left out (the app runs without it), not a crash
    assert await ToolsetPool().tools_for(config) == []
