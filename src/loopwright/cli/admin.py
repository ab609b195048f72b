"""``loopwright app …``, ``loopwright key …`` and ``loopwright serve``: apps, their keys and the server.

Each prints what a script needs (an app id, a key) on a line of its own. The database is the one the
server uses: ``DATABASE_URL``, else ``LOOPWRIGHT_DB`` (a SQLite file), else ``loopwright.db`` in the
data directory; migrations run first, so a new file needs no setup. The work itself is
:mod:`loopwright.app.admin.apps`'s.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import asdict
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from loopwright.app.config import ImportReport
    from loopwright.app.dify.tools import ImportOptions
    from loopwright.app.run.plan import MessageRequest

apps = typer.Typer(help="Create, list, show, ask, export and delete agent-chat apps.", no_args_is_help=True)
keys = typer.Typer(help="Create, list and revoke API keys of apps.", no_args_is_help=True)


@apps.command("create")
def create_app(
    name: Annotated[
        str, typer.Argument(help="The app's name (with --from-yaml: instead of the file's).")
    ] = "",
    model: Annotated[
        str | None,
        typer.Option(
            help="Model spec, e.g. local or openai:gpt-4o-mini (with --from-yaml: instead of the file's)."
        ),
    ] = None,
    tool: Annotated[list[str] | None, typer.Option(help="A built-in tool to offer (repeatable).")] = None,
    instruction: Annotated[str, typer.Option(help="The app's instruction ({{var}} from inputs).")] = "",
    strategy: Annotated[str, typer.Option(help="auto, function-calling, react or plan.")] = "auto",
    mode: Annotated[
        str | None,
        typer.Option(help="agent-chat (default: an agent with tools), chat or completion (no tools)."),
    ] = None,
    from_yaml: Annotated[
        Path | None, typer.Option("--from-yaml", help="A loopwright app YAML or a Dify DSL export.")
    ] = None,
    install_plugins: Annotated[
        Path | None,
        typer.Option("--install-plugins", help="Install the .difypkg files of this folder first."),
    ] = None,
    mcp: Annotated[
        list[str] | None,
        typer.Option("--mcp", help="Dify import: the MCP server of a provider, NAME=URL (repeatable)."),
    ] = None,
    mcp_config: Annotated[
        Path | None,
        typer.Option("--mcp-config", help="Dify import: a YAML mapping of provider name → MCP toolset."),
    ] = None,
    map_workflow: Annotated[
        list[str] | None,
        typer.Option("--map-workflow", help="Dify import: a workflow tool's app, ID=APP (repeatable)."),
    ] = None,
    api_spec: Annotated[
        list[str] | None,
        typer.Option("--api-spec", help="Dify import: a custom API tool's OpenAPI spec, NAME=SPEC."),
    ] = None,
    skills_dir: Annotated[
        list[Path] | None,
        typer.Option("--skills-dir", help="Dify agent import: a folder with the export's skills by name."),
    ] = None,
) -> None:
    """Create an app; prints its id. A Dify export's tools are reported one by one."""
    from loopwright.app.admin import apps as admin
    from loopwright.app.config import ConfigImportError, ImportReport
    from loopwright.cli._common import read_text_file, reported_errors

    if install_plugins is not None:
        from loopwright.cli.plugins import install_plugins as install

        install([install_plugins])

    with reported_errors():
        if from_yaml is not None:
            text = read_text_file(from_yaml, "app file")
            options = _import_options(mcp, mcp_config, map_workflow, api_spec, skills_dir)
            report = admin.read_app_file(text, options)
            if report.tools and interactive():
                report = _ask_for_mcp_servers(text, report, options)
            report = admin.with_overrides(report, name=name, model=model)
            if mode is not None and mode != report.config.mode:
                raise ConfigImportError(f"the file is a {report.config.mode} app, not {mode}")
        elif not name:
            raise ConfigImportError("give the app a name (or --from-yaml FILE)")
        else:
            config = admin.app_config_from_options(
                model=model,
                tools=tool or [],
                instruction=instruction,
                strategy=strategy,
                mode=mode or "agent-chat",
            )
            report = ImportReport(name, config)
        for t in report.tools:
            if t.kept:
                typer.secho(f"tool {t.tool} ({t.provider_type} {t.provider}) → {t.became}", err=True)
        for warning in report.warnings:
            typer.secho(f"warning: {warning}", fg="yellow", err=True)
        _check_model(report.config.model)
        typer.echo(asyncio.run(admin.create_app(report.name, report.config)))


