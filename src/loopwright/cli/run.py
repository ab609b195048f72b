"""``loopwright run`` (one question) and ``loopwright chat`` (turns): an agent with the built-in tools.

Output is rendered live with rich (thought text, tool calls, the answer, usage), or as JSON lines with
``run --json``. Providers (openai, llama.cpp) are imported only when a command builds a model, so
``--help`` stays fast.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from contextlib import suppress
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from loopwright.cli._common import (
    InstructionOpt,
    IterOpt,
    ModelOpt,
    StrategyOpt,
    ToolOpt,
    UsageError,
    debug,
    new_console,
    one_line,
    print_error,
    reported_errors,
    settings_from_options,
)
from loopwright.cli.render import LiveRenderer, event_to_json, write_json
from loopwright.config import Settings, build_model
from loopwright.model.base import ModelError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console

    from loopwright.agent import Agent, AgentResult
    from loopwright.agent._factory import StrategyName
    from loopwright.cli.plugin_tools import ToolChoice
    from loopwright.model.base import Model
    from loopwright.tools.base import ToolLike
    from loopwright.tools.dify_plugins import DifyPlugins

DEFAULT_INSTRUCTION = "You are a helpful assistant. Use a tool when it helps to answer."

# --- building the agent ----------------------------------------------------------------------------


# Offered when no --tool is given: the ones that work offline. A small local model also chooses
# better among fewer tools (with web_fetch offered too, SmolLM2 repeats its calculator call).
DEFAULT_TOOLS = ("calculator", "current_time")


def select_tools(names: list[str] | None, settings: Settings | None = None) -> ToolChoice:
    """The default built-in tools, or those named (in the order given: a built-in, or a tool of an
    installed Dify plugin, :mod:`loopwright.cli.plugin_tools`); an unknown name is a usage error.
    ``settings`` give ``web_fetch`` its network allow-list."""
    from loopwright.cli.plugin_tools import choose_tools
    from loopwright.tools.builtin import builtin_tools, terminal_asker
    from loopwright.tools.net import DEFAULT_POLICY, network_policy

    tools = builtin_tools(
        network_policy(settings.tool_allow_hosts) if settings is not None else DEFAULT_POLICY,
        ask=terminal_asker(),  # ask_user asks on the terminal (fails clearly without one)
    )
    wanted = [n.strip() for item in names or [] for n in item.split(",") if n.strip()]
    return choose_tools(list(dict.fromkeys(wanted)), tools, DEFAULT_TOOLS)


def _agent(settings: Settings, tools: Sequence[ToolLike], instruction: str) -> Agent:
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


# --- runs ------------------------------------------------------------------------------------------


async def _stream(agent: Agent, query: str, history: list[Any], renderer: LiveRenderer | None) -> AgentResult:
    result: AgentResult | None = None
    stream = agent.stream(query, history=history)
    try:
        async for event in stream:
            if renderer is None:
                write_json(event_to_json(event))
            else:
                renderer.handle(event)
            if event.type == "finished":
                result = event.result
    finally:
        await stream.aclose()
    assert result is not None, "an agent run ends with a finished event or an error"
    return result


async def _run_once(
    settings: Settings, choice: ToolChoice, instruction: str, question: str, console: Console | None
) -> AgentResult:
    from loopwright.cli.plugin_tools import open_tools

    tools, plugins = await open_tools(choice)
    agent = _agent(settings, tools, instruction)
    try:
        await _load(agent.model, console)
        if console is None:
            return await _stream(agent, question, [], None)
        _header(console, agent)
        with LiveRenderer(console) as renderer:
            return await _stream(agent, question, [], renderer)
    finally:
        await _close(agent.model, plugins)


async def _close(model: Model, plugins: DifyPlugins | None = None) -> None:
    """Close the model's connections (an HTTP client) and the plugins' processes while the event loop
    still runs."""
    for closing in (model, plugins):
        aclose = getattr(closing, "aclose", None)
        if aclose is not None and inspect.iscoroutinefunction(aclose):
            with suppress(Exception):  # never hide the run's own outcome
                await aclose()


def _header(console: Console, agent: Agent) -> None:
    from rich.text import Text

    tools = ", ".join(t.name for t in agent.tools if hasattr(t, "name")) or "none"
    console.print(Text(f"model {agent.model.name} · {agent.strategy_kind} · tools: {tools}", style="dim"))


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
    with reported_errors(plain=json_output):
        if question == "-":
            question = sys.stdin.read()
        if not question.strip():
            raise UsageError("the question is empty")
        settings = settings_from_options(model, strategy, max_iterations)
        choice = select_tools(tool, settings)
        console = None if json_output else new_console()
        try:
            asyncio.run(_run_once(settings, choice, instruction, question, console))
        except Exception as exc:
            if json_output and not isinstance(exc, typer.Exit):
                write_json({"type": "error", "error": type(exc).__name__, "message": one_line(exc)})
            raise


def chat(
    model: ModelOpt = None,
    strategy: StrategyOpt = None,
    tool: ToolOpt = None,
    max_iterations: IterOpt = None,
    instruction: InstructionOpt = DEFAULT_INSTRUCTION,
) -> None:
    """Talk with an agent over several turns. /reset clears the history, /exit (or Ctrl-D) quits."""
    with reported_errors():
        from loopwright.cli.plugin_tools import open_tools

        settings = settings_from_options(model, strategy, max_iterations)
        choice = select_tools(tool, settings)
        console = new_console()
        with asyncio.Runner() as runner:
            tools, plugins = runner.run(open_tools(choice))
            agent = _agent(settings, tools, instruction)
            try:
                runner.run(_load(agent.model, console))
                _header(console, agent)
                console.print("[dim]/reset clears the history, /exit quits[/dim]")
                _chat_loop(runner, agent, console)
            finally:
                runner.run(_close(agent.model, plugins))


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
            if debug():
                raise
            print_error(one_line(exc))  # the session goes on; the failed turn is not remembered
            continue
        except KeyboardInterrupt:
            console.print("[dim](interrupted)[/dim]")
            continue
        history = list(result.messages)
