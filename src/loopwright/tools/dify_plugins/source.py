"""``DifyPluginSource``: an installed plugin's tools as written in an app configuration::

    toolsets:
      - type: dify_plugin
        plugin: langgenius/searxng          # author/name
        provider: searxng                   # optional: the plugin's only provider by default
        tools: [searxng_search]             # optional: all of the provider's tools by default
        parameters: {searxng_search: {search_type: news}}   # presets of form parameters
        credentials: {searxng_base_url: …}  # optional: else those set with `loopwright plugins credentials`

``prefix`` (put before each tool's name, when two plugins name tools alike: chart and echarts both
have ``bar_chart``) and ``timeout`` (seconds per call) are optional too.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

PLUGIN_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$"


class DifyPluginSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["dify_plugin"] = "dify_plugin"
    plugin: str
    provider: str | None = None
    tools: list[str] | None = None
    parameters: dict[str, dict[str, Any]] = Field(default_factory=dict)
    credentials: dict[str, Any] | None = Field(default=None, repr=False)  # may hold API keys
    prefix: str = ""
    timeout: float | None = Field(default=None, gt=0)

    @field_validator("parameters", mode="before")
    @classmethod
    def _parameters(cls, value: Any) -> Any:
        """``None`` (a tool with no presets, as an export may write it) counts as none."""
        if value is None:
            return {}
        if isinstance(value, dict):
            return {tool: presets or {} for tool, presets in value.items()}
        return value

    @field_validator("plugin", mode="before")
    @classmethod
    def _plugin(cls, value: Any) -> Any:
        """``author/name``; a Dify plugin id with its provider (``author/name/provider``) is cut to it."""
        import re

        if isinstance(value, str):
            parts = [p for p in value.strip().split("/") if p]
            if len(parts) == 3:
                value = "/".join(parts[:2])
            if not re.match(PLUGIN_ID, value):
                raise ValueError(f"plugin must be 'author/name' (as langgenius/searxng), not {value!r}")
        return value
