"""The ``loopwright`` command: ``run`` one question, ``chat`` in turns, show the configured ``models``,
create apps and keys, ``serve`` them, manage knowledge bases (``kb``) and import ``tools``.

One module per command group: :mod:`~loopwright.cli.run` (run, chat), :mod:`~loopwright.cli.models`,
:mod:`~loopwright.cli.admin` (app, key, serve), :mod:`~loopwright.cli.kb`, :mod:`~loopwright.cli.tools`,
:mod:`~loopwright.cli.evals` (eval run, record, compare).
The commands call the app layer (``loopwright.app``), never the store.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from loopwright import __version__
from loopwright.cli import admin, annotate, evals, info, kb, log, models, plugins, run, tools
from loopwright.cli._common import debug, print_error, unexpected_error
from loopwright.paths import DATA_DIR_ENV, legacy_db_notice

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
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            envvar=DATA_DIR_ENV,
            help="Where the database and files live (default: the user's data directory; see `info`).",
        ),
    ] = None,
    debug_option: Annotated[
        bool, typer.Option("--debug", help="Show Python tracebacks of errors (same as LOOPWRIGHT_DEBUG=1).")
    ] = False,
) -> None:
    """Run loopwright agents from the command line."""
    # Through the environment, so every part (and a server's worker processes) sees the same choice.
    if data_dir is not None:
        os.environ[DATA_DIR_ENV] = str(data_dir.expanduser())
    if debug_option:
        os.environ["LOOPWRIGHT_DEBUG"] = "1"
    notice = legacy_db_notice()
    if notice:
        print(notice, file=sys.stderr)


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
app.command()(info.info)
app.add_typer(annotate.annotate, name="annotate")
app.add_typer(evals.evals, name="eval")


def main() -> None:
    """The console script's entry point (``loopwright``, ``python -m loopwright``)."""
    try:
        app(prog_name="loopwright")
    except Exception as exc:  # the last line of defence: one line, never a traceback, unless asked
        if debug():
            raise
        print_error(unexpected_error(exc))
        raise SystemExit(1) from None


__all__ = ["app", "main"]
