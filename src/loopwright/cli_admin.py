"""``loopwright app create``, ``loopwright key create`` and ``loopwright serve``: apps and the server.

Each prints what a script needs (an app id, a key) on a line of its own. The database is the one the
server uses: ``DATABASE_URL``, else ``LOOPWRIGHT_DB`` (a SQLite file), else ``./loopwright.db``;
migrations run first, so a new file needs no setup.
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
    from loopwright.app.config import AppConfig, ConfigImportError, import_dify_dsl, load_app_yaml
    from loopwright.tools.builtin import builtin_tools

    warnings: list[str] = []
    try:
        if from_yaml is not None:
            text = from_yaml.read_text(encoding="utf-8")
            if "model_config:" in text and "\napp:" in f"\n{text}":
                report = import_dify_dsl(text)
                name, config, warnings = report.name, report.config, report.warnings
            else:
                name, config = load_app_yaml(text)
        else:
            if not name:
                raise ConfigImportError("give the app a name (or --from-yaml FILE)")
            known = {t.name for t in builtin_tools()}
            unknown = [t for t in tool or [] if t not in known]
            if unknown:
                raise ConfigImportError(
                    f"unknown tool {unknown[0]!r}; built-in tools: {', '.join(sorted(known))}"
                )
            config = AppConfig.model_validate(
                {
                    "model": model or "local",
                    "instruction": instruction,
                    "strategy": strategy,
                    "tools": [{"name": t} for t in tool or []],
                }
            )
    except (ConfigImportError, OSError, ValueError) as e:
        typer.secho(f"error: {e}", fg="red", err=True)
        raise typer.Exit(1) from None
    for warning in warnings:
        typer.secho(f"warning: {warning}", fg="yellow", err=True)
    typer.echo(asyncio.run(_create_app(name, config.model_dump())))


async def _create_app(name: str, config: dict[str, object]) -> str:
    from loopwright.store import repositories as repo
    from loopwright.store.db import Database

    db = Database()
    try:
        await db.migrate()
        async with db.transaction() as session:
            app, _ = await repo.create_app(session, name, config)
            return app.id
    finally:
        await db.close()


@keys.command("create")
def create_key(app_id: Annotated[str, typer.Option("--app", help="The app's id.")]) -> None:
    """Create an API key (app-…) for an app; prints it."""
    token = asyncio.run(_create_key(app_id))
    if token is None:
        typer.secho(f"error: no app with id {app_id!r}", fg="red", err=True)
        raise typer.Exit(1)
    typer.echo(token)


async def _create_key(app_id: str) -> str | None:
    from loopwright.store import repositories as repo
    from loopwright.store.db import Database
    from loopwright.store.models import App

    db = Database()
    try:
        await db.migrate()
        async with db.transaction() as session:
            if await session.get(App, app_id) is None:
                return None
            return (await repo.create_api_key(session, app_id)).token
    finally:
        await db.close()


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
