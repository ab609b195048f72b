"""The tool sources an app configuration may name in ``toolsets``, and their checking.

An app's ``toolsets`` are plain mappings with a ``type``; each is validated by its source model
(``OpenAPISource``, ``MCPSource``, ``A2ASource``, :class:`AppToolSource`, :class:`KnowledgeSource`,
:class:`~loopwright.tools.dify_plugins.source.DifyPluginSource`), imported only
when an app uses that kind, since the OpenAPI and MCP stacks take about a second to import.
``loopwright.app.config`` checks them when a configuration is loaded; ``loopwright.app.toolsets``
builds them when an app runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import pydantic

SOURCE_TYPES = ("openapi", "mcp", "a2a", "app", "knowledge", "dify_plugin")
# Any source but a Dify plugin (which names its tools itself) may offer only some of its tools:
# ``tools: [names]`` beside its own fields.
SELECTION_KEY = "tools"


class AppToolSource(pydantic.BaseModel):
    """Another app of this server, called as a tool (its ``query`` and input form as parameters)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    type: Literal["app"] = "app"
    app_id: str = pydantic.Field(min_length=1)
    name: str | None = None  # the tool's name; default: the app's name
    description: str = ""
    max_depth: int = pydantic.Field(5, ge=1, le=20)


class KnowledgeSource(pydantic.BaseModel):
    """Knowledge bases (ids or names), one retriever tool each."""

    model_config = pydantic.ConfigDict(extra="forbid")

    type: Literal["knowledge"] = "knowledge"
    datasets: list[str] = pydantic.Field(min_length=1)
    top_k: int | None = pydantic.Field(None, ge=1, le=100)
    score_threshold: float | None = pydantic.Field(None, ge=0, le=1)


def split_selection(entry: Mapping[str, Any]) -> tuple[dict[str, Any], list[str] | None]:
    """``(the source's own fields, the tools it offers or None for all)`` of a toolset entry."""
    fields = dict(entry)
    if fields.get("type") == "dify_plugin" or SELECTION_KEY not in fields:
        return fields, None
    chosen = fields.pop(SELECTION_KEY)
    if not isinstance(chosen, list) or not all(isinstance(n, str) for n in chosen):
        raise ValueError(f"{SELECTION_KEY} must be a list of tool names")
    return fields, chosen


def source_model(kind: object) -> type[pydantic.BaseModel]:
    """The model that validates a toolset of this ``type``."""
    if kind == "openapi":
        from loopwright.tools.openapi.source import OpenAPISource

        return OpenAPISource
    if kind == "mcp":
        from loopwright.tools.mcp.source import MCPSource

        return MCPSource
    if kind == "a2a":
        from loopwright.tools.a2a.source import A2ASource

        return A2ASource
    if kind == "app":
        return AppToolSource
    if kind == "knowledge":
        return KnowledgeSource
    if kind == "dify_plugin":
        from loopwright.tools.dify_plugins.source import DifyPluginSource

        return DifyPluginSource
    raise ValueError(f"unknown toolset type {kind!r}; expected one of: {', '.join(SOURCE_TYPES)}")


def check_source(entry: Mapping[str, Any]) -> dict[str, Any]:
    """``entry`` as given (secrets stay as written), once its source model accepts it."""
    fields, _ = split_selection(entry)
    source_model(fields.get("type")).model_validate(fields)
    return dict(entry)