def _check_model(spec: str) -> None:
    """A model that can never run here (a missing model file, the embedded model not installed) is
    refused; one that needs a key or server not set now is a warning (the server may have them)."""
    from loopwright.app.config import ConfigImportError
    from loopwright.config import load_settings, model_problem, parse_model_spec

    problem = model_problem(spec, load_settings())
    if problem is None:
        return
    if parse_model_spec(spec).kind in ("local", "scripted"):
        raise ConfigImportError(f"{problem} (give another model with --model)")
    typer.secho(f"warning: {problem}", fg="yellow", err=True)


def interactive() -> bool:
    """Whether a person is at the terminal to answer questions."""
    return sys.stdin.isatty()


def _pairs(items: list[str] | None, option: str) -> dict[str, str]:
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"{option} takes NAME=VALUE, not {item!r}")
        out[key.strip()] = value.strip()
    return out


def _import_options(
    mcp: list[str] | None,
    mcp_config: Path | None,
    workflows: list[str] | None,
    specs: list[str] | None,
    skill_dirs: list[Path] | None = None,
) -> ImportOptions:
    import yaml

    from loopwright.app.dify.tools import ImportOptions
    from loopwright.cli._common import read_text_file

    servers: dict[str, dict[str, object]] = {}
    if mcp_config is not None:
        loaded = yaml.safe_load(read_text_file(mcp_config, "MCP configuration")) or {}
        if not isinstance(loaded, dict) or not all(isinstance(v, dict) for v in loaded.values()):
            raise ValueError(f"{mcp_config}: expected a mapping of provider name → MCP toolset")
        servers.update({str(k): {"type": "mcp", **v} for k, v in loaded.items()})
    for name, url in _pairs(mcp, "--mcp").items():
        servers[name] = _mcp_entry(url)
    return ImportOptions(
        servers,
        _pairs(workflows, "--map-workflow"),
        _pairs(specs, "--api-spec"),
        [str(d) for d in skill_dirs or []],
    )


def _mcp_entry(url: str) -> dict[str, object]:
    if url.startswith(("http://", "https://")):
        return {"type": "mcp", "transport": "streamable-http", "url": url}
    import shlex

    command, *args = shlex.split(url)  # a command line: a stdio server
    return {"type": "mcp", "transport": "stdio", "command": command, "args": args}


def _ask_for_mcp_servers(text: str, report: ImportReport, options: ImportOptions) -> ImportReport:
    """Ask, at a terminal, for the MCP server of each MCP provider the options did not name."""
    from dataclasses import replace

    from loopwright.app.admin import apps as admin

    missing = sorted({t.provider for t in report.tools if t.provider_type == "mcp" and not t.kept})
    servers = dict(options.mcp_servers)
    for provider in missing:
        url = typer.prompt(
            f"MCP server for {provider!r} (an http(s) URL or a command; empty: leave its tools out)",
            default="",
            show_default=False,
        ).strip()
        if url:
            servers[provider] = _mcp_entry(url)
    if len(servers) == len(options.mcp_servers):
        return report
    return admin.read_app_file(text, replace(options, mcp_servers=servers))


