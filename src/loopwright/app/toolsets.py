"""Building the tool sources an app configuration names beside its built-in tools: OpenAPI specs,
MCP servers, remote A2A agents, other apps, knowledge bases and installed Dify plugins (checked when
the configuration is saved, by :mod:`loopwright.app.toolset_sources`).

:class:`ToolsetPool` builds them for a server: one per distinct source, shared by every app and every
run — an MCP server keeps one session for all of them and is closed when the server stops.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from loopwright.app.toolset_sources import (
    AppToolSource,
    KnowledgeSource,
    source_model,
    split_selection,
)
from loopwright.tools.app_tool import AppRunner, app_tool
from loopwright.tools.base import Tool, ToolLike, ToolParameter
from loopwright.tools.dify_plugins.toolset import DifyPluginToolset

if TYPE_CHECKING:
    from loopwright.app.config import AppConfig, InputField
    from loopwright.knowledge.kb import KnowledgeBase
    from loopwright.tools.dify_plugins import DifyPlugins
    from loopwright.tools.net import NetworkPolicy

log = logging.getLogger("loopwright.app")

"""``tools(source)`` → the tools of an installed Dify plugin (the plugin host)."""

AppInfo = Callable[[str], Awaitable[tuple[str, str, "Sequence[InputField]"] | None]]
"""``info(app_id)`` → ``(name, description, input form)`` of an app, or None when it doesn't exist."""


class ToolsetPool:
    """Builds and keeps the toolsets of a server's apps (see the module's docstring)."""

    def __init__(
        self,
        *,
        policy: Callable[[], NetworkPolicy] | None = None,
        knowledge: Callable[[], KnowledgeBase] | None = None,
        app_info: AppInfo | None = None,
        app_runner: AppRunner | None = None,
        plugins: Callable[[], Awaitable[DifyPlugins]] | None = None,
    ) -> None:
        self._policy = policy  # read when a source is built (the settings may be loaded late)
        self._knowledge = knowledge
        self._app_info = app_info
        self._app_runner = app_runner
        self._plugins = plugins  # the Dify plugin host, opened on first use
        self._built: dict[str, ToolLike] = {}

    async def tools_for(self, config: AppConfig) -> list[ToolLike]:
        """The tools and toolsets of ``config.toolsets``; a source that cannot be built is left out
        with a warning (the app runs without it) — as an MCP server that fails to start."""
        out: list[ToolLike] = []
        for entry in config.toolsets:
            key = json.dumps(entry, sort_keys=True, default=str)
            built = self._built.get(key)
            if built is None:
                try:
                    built = await self._build(entry)
                except Exception as exc:  # one broken source must not take the app down
                    log.warning("toolset %s is left out: %s", entry.get("type"), exc)
                    continue
                self._built[key] = built
            # A plugin's tools are known from its files: listed one by one, they have their labels.
            if isinstance(built, DifyPluginToolset):
                out.extend(built.tools)
            else:
                out.append(built)
        return out

    async def aclose(self) -> None:
        """Close what holds sessions or connections (MCP servers)."""
        for built in self._built.values():
            close = getattr(built, "aclose", None)
            if close is not None:
                try:
                    await close()
                except Exception as exc:
                    log.warning("closing a toolset failed: %s", exc)
        self._built.clear()

    async def _build(self, entry: Mapping[str, Any]) -> ToolLike:
        fields, selection = split_selection(entry)
        built = await self._build_source(fields)
        if selection is None:
            return built
        from loopwright.tools.selection import SelectedTools

        return SelectedTools(built, selection)

    async def _build_source(self, fields: Mapping[str, Any]) -> ToolLike:
        source = source_model(fields.get("type")).model_validate(dict(fields))
        if fields.get("type") == "dify_plugin":
            if self._plugins is None:
                raise ValueError("Dify plugins are not available here")
            plugins = await self._plugins()
            return await plugins.toolset(source)  # type: ignore[arg-type]  # a DifyPluginSource
        if isinstance(source, AppToolSource):
            return await self._app_tool(source)
        if isinstance(source, KnowledgeSource):
            if self._knowledge is None:
                raise ValueError("knowledge bases are not available here")
            from loopwright.tools.knowledge import KnowledgeToolset

            options = {
                k: v for k, v in (("top_k", source.top_k), ("score_threshold", source.score_threshold)) if v
            }
            return KnowledgeToolset(self._knowledge(), source.datasets, **options)
        build: Callable[..., ToolLike] = source.build  # type: ignore[attr-defined]  # OpenAPI, MCP and A2A sources
        return build(self._policy()) if self._policy is not None else build()

    async def _app_tool(self, source: AppToolSource) -> Tool:
        if self._app_info is None or self._app_runner is None:
            raise ValueError("apps cannot be called as tools here")
        info = await self._app_info(source.app_id)
        if info is None:
            raise ValueError(f"app {source.app_id} does not exist")
        name, description, form = info
        return app_tool(
            source.app_id,
            self._app_runner,
            name=source.name or name,
            description=source.description or description,
            inputs=[form_parameter(f) for f in form],
            max_depth=source.max_depth,
            streams=True,  # AppRuntime.answer streams the app's rounds
        )


def form_parameter(field: InputField) -> ToolParameter:
    """An input form field as a tool parameter the model fills."""
    if field.type == "number":
        return ToolParameter(field.variable, "number", required=field.required, description=field.label)
    if field.type == "checkbox":
        return ToolParameter(field.variable, "boolean", required=field.required, description=field.label)
    if field.type == "select":
        return ToolParameter(
            field.variable,
            "select",
            required=field.required,
            description=field.label,
            options=tuple(field.options),
        )
    return ToolParameter(field.variable, "string", required=field.required, description=field.label)
