"""``loopwright models``: the configured model and the embedded local model, without loading either."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from loopwright.cli._common import (
    ModelOpt,
    escape,
    new_console,
    one_line,
    reported_errors,
    settings_from_options,
)
from loopwright.config import ConfigError, Settings, parse_model_spec
from loopwright.model.base import ModelError

if TYPE_CHECKING:
    from rich.console import Console


def models(model: ModelOpt = None) -> None:
    """Show the configured model and the embedded local model, without loading anything."""
    with reported_errors():
        settings = settings_from_options(model, None, None)
        console = new_console()
        ok = _show_configured(console, settings)
        _show_local(console, settings)
        if not ok:
            raise typer.Exit(1)


def _print_rows(console: Console, title: str, rows: list[tuple[str, str]]) -> None:
    """A titled list of ``label  value`` lines; values (rich markup) are never wrapped, so paths and
    URLs stay whole when the output is captured."""
    console.print(f"[bold underline]{title}[/bold underline]")
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        console.print(f"  [bold]{label.ljust(width)}[/bold]  {value}", soft_wrap=True)


def _show_configured(console: Console, settings: Settings) -> bool:
    rows: list[tuple[str, str]] = []
    rows.append(("spec", escape(settings.model)))
    rows.append(("from", escape(settings.model_origin)))
    ok = True
    try:
        spec = parse_model_spec(settings.model)
    except ConfigError as exc:
        rows.append(("provider", f"[red]{escape(str(exc))}[/red]"))
        ok = False
    else:
        provider, base_url = _provider(spec.kind, spec.arg, settings)
        rows.append(("provider", provider))
        if base_url:
            rows.append(("base URL", escape(base_url)))
        if spec.kind in ("openai", "openai-compatible"):
            rows.append(("model name", escape(spec.arg)))
    rows.append(("API key", "set" if settings.openai_api_key else "not set"))
    rows.append(("strategy", settings.strategy))
    rows.append(("max iterations", str(settings.max_iterations)))
    rows.append(("config file", escape(str(settings.config_path)) if settings.config_path else "none"))
    _print_rows(console, "configured model", rows)
    return ok


def _provider(kind: str, arg: str, settings: Settings) -> tuple[str, str | None]:
    from loopwright.config import OPENAI_API_BASE

    if kind == "openai":
        return "OpenAI", OPENAI_API_BASE
    if kind == "openai-compatible":
        url = settings.openai_base_url
        return "OpenAI-compatible server", url or "[red]missing: set OPENAI_BASE_URL[/red]"
    if kind == "scripted":
        return f"scripted (replays {escape(arg)})", None
    return ("embedded llama.cpp" + (f" ({escape(arg)})" if arg else " (the default model)")), None


def _show_local(console: Console, settings: Settings) -> None:
    import importlib.util

    rows: list[tuple[str, str]] = []
    try:
        spec = parse_model_spec(settings.model)
        custom = spec.arg if spec.kind == "local" else ""
    except ConfigError:
        custom = ""
    path: Path | None = None
    if custom:
        path = Path(custom).expanduser()
    else:
        try:
            from loopwright.model.local import LocalModel

            path = LocalModel.default_path()
        except ImportError as exc:
            rows.append(("path", f"[yellow]unavailable ({escape(str(exc))})[/yellow]"))
        except ModelError as exc:
            rows.append(("path", f"[yellow]{escape(one_line(exc))}[/yellow]"))
    if path is not None:
        rows.append(("path", escape(str(path))))
        if path.is_file():
            rows.append(("size", _size(path.stat().st_size)))
        else:
            rows.append(("size", "[red]file not found[/red]"))
    rows.append(("llama_cpp", _llama_status(importlib.util.find_spec("llama_cpp") is not None)))
    console.print()
    _print_rows(console, "local model", rows)


def _llama_status(installed: bool) -> str:
    if not installed:
        return "[yellow]not installed[/yellow] (pip install 'loopwright\\[local]')"
    try:
        from loopwright.model.local import import_llama_cpp

        import_llama_cpp()  # the library only; no weights are loaded
    except Exception as exc:  # a broken build fails here, not only with ImportError
        return f"[red]installed but not importable: {escape(one_line(exc))}[/red]"
    return "importable"


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
