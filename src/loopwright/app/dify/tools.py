"""What each tool of a Dify agent app becomes here: a built-in, a Dify plugin, an MCP server, an app, or an
OpenAPI toolset — every tool is kept when there is a way to run it, and the report says which way.

- ``provider_type: builtin`` — Dify's own remaining core providers (``time``, ``webscraper``, ``audio``,
  ``code``) become loopwright's built-ins of the same tool names; every other provider is a Dify plugin,
  named by its plugin id (``langgenius/searxng/searxng``) or by the short id exports from before Dify 1.0
  use (``searxng``), and becomes a ``dify_plugin`` toolset entry
  ``{type, plugin: "author/name", provider, tools, parameters}`` that the plugin host runs.
- ``provider_type: mcp`` — the MCP server configured for that provider's name (``ImportOptions``).
- ``provider_type: workflow`` — the loopwright app mapped to that workflow tool (``--map-workflow``).
- ``provider_type: api`` — the OpenAPI toolset of the spec given for that provider.

Tool parameter presets (``tool_parameters``) are kept as the export has them — ``null``, model-selector
objects and composite keys such as ``voice#<provider>#<model>`` included — for the runner to apply to the
tool's ``form`` parameters, as Dify does. ``enabled: false`` tools are left out silently.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Dify's rule for short provider ids (models/provider_ids.py, ToolProviderID): ``x`` is
# ``langgenius/x/x``, and these providers live in a plugin named ``<provider>_tool``.
_TOOL_SUFFIXED = frozenset({"jina", "siliconflow", "stepfun", "gitee_ai"})
# Official plugins whose plugin name is not their provider's name (from the manifests of
# langgenius/dify-official-plugins, tools/*): provider → plugin name; and old built-in providers that
# moved into another plugin.
_PLUGIN_OF_PROVIDER = {
    "fishaudio": "fish_audio_tool",
    "gpustack": "gpustack_tools",
    "llama_cloud": "llama_parse",
    "excel365": "microsoft_excel365",
    "minimax_tts": "minimax_tts_tool",
    "microsoft_onedrive": "onedrive",
    "openai": "openai_tool",
    "whatsapp": "whatsapp-bot",
    "zhipuai": "zhipuai_tool",
    "aws_tools": "aws_tools",
}
_MOVED_PROVIDERS = {
    "aws": ("aws_tools", "aws_tools"),  # the pre-1.0 built-in ``aws`` is the ``aws_tools`` plugin
    "dalle": ("openai_tool", "openai"),  # dalle2 / dalle3 are tools of the OpenAI tool plugin
    "onedrive": ("onedrive", "microsoft_onedrive"),
}
_ID = re.compile(r"^[a-z0-9_-]+$")

# Dify's core built-in providers (api/core/tools/builtin_tool/providers) that loopwright runs natively:
# provider → {Dify tool name: (built-in name, the tool's ``form`` parameters a preset may set)}.
NATIVE_TOOLS: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "time": {
        "current_time": ("current_time", ("timezone",)),
        "weekday": ("weekday", ()),
        "timezone_conversion": ("timezone_conversion", ()),
        "localtime_to_timestamp": ("localtime_to_timestamp", ()),
        "timestamp_to_localtime": ("timestamp_to_localtime", ()),
    },
    "webscraper": {"webscraper": ("webscraper", ("user_agent", "generate_summary"))},
    "audio": {"tts": ("tts", ("model", "voice")), "asr": ("asr", ("model",))},
    "code": {"simple_code": ("simple_code", ())},
    # the maths plugin's one tool is loopwright's calculator (same parameter, same job)
    "maths": {"eval_expression": ("calculator", ())},
    "math": {"eval_expression": ("calculator", ())},
}


@dataclass(frozen=True)
class ImportOptions:
    """What the export cannot say: where the MCP servers are, which apps stand for workflow tools, and
    where the specs of custom API tools are — each keyed by the Dify provider's name or id."""

    mcp_servers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # → an ``mcp`` toolset
    workflows: Mapping[str, str] = field(default_factory=dict)  # → a loopwright app id
    api_specs: Mapping[str, str] = field(default_factory=dict)  # → an OpenAPI file or URL
    skill_dirs: Sequence[str] = ()  # folders holding an ``agent`` export's skills by name (.dsl_agent)


