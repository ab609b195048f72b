"""The server's allow-list of tool sources: which tools, APIs, MCP servers, apps and knowledge bases an
app may use (``tool_sources`` in loopwright.toml, ``LOOPWRIGHT_TOOL_SOURCES``).

Each entry is ``kind:pattern`` — kind ``builtin``, ``openapi``, ``mcp``, ``a2a``, ``app`` or
``knowledge``, the pattern a shell-style wildcard (``fnmatch``) — or ``kind`` alone (any of that kind),
or ``*`` (anything). What an app's configuration names is matched as:

- ``builtin:<tool name>`` for each of its ``tools``;
- ``openapi:<host>`` — the host of ``server_url`` if set, else of the spec's URL; a spec read from a
  file without ``server_url`` is ``openapi:<path>``;
- ``mcp:<command>`` (stdio, the command as written) or ``mcp:<url>`` (HTTP transports);
- ``a2a:<host>`` — the host of the agent's card URL;
- ``app:<app id>`` (an app called as a tool, or handed conversations: ``handoffs``) and
  ``knowledge:<dataset>`` (each dataset named).

An empty allow-list allows everything (the default). A configuration naming anything else is refused
when an app is created or imported and when a toolset is added (``app.admin.apps``), and an app stored
before the list was set is refused when it runs, each with :class:`ToolSourceNotAllowedError` naming
the source and the setting.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit

from loopwright.app.config import AppConfig
from loopwright.errors import UserInputError

SETTING_HINT = "tool_sources in loopwright.toml or LOOPWRIGHT_TOOL_SOURCES"


class ToolSourceNotAllowedError(UserInputError):
    """An app names a tool source the server's allow-list does not have."""

    def __init__(self, source: str) -> None:
        self.source = source
        super().__init__(
            f"the app uses a tool source this server does not allow: {source} (see {SETTING_HINT})"
        )


def _host(url: str) -> str | None:
    if not url.startswith(("http://", "https://")):
        return None
    return (urlsplit(url).hostname or "").lower() or None


def toolset_names(entry: dict[str, Any]) -> list[str]:
    """The names one ``toolsets`` entry is matched by."""
    kind = entry.get("type")
    if kind == "openapi":
        server = entry.get("server_url") or ""
        spec = str(entry.get("spec") or "")
        host = _host(server) or _host(spec)
        return [f"openapi:{host or spec}"]
    if kind == "mcp":
        target = entry.get("command") if entry.get("transport", "stdio") == "stdio" else entry.get("url")
        return [f"mcp:{target or ''}"]
    if kind == "a2a":
        url = str(entry.get("url") or "")
        return [f"a2a:{_host(url) or url}"]
    if kind == "app":
        return [f"app:{entry.get('app_id') or ''}"]
    if kind == "knowledge":
        return [f"knowledge:{d}" for d in entry.get("datasets") or []]
    return [f"{kind}:"]


def source_names(tools: Iterable[str], toolsets: Iterable[dict[str, Any]]) -> list[str]:
    """Every name an app configuration's tools and toolsets are matched by."""
    names = [f"builtin:{t}" for t in tools]
    for entry in toolsets:
        names.extend(toolset_names(entry))
    return names


def allowed(name: str, allow: Sequence[str]) -> bool:
    kind, _, value = name.partition(":")
    for entry in allow:
        if entry == "*" or entry == kind:
            return True
        entry_kind, _, pattern = entry.partition(":")
        if entry_kind == kind and fnmatchcase(value.lower() if kind == "openapi" else value, pattern):
            return True
    return False


def check_config(config: AppConfig, allow: Sequence[str]) -> None:
    """:func:`check_sources` of an app configuration; the apps it hands conversations to
    (``handoffs``) are matched as ``app:<app id>``, as apps called as tools."""
    handoffs = [{"type": "app", "app_id": h.app} for h in config.handoffs]
    check_sources([t.name for t in config.tools], [*config.toolsets, *handoffs], allow)


def check_sources(tools: Iterable[str], toolsets: Iterable[dict[str, Any]], allow: Sequence[str]) -> None:
    """Raise :class:`ToolSourceNotAllowedError` for the first source ``allow`` does not have (an empty
    ``allow`` has everything)."""
    if not allow:
        return
    for name in source_names(tools, toolsets):
        if not allowed(name, allow):
            raise ToolSourceNotAllowedError(name)