@apps.command("set")
def set_app(
    app_id: Annotated[str, typer.Argument(help="The app's id.")],
    model: Annotated[
        str | None, typer.Option(help="A new model spec, e.g. local or openai:gpt-4o-mini.")
    ] = None,
    instruction: Annotated[str | None, typer.Option(help="A new instruction.")] = None,
    strategy: Annotated[str | None, typer.Option(help="auto, function-calling or react.")] = None,
    max_iterations: Annotated[int | None, typer.Option(help="The agent's round limit.")] = None,
    setting: Annotated[
        list[str] | None,
        typer.Option("--set", help="Any configuration key, KEY=VALUE (VALUE as YAML; repeatable)."),
    ] = None,
    name: Annotated[str | None, typer.Option(help="A new name.")] = None,
) -> None:
    """Change an app's model and other settings: a new configuration version (new conversations use
    it; earlier ones keep theirs), as the console's PUT /apps/{id}. Prints the new version number."""
    import yaml

    from loopwright.app.admin import apps as admin
    from loopwright.app.config import AppConfig
    from loopwright.cli._common import UsageError, reported_errors

    changes_from_set: dict[str, object] = {}
    with reported_errors():
        for key, value in _pairs(setting, "--set").items():
            changes_from_set[key] = yaml.safe_load(value)
        changes: dict[str, object] = {
            k: v
            for k, v in {
                "model": model,
                "instruction": instruction,
                "strategy": strategy,
                "max_iterations": max_iterations,
            }.items()
            if v is not None
        }
        changes.update(changes_from_set)
        config: AppConfig | None = None
        if changes:
            current = asyncio.run(admin.show_app(app_id)).config
            config = admin.parse_app_config({**current, **changes})
            if model is not None:
                _check_model(config.model)
        elif name is None:
            raise UsageError("nothing to change: give --model, --instruction, --strategy, --set or --name")
        typer.echo(asyncio.run(admin.update_app(app_id, config=config, name=name)))


@apps.command("check")
def check_app(
    app_id: Annotated[str, typer.Argument(help="The app's id.")],
    json_out: Annotated[bool, typer.Option("--json", help="One JSON array, for scripts.")] = False,
) -> None:
    """Say whether every tool of the app is ready: built-ins configured, Dify plugins installed, MCP
    servers reachable, OpenAPI specs loading with their keys set, apps and knowledge bases present.
    Exits 1 when one is not."""
    from loopwright.app.admin.apps import AppNotFoundError
    from loopwright.app.admin.apps import app_readiness as check

    try:
        rows = asyncio.run(check(app_id))
    except AppNotFoundError as e:
        typer.secho(f"error: {e}", fg="red", err=True)
        raise typer.Exit(1) from None
    if json_out:
        typer.echo(json.dumps([asdict(r) for r in rows], ensure_ascii=False))
    else:
        _table(["", "tool", "state"], [["ok" if r.ready else "NOT READY", r.what, r.detail] for r in rows])
    if not all(r.ready for r in rows):
        raise typer.Exit(1)


@apps.command("ask")
def ask(
    app_id: Annotated[str, typer.Argument(help="The app's id.")],
    query: Annotated[str, typer.Argument(help="The message.")],
    user: Annotated[str, typer.Option(help="The end user (Dify's user).")] = "cli",
    conversation: Annotated[
        str | None, typer.Option(help="Continue this conversation (its id, printed by an earlier ask).")
    ] = None,
    inputs: Annotated[
        list[str] | None, typer.Option("--input", help="A value of the app's form, NAME=VALUE (repeatable).")
    ] = None,
) -> None:
    """Send one message to an app, through the same path as the HTTP API: stored like any other, tool
    calls shown on stderr as they finish, the answer on stdout, then the conversation's id on stderr."""
    from loopwright.app.run.plan import MessageRequest

    form: dict[str, str] = {}
    for item in inputs or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            typer.secho(f"error: --input takes NAME=VALUE, not {item!r}", fg="red", err=True)
            raise typer.Exit(1)
        form[name] = value
    request = MessageRequest(app_id, user, query, form, conversation_id=conversation)
    raise typer.Exit(asyncio.run(_ask(request)))


