"""The ``loopwright`` command: ``run`` one question, ``chat`` in turns, show the configured ``models``.

Output is rendered live with rich (thought text, tool calls, the answer, usage), or as JSON lines with
``run --json``. Providers (openai, llama.cpp) are imported only when a command builds a model, so
``--help`` stays fast.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import fields, is_dataclass
from decimal import Decimal
from enum import Enum, StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from loopwright.config import ConfigError, Settings, build_model, load_settings, parse_model_spec
from loopwright.model.base import ModelError

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live

    from loopwright.agent import Agent, AgentEvent, AgentResult
    from loopwright.agent.factory import StrategyName
    from loopwright.model.base import Model
    from loopwright.tools.base import Tool

DEFAULT_INSTRUCTION = "You are a helpful assistant. Use a tool when it helps to answer."
PREVIEW_CHARS = 200

app = typer.Typer(
    name="loopwright",
    help="Run loopwright agents from the command line.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


class StrategyChoice(StrEnum):
    auto = "auto"
    function_calling = "function-calling"
    react = "react"


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
        help="Use only this built-in tool (repeat, or separate names with commas). Default: all.",
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


def _debug() -> bool:
    return os.environ.get("LOOPWRIGHT_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _print_error(message: str, *, plain: bool = False) -> None:
    if plain:
        print(f"error: {message}", file=sys.stderr, flush=True)
        return
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True, highlight=False, soft_wrap=True).print(
        Text.assemble(("error:", "bold red"), " ", (message, "red"))
    )


@contextmanager
def _errors(*, plain: bool = False) -> Iterator[None]:
    """One red ``error: …`` line on stderr and exit 1 for what can go wrong in a command (2 for bad
    usage, which raises :class:`_UsageError`); a traceback only with ``LOOPWRIGHT_DEBUG=1``."""
    from loopwright.agent.errors import AgentError

    try:
        yield
    except (typer.Exit, typer.Abort, typer.TyperException):
        raise
    except _UsageError as exc:
        _print_error(str(exc), plain=plain)
        raise typer.Exit(2) from None
    except (ConfigError, ModelError, AgentError) as exc:
        if _debug():
            raise
        _print_error(_one_line(exc), plain=plain)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        if _debug():
            raise
        _print_error("interrupted", plain=plain)
        raise typer.Exit(130) from None
    except Exception as exc:
        if _debug():
            raise
        _print_error(
            f"{type(exc).__name__}: {_one_line(exc)} (set LOOPWRIGHT_DEBUG=1 for a traceback)", plain=plain
        )
        raise typer.Exit(1) from None


class _UsageError(Exception):
    """A bad command line the parser could not catch (an unknown tool name): exit code 2."""


# --- building the agent ----------------------------------------------------------------------------


def _settings(model: str | None, strategy: StrategyChoice | None, max_iterations: int | None) -> Settings:
    return load_settings().with_overrides(
        model=model,
        strategy=strategy.value if strategy is not None else None,
        max_iterations=max_iterations,
    )


# Offered when no --tool is given: the ones that work offline. A small local model also chooses
# better among fewer tools (with web_fetch offered too, SmolLM2 repeats its calculator call).
DEFAULT_TOOLS = ("calculator", "current_time")


def select_tools(names: list[str] | None, settings: Settings | None = None) -> list[Tool]:
    """The default built-in tools, or those named (in the order given, any built-in); an unknown
    name is a usage error. ``settings`` give ``web_fetch`` its network allow-list."""
    from loopwright.tools.builtin import builtin_tools
    from loopwright.tools.net import DEFAULT_POLICY, network_policy

    tools = builtin_tools(
        network_policy(settings.tool_allow_hosts) if settings is not None else DEFAULT_POLICY
    )
    if not names:
        return [t for t in tools if t.name in DEFAULT_TOOLS]
    by_name = {t.name: t for t in tools}
    wanted = [n.strip() for item in names for n in item.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise _UsageError(f"unknown tool {unknown[0]!r}; available: {', '.join(sorted(by_name))}")
    return [by_name[n] for n in dict.fromkeys(wanted)]


def _agent(settings: Settings, tools: list[Tool], instruction: str) -> Agent:
    from loopwright.agent import Agent

    model = build_model(settings.model, settings)
    return Agent(
        model=model,
        tools=tools,
        instruction=instruction,
        strategy=cast("StrategyName", settings.strategy),  # checked by load_settings
        max_iterations=settings.max_iterations,
    )


async def _load(model: Model, console: Console | None) -> None:
    """Load the model's weights when it has a ``load`` coroutine, under a spinner."""
    load = getattr(model, "load", None)
    if load is None or not inspect.iscoroutinefunction(load):
        return
    if console is None:
        await load()
        return
    with console.status("Loading model…", spinner="dots"):
        await load()


