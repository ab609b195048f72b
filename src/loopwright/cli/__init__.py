"""The ``loopwright`` command: ``run`` one question, ``chat`` in turns, show the configured ``models``,
create apps and keys, ``serve`` them, manage knowledge bases (``kb``) and import ``tools``.

One module per command group: :mod:`~loopwright.cli.run` (run, chat), :mod:`~loopwright.cli.models`,
:mod:`~loopwright.cli.admin` (app, key, serve), :mod:`~loopwright.cli.kb`, :mod:`~loopwright.cli.tools`.
The commands call the app layer (``loopwright.app``), never the store.
"""

from __future__ import annotations

from typing import Annotated

import typer

from loopwright import __version__
from loopwright.cli import admin, kb, log, models, plugins, run, tools

app = typer.Typer(
    name="loopwright",
    help="Run loopwright agents from the command line.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"loopwright {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Show the version and exit."),
    ] = False,
) -> None:
    """Run loopwright agents from the command line."""


app.command()(run.run)
app.command()(run.chat)
app.command()(models.models)
app.add_typer(admin.apps, name="app")
app.add_typer(tools.tools, name="tools")
app.add_typer(kb.kb, name="kb")
app.add_typer(admin.keys, name="key")
app.add_typer(plugins.plugins, name="plugins")
app.command()(admin.serve)
app.command()(log.log)


def main() -> None:
    """The console script's entry point (``loopwright``, ``python -m loopwright``)."""
    app(prog_name="loopwright")


__all__ = ["app", "main"]
