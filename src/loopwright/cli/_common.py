"""What the ``loopwright`` commands share: the options of the model and the agent, settings from them,
and one way to report an error (one red ``error: …`` line, a traceback only with ``--debug`` or
``LOOPWRIGHT_DEBUG=1``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from loopwright.config import ConfigError, Settings, load_settings
from loopwright.errors import LoopwrightError, UserInputError
from loopwright.model.base import ModelError

if TYPE_CHECKING:
    from rich.console import Console


# The built-in tools' names for the help text, which must not import the tools (half the start-up
# time of a command); tests/test_cli.py keeps this in step with loopwright.tools.builtin.
BUILTIN_TOOL_NAMES = (
    "calculator",
    "current_time",
    "web_fetch",
    "weekday",
    "timezone_conversion",
    "localtime_to_timestamp",
    "timestamp_to_localtime",
    "webscraper",
    "tts",
    "asr",
    "simple_code",
    "ask_user",
)


class StrategyChoice(StrEnum):
    """The ``--strategy`` values."""

    auto = "auto"
    function_calling = "function-calling"
    react = "react"
    plan = "plan"


ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        metavar="SPEC",
        help="local, local:PATH.gguf, openai:NAME, openai-compatible:NAME or scripted:PATH.json "
        "(default: LOOPWRIGHT_MODEL, the config file, or chosen from OPENAI_API_KEY).",
    ),
]
StrategyOpt = Annotated[
    StrategyChoice | None,
    typer.Option("--strategy", "-s", help="Agent strategy (default: LOOPWRIGHT_STRATEGY or auto)."),
]
ToolOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--tool",
        "-t",
        metavar="NAME",
        help="Use only this built-in tool (repeat, or separate names with commas): "
        f"{', '.join(BUILTIN_TOOL_NAMES)}. Default: all.",
    ),
]
IterOpt = Annotated[
    int | None,
    typer.Option("--max-iterations", "-n", min=0, help="Most tool rounds (default: 10)."),
]
InstructionOpt = Annotated[
    str, typer.Option("--instruction", "-i", metavar="TEXT", help="The system instruction.")
]


# --- errors ----------------------------------------------------------------------------------------


def debug() -> bool:
    """Whether ``LOOPWRIGHT_DEBUG`` asks for tracebacks."""
    return os.environ.get("LOOPWRIGHT_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its class name when it has none)."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def print_error(message: str, *, plain: bool = False) -> None:
    """``error: message`` on stderr: red with rich, or ``plain`` (for ``--json`` output)."""
    if plain:
        print(f"error: {message}", file=sys.stderr, flush=True)
        return
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True, highlight=False, soft_wrap=True).print(
        Text.assemble(("error:", "bold red"), " ", (message, "red"))
    )


@contextmanager
def reported_errors(*, plain: bool = False) -> Iterator[None]:
    """One red ``error: …`` line on stderr and exit 1 for what can go wrong in a command (2 for bad
    usage, which raises :class:`UsageError`); a traceback only with ``LOOPWRIGHT_DEBUG=1``."""
    from loopwright.agent.errors import AgentError

    try:
        yield
    except (typer.Exit, typer.Abort, typer.TyperException):
        raise
    except UsageError as exc:
        print_error(str(exc), plain=plain)
        raise typer.Exit(2) from None
    except (ConfigError, ModelError, AgentError, LoopwrightError) as exc:
        if debug():
            raise
        print_error(one_line(exc), plain=plain)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        if debug():
            raise
        print_error("interrupted", plain=plain)
        raise typer.Exit(130) from None
    except Exception as exc:
        if debug():
            raise
        print_error(unexpected_error(exc), plain=plain)
        raise typer.Exit(1) from None


def unexpected_error(exc: BaseException) -> str:
    """One line for an error no command caught: what it says, and how to see more. A missing file or
    an unreachable server is common enough to be said in plain words."""
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"no such file: {exc.filename}"
    if isinstance(exc, PermissionError) and exc.filename:
        return f"permission denied: {exc.filename}"
    if isinstance(exc, OSError) and exc.filename:
        return f"cannot use {exc.filename}: {exc.strerror or one_line(exc)}"
    if isinstance(exc, LoopwrightError | ValueError):
        return one_line(exc)
    return f"{type(exc).__name__}: {one_line(exc)} (run with --debug for a traceback)"


class UsageError(UserInputError):
    """A bad command line the parser could not catch (an unknown tool name): exit code 2."""


def settings_from_options(
    model: str | None, strategy: StrategyChoice | None, max_iterations: int | None
) -> Settings:
    """The loaded settings with the command line's options over them."""
    return load_settings().with_overrides(
        model=model,
        strategy=strategy.value if strategy is not None else None,
        max_iterations=max_iterations,
    )


def new_console() -> Console:
    """A rich console on stdout (rich is imported only when a command prints)."""
    from rich.console import Console

    return Console(highlight=False)


def escape(text: str) -> str:
    """``text`` with rich markup escaped, to print paths and messages as they are."""
    from rich.markup import escape as escape_markup

    return escape_markup(text)


def read_text_file(path: Path, what: str = "file") -> str:
    """A UTF-8 text file given to a command; a binary one is a :class:`UsageError` that names it,
    instead of a bare decoding error (a missing file is the ``OSError`` every command reports)."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(
            f"{path}: not a UTF-8 text {what} (byte 0x{e.object[e.start]:02x} at offset {e.start})"
        ) from None