# --- rendering -------------------------------------------------------------------------------------


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _arguments_text(arguments: dict[str, Any] | str) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


class LiveRenderer:
    """Renders one run's events with rich. On a terminal the text of the round in progress streams in
    a live area (with a spinner while the model or a tool works) and is written out for good when a
    tool call starts or the round ends; elsewhere the same lines are printed as they become final."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.thought = ""
        self.answer = ""
        self.running: dict[str, str] = {}
        self._live: Live | None = None
        self._started = time.perf_counter()

    def __enter__(self) -> LiveRenderer:
        self._started = time.perf_counter()
        if self.console.is_terminal:
            from rich.live import Live

            self._live = Live(
                self._view(), console=self.console, transient=True, refresh_per_second=12, auto_refresh=True
            )
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _view(self) -> RenderableType:
        from rich.console import Group
        from rich.spinner import Spinner
        from rich.text import Text

        parts: list[RenderableType] = []
        if self.thought:
            parts.append(Text(self.thought, style="dim"))
        if self.answer:
            parts.append(Text(self.answer, style="bold"))
        if self.running:
            parts.append(Spinner("dots", text=Text(f"running {', '.join(self.running.values())}…", "dim")))
        elif not self.thought and not self.answer:
            parts.append(Spinner("dots", text=Text("thinking…", "dim")))
        return Group(*parts)

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._view())

    def _commit_thought(self) -> None:
        from rich.text import Text

        if self.thought.strip():
            self.console.print(Text(self.thought.strip(), style="dim"))
        self.thought = ""

    def handle(self, event: AgentEvent) -> None:
        from rich.text import Text

        if event.type == "round_started":
            self.thought = self.answer = ""
        elif event.type == "text_delta":
            if event.channel == "answer":
                self.answer += event.text
            else:
                self.thought += event.text
        elif event.type == "tool_call_started":
            self._commit_thought()
            self.running[event.id] = event.name
            self.console.print(
                Text.assemble(
                    ("→ ", "cyan"),
                    (event.name, "bold cyan"),
                    " ",
                    (_preview(_arguments_text(event.arguments)), ""),
                )
            )
        elif event.type == "tool_call_finished":
            self.running.pop(event.id, None)
            style = "red" if event.meta.error else "green"
            cached = ", cached" if event.meta.cached else ""
            self.console.print(
                Text.assemble(
                    ("  ← ", style),
                    (_preview(event.observation), style),
                    (f"  ({event.meta.time_cost * 1000:.1f} ms{cached})", "dim"),
                )
            )
        elif event.type == "round_finished":
            if event.answer is None or (
                self.thought.strip() and self.thought.strip() != event.answer.strip()
            ):
                self._commit_thought()  # the model's reasoning, not its answer again
            self.thought = self.answer = ""
        elif event.type == "finished":
            self._finished(event.result)
        self._refresh()

    def _finished(self, result: AgentResult) -> None:
        from rich.panel import Panel
        from rich.text import Text

        if self._live is not None:
            self._live.stop()
            self._live = None
        self.console.print(
            Panel(
                Text(result.text.strip() or "(empty answer)", style="bold"),
                title="answer",
                title_align="left",
            )
        )
        elapsed = time.perf_counter() - self._started
        self.console.print(Text(usage_line(result, elapsed), style="dim"))


def usage_line(result: AgentResult, elapsed: float) -> str:
    u = result.usage
    rounds = f"{result.rounds} round" + ("" if result.rounds == 1 else "s")
    return f"{rounds} · {u.prompt_tokens} prompt + {u.completion_tokens} completion tokens · {elapsed:.2f} s"


# --- JSON lines ------------------------------------------------------------------------------------


def to_jsonable(value: Any) -> Any:
    """Events and what they hold as JSON values: dataclasses as dicts, ``Usage`` and ``ToolInvokeMeta``
    by their ``to_dict()`` (plus ``cached``), bytes as ``{"length": n}``."""
    from loopwright.model.entities import Usage
    from loopwright.tools.engine import ToolInvokeMeta

    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Usage):
        return value.to_dict()
    if isinstance(value, ToolInvokeMeta):
        return {**to_jsonable(value.to_dict()), "cached": value.cached}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"length": len(value)}
    if isinstance(value, Enum):
        return to_jsonable(value.value)
    if isinstance(value, Decimal):
        return str(value)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    return str(value)


def event_to_json(event: AgentEvent) -> dict[str, Any]:
    """One event as a JSON object: ``type`` first, then its fields; ``finished`` carries the result's
    text, usage, rounds, finish_reason and files, never the message history."""
    if event.type == "finished":
        r = event.result
        return {
            "type": "finished",
            "result": {
                "text": r.text,
                "usage": r.usage.to_dict(),
                "rounds": r.rounds,
                "finish_reason": r.finish_reason,
                "files": to_jsonable(r.files),
            },
        }
    out: dict[str, Any] = {"type": event.type}
    for f in fields(event):
        if f.name != "type":
            out[f.name] = to_jsonable(getattr(event, f.name))
    return out


def _write_json(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


# --- runs ------------------------------------------------------------------------------------------


async def _stream(agent: Agent, query: str, history: list[Any], renderer: LiveRenderer | None) -> AgentResult:
    result: AgentResult | None = None
    stream = agent.stream(query, history=history)
    try:
        async for event in stream:
            if renderer is None:
                _write_json(event_to_json(event))
            else:
                renderer.handle(event)
            if event.type == "finished":
                result = event.result
    finally:
        await stream.aclose()
    assert result is not None, "an agent run ends with a finished event or an error"
    return result


async def _run_once(agent: Agent, question: str, console: Console | None) -> AgentResult:
    try:
        await _load(agent.model, console)
        if console is None:
            return await _stream(agent, question, [], None)
        _header(console, agent)
        with LiveRenderer(console) as renderer:
            return await _stream(agent, question, [], renderer)
    finally:
        await _close(agent.model)


async def _close(model: Model) -> None:
    """Close the model's connections (an HTTP client) while the event loop still runs."""
    aclose = getattr(model, "aclose", None)
    if aclose is not None and inspect.iscoroutinefunction(aclose):
        with suppress(Exception):  # never hide the run's own outcome
            await aclose()