async def _ask(request: MessageRequest) -> int:
    from loopwright.app.admin.apps import AppNotFoundError, show_app
    from loopwright.app.dify.events import AgentThought
    from loopwright.app.run.runtime import AppRuntime, Database, migrate
    from loopwright.errors import LoopwrightError

    db = Database()
    await migrate(db)
    try:
        await show_app(request.app_id, db=db)
    except AppNotFoundError as e:
        typer.secho(f"error: {e} (loopwright app list shows the apps)", fg="red", err=True)
        await db.close()
        return 1
    runtime = AppRuntime.with_builtin_tools(db)
    try:
        try:
            run = await runtime.start(request)
        except LoopwrightError as e:
            typer.secho(f"error: {e}", fg="red", err=True)
            return 1
        async for event in run.events():
            if isinstance(event, AgentThought) and event.tool and event.observation:
                typer.secho(f"{event.tool}: {event.tool_input} -> {event.observation}", dim=True, err=True)
        outcome = await run.outcome()
        if outcome.error is not None:
            typer.secho(f"error: {outcome.error}", fg="red", err=True)
            return 1
        if outcome.approval is not None:  # paused: the decision comes over the HTTP API (docs/approvals.md)
            waiting = outcome.approval.calls
            calls = ", ".join(f"{c['tool']} {c['arguments']} (call {c['id']})" for c in waiting)
            typer.secho(f"waiting for approval of: {calls}; task: {run.task_id}", fg="yellow", err=True)
        typer.echo(outcome.answer)
        typer.secho(f"conversation: {run.head.conversation_id}", dim=True, err=True)
        return 0
    finally:
        await runtime.shutdown()
        await db.close()


@apps.command("list")
def list_apps(
    json_out: Annotated[bool, typer.Option("--json", help="One JSON array, for scripts.")] = False,
) -> None:
    """List the apps: id, name, kind (mode), model, strategy, number of tools, created, status, Service API
    on."""
    from loopwright.app.admin.apps import list_apps as app_summaries

    rows = asyncio.run(app_summaries())
    if json_out:
        typer.echo(json.dumps([asdict(r) for r in rows], ensure_ascii=False))
        return
    headers = ["id", "name", "mode", "model", "strategy", "tools", "created", "status", "api"]
    _table(headers, [list(asdict(r).values()) for r in rows])


@apps.command("disable")
def disable_app(
    app_id: Annotated[str, typer.Argument(help="The app's id.")],
    api: Annotated[bool, typer.Option("--api", help="Turn off only its Service API.")] = False,
) -> None:
    """Disable an app (or only its Service API): its requests get 403, as Dify's."""
    _set_access(app_id, enabled=False, api_only=api)


@apps.command("enable")
def enable_app(
    app_id: Annotated[str, typer.Argument(help="The app's id.")],
    api: Annotated[bool, typer.Option("--api", help="Turn on only its Service API.")] = False,
) -> None:
    """Enable an app again (or only its Service API)."""
    _set_access(app_id, enabled=True, api_only=api)


def _set_access(app_id: str, *, enabled: bool, api_only: bool) -> None:
    from loopwright.app.admin.apps import AppNotFoundError, set_app_access

    try:
        asyncio.run(set_app_access(app_id, enabled=enabled, api_only=api_only))
    except AppNotFoundError as e:
        typer.secho(f"error: {e}", fg="red", err=True)
        raise typer.Exit(1) from None
    what = "API " if api_only else ""
    typer.echo(f"{what}{'enabled' if enabled else 'disabled'}")


@apps.command("show")
def show_app(
    app_id: Annotated[str, typer.Argument(help="The app's id (from `app list`).")],
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object, for scripts.")] = False,
) -> None:
    """Show an app: its name, version, number of keys and current configuration."""
    from loopwright.app.admin.apps import show_app as app_details
    from loopwright.cli._common import reported_errors

    with reported_errors(plain=json_out):
        details = asyncio.run(app_details(app_id))
    if json_out:
        typer.echo(json.dumps(asdict(details), ensure_ascii=False))
        return
    import yaml

    typer.echo(f"id:       {details.id}\nname:     {details.name}")
    typer.echo(f"created:  {details.created_at}\nversion:  {details.version} (of {details.versions})")
    typer.echo(f"status:   {details.status}, Service API {'on' if details.api else 'off'}")
    typer.echo(f"keys:     {details.keys}\nconfig:")
    typer.echo(yaml.safe_dump(details.config, allow_unicode=True, sort_keys=False).rstrip("\n"))