@dataclass(frozen=True)
class ToolImport:
    """One tool of the export and what it became (``kept`` False: left out, ``became`` says why)."""

    tool: str
    provider: str
    provider_type: str
    became: str
    kept: bool = True


@dataclass
class ToolMapping:
    """The app's tools: built-ins by name (``AppConfig.tools``), toolset entries (``AppConfig.toolsets``)
    and the per-tool report."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    toolsets: list[dict[str, Any]] = field(default_factory=list)
    report: list[ToolImport] = field(default_factory=list)


def plugin_of(provider_id: str) -> tuple[str, str] | None:
    """``(plugin id "author/name", provider)`` for a Dify tool provider id — ``author/name/provider`` or an
    old short id — or None when it is neither."""
    value = provider_id.strip()
    if value in _MOVED_PROVIDERS:
        name, provider = _MOVED_PROVIDERS[value]
        return f"langgenius/{name}", provider
    parts = value.split("/")
    if len(parts) == 1 and _ID.match(value):
        parts = ["langgenius", value, value]
    if len(parts) != 3 or not all(_ID.match(p) for p in parts):
        return None
    author, name, provider = parts
    if author == "langgenius" and name == provider:
        name = f"{provider}_tool" if provider in _TOOL_SUFFIXED else _PLUGIN_OF_PROVIDER.get(provider, name)
    return f"{author}/{name}", provider


def native_provider(provider_id: str) -> str | None:
    """The Dify core provider loopwright runs natively (``time``, ``langgenius/time/time``…), or None."""
    value = provider_id.strip()
    short = value.split("/")[-1] if value.count("/") == 2 and value.startswith("langgenius/") else value
    return short if short in NATIVE_TOOLS else None


def map_tools(entries: Sequence[Mapping[str, Any]], options: ImportOptions) -> ToolMapping:
    """Every enabled tool of ``agent_mode.tools``, mapped (see the module's docstring)."""
    out = ToolMapping()
    plugins: dict[tuple[str, str], dict[str, Any]] = {}
    grouped: dict[tuple[str, str], dict[str, Any]] = {}  # (kind, key) → an MCP / OpenAPI toolset entry
    for entry in entries:
        if entry.get("enabled") is False:
            continue
        kind = str(entry.get("provider_type") or "builtin")
        tool = str(entry.get("tool_name") or "")
        provider = str(entry.get("provider_id") or entry.get("provider_name") or "")
        presets = entry.get("tool_parameters") or {}
        presets = dict(presets) if isinstance(presets, Mapping) else {}
        if kind == "builtin":
            result = _builtin(tool, provider, presets, out, plugins)
        elif kind == "mcp":
            result = _grouped("mcp", tool, entry, options, grouped, out)
        elif kind == "api":
            result = _grouped("api", tool, entry, options, grouped, out)
        elif kind == "workflow":
            result = _workflow(tool, entry, options, out)
        else:
            result = f"left out: provider type {kind!r} is not known here"
        kept = not result.startswith("left out")
        out.report.append(ToolImport(tool, provider, kind, result, kept))
    return out


def _builtin(
    tool: str,
    provider: str,
    presets: dict[str, Any],
    out: ToolMapping,
    plugins: dict[tuple[str, str], dict[str, Any]],
) -> str:
    native = native_provider(provider)
    if native is not None:
        spec = NATIVE_TOOLS[native].get(tool)
        if spec is None:
            return f"left out: Dify's {native} provider has no tool {tool!r}"
        name, form = spec
        values = _native_values(native, tool, presets, form)
        out.tools.append({"name": name, "form_values": values} if values else {"name": name})
        return f"built-in {name}"
    ref = plugin_of(provider)
    if ref is None:
        return f"left out: {provider!r} is not a Dify plugin id (author/name/provider)"
    plugin, provider_name = ref
    entry = plugins.get(ref)
    if entry is None:
        entry = plugins[ref] = {
            "type": "dify_plugin",
            "plugin": plugin,
            "provider": provider_name,
            "tools": [],
            "parameters": {},
        }
        out.toolsets.append(entry)
    if tool not in entry["tools"]:
        entry["tools"].append(tool)
    if presets:
        entry["parameters"][tool] = presets
    return f"Dify plugin {plugin} (provider {provider_name})"


def _native_values(native: str, tool: str, presets: dict[str, Any], form: tuple[str, ...]) -> dict[str, Any]:
    """The presets of a native tool's ``form`` parameters; the audio tools' model (Dify's
    ``provider#model`` value) and voice (its ``voice#provider#model`` composite key) are unpacked."""
    if native == "audio":
        chosen = presets.get("model")
        values: dict[str, Any] = {}
        if isinstance(chosen, str) and chosen:
            values["model"] = chosen.rsplit("#", 1)[-1]
            voice = presets.get(f"voice#{chosen}") or presets.get("voice")  # Dify's key, or ours
            if isinstance(voice, str) and voice and tool == "tts":
                values["voice"] = voice
        return values
    return {k: v for k, v in presets.items() if k in form and v not in (None, "")}


def _grouped(
    kind: str,
    tool: str,
    entry: Mapping[str, Any],
    options: ImportOptions,
    grouped: dict[tuple[str, str], dict[str, Any]],
    out: ToolMapping,
) -> str:
    """An MCP or custom-API tool: one toolset per provider, offering the tools the app chose (their
    presets are values of ``llm`` parameters, which Dify does not apply either)."""
    names = [str(entry.get(k) or "") for k in ("provider_name", "provider_id")]
    names = [n for n in names if n]
    table: Mapping[str, Any] = options.mcp_servers if kind == "mcp" else options.api_specs
    key = next((n for n in names if n in table), None)
    label = names[0] if names else "?"
    if key is None:
        how = "--mcp NAME=URL" if kind == "mcp" else "--api-spec NAME=SPEC"
        what = "MCP server" if kind == "mcp" else "OpenAPI spec"
        return f"left out: no {what} is configured for {label!r} (give {how})"
    toolset = grouped.get((kind, key))
    if toolset is None:
        if kind == "mcp":
            toolset = {**dict(table[key]), "type": "mcp", "tools": []}
        else:
            toolset = {"type": "openapi", "spec": str(table[key]), "include": []}
        grouped[(kind, key)] = toolset
        out.toolsets.append(toolset)
    selection = toolset["tools"] if kind == "mcp" else toolset["include"]
    if tool not in selection:
        selection.append(tool)
    return f"MCP server {key!r}" if kind == "mcp" else f"OpenAPI toolset {table[key]}"


def _workflow(tool: str, entry: Mapping[str, Any], options: ImportOptions, out: ToolMapping) -> str:
    names = [str(entry.get(k) or "") for k in ("provider_id", "provider_name", "tool_name")]
    key = next((n for n in names if n and n in options.workflows), None)
    if key is None:
        given = names[0] or tool
        return f"left out: workflow tool {tool!r} is mapped to no app (give --map-workflow {given}=APP)"
    app_id = options.workflows[key]
    source: dict[str, Any] = {"type": "app", "app_id": app_id, "name": tool}
    label = entry.get("tool_label") or entry.get("tool_description")
    if isinstance(label, str) and label:
        source["description"] = label
    out.toolsets.append(source)
    return f"app {app_id}"
