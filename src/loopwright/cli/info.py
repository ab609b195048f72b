"""``loopwright info``: which data directory, database, files and model every command uses here."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from loopwright.cli._common import escape, new_console, reported_errors


def info(
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object, for scripts.")] = False,
) -> None:
    """Show the data directory, the database, the files directory, the config file and the model."""
    from loopwright import __version__
    from loopwright.app.admin.apps import database_url
    from loopwright.config import load_settings
    from loopwright.paths import data_dir, files_dir

    with reported_errors(plain=json_out):
        settings = load_settings()
        rows = {
            "version": __version__,
            "data directory": str(data_dir()),
            "database": _masked(database_url()),
            "files": str(files_dir()),
            "config file": str(settings.config_path) if settings.config_path else "none",
            "model": f"{settings.model} (from {settings.model_origin})",
        }
    if json_out:
        typer.echo(json.dumps({k.replace(" ", "_"): v for k, v in rows.items()}, ensure_ascii=False))
        return
    console = new_console()
    width = max(map(len, rows))
    for label, value in rows.items():
        console.print(f"[bold]{label.ljust(width)}[/bold]  {escape(value)}", soft_wrap=True)


def _masked(url: str) -> str:
    """A database URL without its password (it may be printed in logs or shared in an issue)."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy can read: say so rather than echo a secret
        return "(unreadable database URL)"