@apps.command("delete")
def delete_app(
    app_id: Annotated[str, typer.Argument(help="The app's id (from `app list`).")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete an app with its keys, conversations and messages."""
    from loopwright.app.admin.apps import delete_app as delete
    from loopwright.app.admin.apps import show_app as app_details
    from loopwright.cli._common import reported_errors

    with reported_errors():
        details = asyncio.run(app_details(app_id))
        if not yes and not typer.confirm(
            f"Delete app {details.name!r} ({details.id}) with its {details.keys} key(s) and all its "
            "conversations?"
        ):
            raise typer.Exit(1)
        asyncio.run(delete(app_id))
    typer.echo("deleted")


class ExportFormat(StrEnum):
    dify = "dify"
    loopwright = "loopwright"


@apps.command("export")
def export_app(
    app_id: Annotated[str, typer.Argument(help="The app's id (from `app list`).")],
    fmt: Annotated[
        ExportFormat,
        typer.Option("--format", "-f", help="dify: a Dify DSL file Dify can import; loopwright: our YAML."),
    ] = ExportFormat.dify,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (default: stdout).")
    ] = None,
) -> None:
    """Export an app's current configuration as YAML (what Dify cannot take is said on stderr)."""
    from loopwright.app.admin.apps import export_app as export
    from loopwright.cli._common import reported_errors

    with reported_errors():
        exported = asyncio.run(export(app_id, fmt=fmt.value))
        if output is not None:
            output.write_text(exported.text, encoding="utf-8")
    for warning in exported.warnings:
        typer.secho(f"warning: {warning}", fg="yellow", err=True)
    if output is None:
        typer.echo(exported.text, nl=False)


@keys.command("list")
def list_keys(
    app_id: Annotated[str | None, typer.Option("--app", help="Only this app's keys.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON array, for scripts.")] = False,
) -> None:
    """List API keys (masked: a key is a secret; its id is what `key revoke` takes)."""
    from loopwright.app.admin.apps import AppNotFoundError
    from loopwright.app.admin.apps import list_keys as key_summaries

    try:
        rows = asyncio.run(key_summaries(app_id))
    except AppNotFoundError as e:
        typer.secho(f"error: {e}", fg="red", err=True)
        raise typer.Exit(1) from None
    if json_out:
        typer.echo(json.dumps([asdict(r) for r in rows], ensure_ascii=False))
        return
    _table(["id", "app", "key", "created"], [list(asdict(r).values()) for r in rows])


@keys.command("revoke")
def revoke_key(
    key: Annotated[str, typer.Argument(help="The key's id (from `key list`) or the key itself.")],
) -> None:
    """Delete an API key; requests with it are refused (401)."""
    from loopwright.app.admin.apps import revoke_key as revoke

    if not asyncio.run(revoke(key)):
        typer.secho(
            "error: no such API key (give its id from `loopwright key list`, or the key)", fg="red", err=True
        )
        raise typer.Exit(1)
    typer.echo("revoked")


def _table(headers: list[str], rows: list[list[object]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(*headers, box=None, pad_edge=False)
    for row in rows:
        table.add_row(*(str(v) for v in row))
    Console(width=200).print(table)


@keys.command("create")
def create_key(app_id: Annotated[str, typer.Option("--app", help="The app's id.")]) -> None:
    """Create an API key (app-…) for an app; prints it."""
    from loopwright.app.admin.apps import AppNotFoundError, create_api_key

    try:
        token = asyncio.run(create_api_key(app_id))
    except AppNotFoundError as e:
        typer.secho(f"error: {e}", fg="red", err=True)
        raise typer.Exit(1) from None
    typer.echo(token)


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 5001,
    workers: Annotated[
        int, typer.Option(min=1, help="Worker processes (they share stops through the database).")
    ] = 1,
    executor: Annotated[
        str | None,
        typer.Option(help="How runs are executed: in-process (default) or durable (LOOPWRIGHT_EXECUTOR)."),
    ] = None,
) -> None:
    """Serve the Dify-compatible HTTP API (/v1) for every app in the database."""
    from loopwright.app.run.executors import check_executor
    from loopwright.config import ConfigError
    from loopwright.server.app import run_server

    chosen = executor or os.environ.get("LOOPWRIGHT_EXECUTOR")
    if chosen:
        try:
            check_executor(chosen.strip())
        except ConfigError as e:
            typer.secho(f"error: {e}", fg="red", err=True)
            raise typer.Exit(2) from None
        os.environ["LOOPWRIGHT_EXECUTOR"] = chosen.strip()  # the worker processes read it
    run_server(host=host, port=port, workers=workers)
