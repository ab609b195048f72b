"""``loopwright app create``, ``loopwright key create`` and ``loopwright serve``: apps and the server.

Each prints what a script needs (an app id, a key) on a line of its own. The database is the one the
server uses: ``DATABASE_URL``, else ``LOOPWRIGHT_DB`` (a SQLite file), else ``./loopwright.db``;
migrations run first, so a new file needs no setup. The work itself is :mod:`loopwright.app.admin`'s.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

apps = typer.Typer(help="Create agent-chat apps.", no_args_is_help=True)
keys = typer.Typer(help="Create API keys for apps.", no_args_is_help=True)


@apps.command("create")
def create_app(
    name: Annotated[
        str, typer.Argument(help="The app's name (ignored with --from-yaml, which has one).")
    ] = "",
    model: Annotated[str | None, typer.Option(help="Model spec, e.g. local or openai:gpt-4o-mini.")] = None,
    tool: Annotated[list[str] | None, typer.Option(help="A built-in tool to offer (repeatable).")] = None,
    instruction: Annotated[str, typer.Option(help="The app's instruction ({{var}} from inputs).")] = "",
    strategy: Annotated[str, typer.Option(help="auto, function-calling or react.")] = "auto",
    from_yaml: Annotated[
        Path | None, typer.Option("--from-yaml", help="A loopwright app YAML or a Dify DSL export.")
    ] = None,
) -> None:
    """Create an app; prints its id."""
    from loopwright.app import admin
    from loopwright.app.config import ConfigImportError, ImportReport

    try:
        if from_yaml is not None:
            report = admin.read_app_file(from_yaml.read_text(encoding="utf-8"))
        elif not name:
            raise ConfigImportError("give the app a name (or --from-yaml FILE)")
        else:
            config = admin.app_config_from_options(
                model=model, tools=tool or [], instruction=instruction, strategy=strategy
            )
            report = ImportReport(name, config)
    except (ConfigImportError, OSError, ValueError) as e:
        typer.secho(f"error: {e}", fg="red", err=True)
        raise typer.Exit(1) from None
    for warning in report.warnings:
        typer.secho(f"warning: {warning}", fg="yellow", err=True)
    typer.echo(asyncio.run(admin.create_app(report.name, report.config)))


@keys.command("create")
def create_key(app_id: Annotated[str, typer.Option("--app", help="The app's id.")]) -> None:
    """Create an API key (app-…) for an app; prints it."""
    from loopwright.app.admin import AppNotFoundError, create_api_key

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
) -> None:
    """Serve the Dify-compatible HTTP API (/v1) for every app in the database."""
    from loopwright.server.app import run_server

    run_server(host=host, port=port, workers=workers)