def _header(console: Console, agent: Agent) -> None:
    from rich.text import Text

    tools = ", ".join(t.name for t in agent.tools if hasattr(t, "name")) or "none"
    console.print(Text(f"model {agent.model.name} · {agent.strategy_kind} · tools: {tools}", style="dim"))


@app.command()
def run(
    question: Annotated[str, typer.Argument(help="The question or task; '-' reads it from stdin.")],
    model: ModelOpt = None,
    strategy: StrategyOpt = None,
    tool: ToolOpt = None,
    max_iterations: IterOpt = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON object per event and line, nothing else.")
    ] = False,
    instruction: InstructionOpt = DEFAULT_INSTRUCTION,
) -> None:
    """Answer one question with an agent and the built-in tools, streaming what it does."""
    with _errors(plain=json_output):
        if question == "-":
            question = sys.stdin.read()
        if not question.strip():
            raise _UsageError("the question is empty")
        settings = _settings(model, strategy, max_iterations)
        tools = select_tools(tool, settings)
        agent = _agent(settings, tools, instruction)
        console = None if json_output else _console()
        try:
            asyncio.run(_run_once(agent, question, console))
        except Exception as exc:
            if json_output and not isinstance(exc, typer.Exit):
                _write_json({"type": "error", "error": type(exc).__name__, "message": _one_line(exc)})
            raise


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False)


