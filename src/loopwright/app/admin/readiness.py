"""Whether every tool of an app is ready to run: one check per kind of tool source (``loopwright app check``).

- built-ins: the tool exists; ``tts``/``asr`` have an audio endpoint; ``simple_code`` has its sandbox
  (unprivileged user, network, mount and pid namespaces);
- ``dify_plugin``: the plugin is installed (:func:`plugin_installed`);
- ``mcp``: the server answers and has the tools the app chose;
- ``openapi``: the spec loads, has the operations the app chose, and its key's variable is set;
- ``app``: the app exists;
- ``knowledge``: the knowledge bases exist.

A check never raises: a failure is a line saying what is missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pydantic

from loopwright._threads import run_sync
from loopwright.app._validation import first_error
from loopwright.app.toolset_sources import (
    AppToolSource,
    KnowledgeSource,
    source_model,
    split_selection,
)
from loopwright.tools.dify_plugins.source import DifyPluginSource

if TYPE_CHECKING:
    from loopwright.app.config import AppConfig
    from loopwright.tools.base import Tool
    from loopwright.tools.net import NetworkPolicy

CHECK_TIMEOUT = 20.0  # seconds for one source (an MCP server's start, a spec download)


@dataclass(frozen=True)
class Readiness:
    """One tool or tool source: whether it is ready, and if not, what to do."""

    what: str
    ready: bool
    detail: str = ""


def plugin_installed(plugin: str) -> bool:
    """Whether the Dify plugin ``author/name`` is installed (the plugin host's store says)."""
    from loopwright.tools.dify_plugins.installer import PluginStore
    from loopwright.tools.dify_plugins.paths import plugins_dir

    return PluginStore(plugins_dir()).has(plugin)


@dataclass
class ReadinessChecks:
    """What the checks need from the runtime around them."""

    builtins: Sequence[Tool]
    policy: NetworkPolicy
    app_exists: Callable[[str], Awaitable[bool]]
    datasets_exist: Callable[[Sequence[str]], Awaitable[list[str]]] | None = None  # → the missing ones
    plugin_installed: Callable[[str], bool] = plugin_installed
    audio_configured: bool = False


async def check_app(config: AppConfig, checks: ReadinessChecks) -> list[Readiness]:
    """One line per built-in tool and per toolset of ``config``."""
    sandbox_problem = None
    if any(tc.name == "simple_code" for tc in config.tools):
        from loopwright.tools.sandbox import network_namespace_problem

        sandbox_problem = await run_sync(network_namespace_problem)  # runs a subprocess once
    out = [_builtin(tc.name, checks, sandbox_problem) for tc in config.tools]
    results = await asyncio.gather(*(_guarded(entry, checks) for entry in config.toolsets))
    out.extend(results)
    return out


def _builtin(name: str, checks: ReadinessChecks, sandbox_problem: str | None) -> Readiness:
    if name not in {t.name for t in checks.builtins}:
        return Readiness(f"tool {name}", False, "no such built-in tool")
    if name in ("tts", "asr") and not checks.audio_configured:
        return Readiness(f"tool {name}", False, "no audio endpoint: set OPENAI_BASE_URL / OPENAI_API_KEY")
    if name == "simple_code" and sandbox_problem is not None:
        return Readiness(f"tool {name}", False, f"no sandbox: {sandbox_problem}")
    return Readiness(f"tool {name}", True, "built-in")


async def _guarded(entry: Mapping[str, Any], checks: ReadinessChecks) -> Readiness:
    label = f"{entry.get('type')} toolset"
    try:
        return await asyncio.wait_for(_source(entry, checks), CHECK_TIMEOUT)
    except TimeoutError:
        return Readiness(label, False, f"no answer within {CHECK_TIMEOUT:g} s")
    except pydantic.ValidationError as exc:
        return Readiness(label, False, f"invalid: {first_error(exc)}")
    except Exception as exc:  # a check reports, never raises
        return Readiness(label, False, str(exc) or type(exc).__name__)


async def _source(entry: Mapping[str, Any], checks: ReadinessChecks) -> Readiness:
    fields, selection = split_selection(entry)
    source = source_model(fields.get("type")).model_validate(fields)
    if isinstance(source, DifyPluginSource):
        what = f"Dify plugin {source.plugin} ({', '.join(source.tools or []) or 'all tools'})"
        if checks.plugin_installed(source.plugin):
            return Readiness(what, True, "installed")
        return Readiness(what, False, f"not installed: loopwright plugins install <{source.plugin} .difypkg>")
    if isinstance(source, AppToolSource):
        ok = await checks.app_exists(source.app_id)
        return Readiness(f"app {source.app_id}", ok, "exists" if ok else "no such app")
    if isinstance(source, KnowledgeSource):
        what = f"knowledge bases {', '.join(source.datasets)}"
        if checks.datasets_exist is None:
            return Readiness(what, True, "not checked here")
        missing = await checks.datasets_exist(source.datasets)
        return Readiness(what, not missing, f"missing: {', '.join(missing)}" if missing else "exist")
    if fields.get("type") == "mcp":
        return await _mcp(source, selection, checks)
    return await _openapi(source, checks)


async def _mcp(source: Any, selection: list[str] | None, checks: ReadinessChecks) -> Readiness:
    server = source.build(checks.policy)
    what = f"MCP server {source.name or source.url or source.command}"
    try:
        tools = await server.list_tools()
    except Exception as exc:
        return Readiness(what, False, f"not reachable: {exc}")
    finally:
        await server.aclose()
    return _has(what, {t.name for t in tools}, selection, "reachable")


async def _openapi(source: Any, checks: ReadinessChecks) -> Readiness:
    what = f"OpenAPI toolset {source.spec}"
    source.auth()  # raises when the key's variable is unset
    toolset = source.build(checks.policy)
    operations = await toolset.load()
    return _has(what, {op.name for op in operations}, source.include, "spec loads")


def _has(what: str, names: set[str], wanted: Sequence[str] | None, ok: str) -> Readiness:
    missing = [n for n in wanted or () if n not in names]
    if missing:
        return Readiness(what, False, f"has no tool {', '.join(missing)}")
    return Readiness(what, True, f"{ok}, {len(wanted) if wanted else len(names)} tool(s)")
