"""The tools ``loopwright run`` and ``chat`` offer: built-ins, and the tools of installed Dify plugins.

``--tool NAME`` names a built-in tool, a tool of an installed plugin (``loopwright plugins install``)
by its name, by ``AUTHOR/PLUGIN/TOOL`` when two plugins have a tool of that name, or every tool of a
plugin by ``AUTHOR/PLUGIN``. A plugin's tools run as they do in an app (each plugin in its own
environment, its stored credentials read at call time); the plugin host is closed after the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from loopwright.cli._common import UsageError
from loopwright.tools.base import Tool, ToolLike

if TYPE_CHECKING:
    from loopwright.tools.dify_plugins import DifyPlugins, DifyPluginSource, InstalledPlugin


@dataclass
class ToolChoice:
    """The tools a run offers: built-ins, and the installed plugins' tools by plugin and provider."""

    builtins: list[Tool]
    plugin_tools: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    @property
    def sources(self) -> list[DifyPluginSource]:
        from loopwright.tools.dify_plugins import DifyPluginSource

        return [
            DifyPluginSource(plugin=plugin, provider=provider, tools=tools)
            for (plugin, provider), tools in self.plugin_tools.items()
        ]


def choose_tools(wanted: Sequence[str], builtins: Sequence[Tool], default: Sequence[str]) -> ToolChoice:
    """The tools named in ``wanted`` (in order; none: the ``default`` built-ins). A name that is no
    built-in is looked up among the installed plugins' tools; an unknown or ambiguous name is a usage
    error that says what there is."""
    by_name = {t.name: t for t in builtins}
    if not wanted:
        return ToolChoice([t for t in builtins if t.name in default])
    choice = ToolChoice([by_name[n] for n in wanted if n in by_name])
    others = [n for n in wanted if n not in by_name]
    if not others:
        return choice
    index = _plugin_index(_installed())
    for name in others:
        matches = index.get(name)
        if not matches:
            raise UsageError(_unknown(name, by_name, index))
        if len(matches) > 1 and "/" not in name:
            qualified = ", ".join(f"{p}/{t}" for p, _, t in matches)
            raise UsageError(f"tool {name!r} is in more than one plugin: name one of {qualified}")
        for plugin, provider, tool in matches:
            tools = choice.plugin_tools.setdefault((plugin, provider), [])
            if tool not in tools:
                tools.append(tool)
    return choice


def _installed() -> list[InstalledPlugin]:
    from loopwright.tools.dify_plugins.installer import PluginStore
    from loopwright.tools.dify_plugins.paths import data_dir, envs_dir, plugins_dir

    return PluginStore(plugins_dir(data_dir()), envs_dir()).list()


def _plugin_index(plugins: Sequence[InstalledPlugin]) -> dict[str, list[tuple[str, str, str]]]:
    """Every name ``--tool`` takes for a plugin tool → its (plugin, provider, tool) rows."""
    index: dict[str, list[tuple[str, str, str]]] = {}
    for plugin in plugins:
        for provider in plugin.manifest.providers:
            for tool in provider.tools:
                row = (plugin.plugin_id, provider.name, tool.name)
                for key in (tool.name, f"{plugin.plugin_id}/{tool.name}", plugin.plugin_id):
                    index.setdefault(key, []).append(row)
    return index


def _unknown(name: str, builtins: dict[str, Tool], index: dict[str, list[tuple[str, str, str]]]) -> str:
    plugin_tools = sorted({t for rows in index.values() for _, _, t in rows})
    there = f"available: {', '.join(sorted(builtins))}"
    if plugin_tools:
        return f"unknown tool {name!r}; {there}; installed plugins' tools: {', '.join(plugin_tools)}"
    return f"unknown tool {name!r}; {there} (and a Dify plugin's: loopwright plugins install PATH)"


async def open_tools(choice: ToolChoice) -> tuple[list[ToolLike], DifyPlugins | None]:
    """The chosen tools ready for an agent, and the plugins' handle to close after the run (None when
    no plugin tool was chosen)."""
    tools: list[ToolLike] = list(choice.builtins)
    if not choice.plugin_tools:
        return tools, None
    from loopwright._threads import run_sync
    from loopwright.cli.plugins import open_plugins

    plugins = await run_sync(open_plugins)
    try:
        for source in choice.sources:  # the plugin's tools themselves, so the run's header names them
            tools.extend(await (await plugins.toolset(source)).get_tools())
    except BaseException:
        await plugins.aclose()
        raise
    return tools, plugins