@app.command()
def chat(
    model: ModelOpt = None,
    strategy: StrategyOpt = None,
    tool: ToolOpt = None,
    max_iterations: IterOpt = None,
    instruction: InstructionOpt = DEFAULT_INSTRUCTION,
) -> None:
    """Talk with an agent over several turns. /reset clears the history, /exit (or Ctrl-D) quits."""
    with _errors():
        settings = _settings(model, strategy, max_iterations)
        tools = select_tools(tool, settings)
        agent = _agent(settings, tools, instruction)
        console = _console()
        with asyncio.Runner() as runner:
            runner.run(_load(agent.model, console))
            _header(console, agent)
            console.print("[dim]/reset clears the history, /exit quits[/dim]")
            try:
                _chat_loop(runner, agent, console)
            finally:
                runner.run(_close(agent.model))


def _chat_loop(runner: asyncio.Runner, agent: Agent, console: Console) -> None:
    from loopwright.agent.errors import AgentError

    history: list[Any] = []
    while True:
        try:
            line = console.input("[bold green]you>[/bold green] ")
        except (EOFError, KeyboardInterrupt):
            console.print()
            return
        if not sys.stdin.isatty():
            console.print(line, markup=False, highlight=False)  # piped input: keep the transcript readable
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            return
        if text == "/reset":
            history = []
            console.print("[dim]history cleared[/dim]")
            continue
        if text.startswith("/"):
            console.print(f"[yellow]unknown command {text.split()[0]}[/yellow] — /reset or /exit")
            continue
        try:
            with LiveRenderer(console) as renderer:
                result = runner.run(_stream(agent, text, history, renderer))
        except (ModelError, AgentError) as exc:
            if _debug():
                raise
            _print_error(_one_line(exc))  # the session goes on; the failed turn is not remembered
            continue
        except KeyboardInterrupt:
            console.print("[dim](interrupted)[/dim]")
            continue
        history = list(result.messages)


# --- models ----------------------------------------------------------------------------------------


@app.command()
def models(model: ModelOpt = None) -> None:
    """Show the configured model and the embedded local model, without loading anything."""
    with _errors():
        settings = _settings(model, None, None)
        console = _console()
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
    rows.append(("spec", _escape(settings.model)))
    rows.append(("from", _escape(settings.model_origin)))
    ok = True
    try:
        spec = parse_model_spec(settings.model)
    except ConfigError as exc:
        rows.append(("provider", f"[red]{_escape(str(exc))}[/red]"))
        ok = False
    else:
        provider, base_url = _provider(spec.kind, spec.arg, settings)
        rows.append(("provider", provider))
        if base_url:
            rows.append(("base URL", _escape(base_url)))
        if spec.kind in ("openai", "openai-compatible"):
            rows.append(("model name", _escape(spec.arg)))
    rows.append(("API key", "set" if settings.openai_api_key else "not set"))
    rows.append(("strategy", settings.strategy))
    rows.append(("max iterations", str(settings.max_iterations)))
    rows.append(("config file", _escape(str(settings.config_path)) if settings.config_path else "none"))
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
        return f"scripted (replays {_escape(arg)})", None
    return ("embedded llama.cpp" + (f" ({_escape(arg)})" if arg else " (the default model)")), None


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
            rows.append(("path", f"[yellow]unavailable ({_escape(str(exc))})[/yellow]"))
        except ModelError as exc:
            rows.append(("path", f"[yellow]{_escape(_one_line(exc))}[/yellow]"))
    if path is not None:
        rows.append(("path", _escape(str(path))))
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
        import llama_cpp  # noqa: F401  # the library only; no weights are loaded
    except Exception as exc:  # a broken build fails here, not only with ImportError
        return f"[red]installed but not importable: {_escape(_one_line(exc))}[/red]"
    return "importable"


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _register_admin_commands() -> None:
    from loopwright.cli_admin import apps, keys, serve
    from loopwright.cli_kb import kb
    from loopwright.cli_tools import tools

    app.add_typer(apps, name="app")
    app.add_typer(tools, name="tools")
    app.add_typer(kb, name="kb")
    app.add_typer(keys, name="key")
    app.command()(serve)


_register_admin_commands()


def main() -> None:
    """The console script's entry point."""
    app(prog_name="loopwright")


if __name__ == "__main__":
    main()
