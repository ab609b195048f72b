"""Agent callbacks: code that watches a run (logging, metrics, tracing, audits) without changing it.

A callback is any object with some of the ``on_*`` methods of ``AgentCallback`` (subclass it and
override what you need). Each method may be a plain function or ``async``. Register callbacks on an
``Agent(callbacks=[...])``, for one run (``agent.stream(..., callbacks=[...])``), or for a server app by
import path in its config (``callbacks: ["package.module:factory"]``).

The events of a run, in order::

    on_agent_start
      on_round_start            (each round)
        on_llm_start            the request goes to the model
        on_llm_chunk            each streamed text piece (thought or answer)
        on_llm_end              the reply is read: its usage and model time
        on_tool_start           each tool call as it starts (calls of one round may run at once)
        on_tool_end | on_tool_error   each tool call as it ends (``on_tool_error`` when it failed)
      on_round_end
    on_agent_finish | on_agent_error

``on_agent_error`` also reports a stopped run: its error is then the ``GeneratorExit`` (the consumer
closed the stream) or ``asyncio.CancelledError`` (the task was cancelled) that stopped it.

Scheduling: every callback is called inline, where the event happens, so a sync callback costs the
run exactly its own time. An ``async`` callback is only *started* there: its coroutine goes to a
per-run queue that one background task awaits in order, so a slow async callback never holds the
model stream (it sees the events late, in their order). A callback that raises (sync or async) is
logged and ignored. When a slow async callback lets more than ``MAX_PENDING`` coroutines pile up, the
newest are dropped with a warning rather than letting memory grow without bound.

With no callback registered a run builds no dispatcher at all: every hook site in the loop is one
``is not None`` test, and nothing is allocated per streamed chunk.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loopwright.model.entities import PromptMessage, ToolSchema, Usage
from loopwright.tools.base import ToolContext

if TYPE_CHECKING:
    from loopwright.agent.events import (
        AgentResult,
        RoundFinished,
        RunMetrics,
        TextDelta,
        ToolCallFinished,
        ToolCallStarted,
    )

log = logging.getLogger(__name__)

MAX_PENDING = 10_000  # async callback coroutines waiting per run before new ones are dropped

EVENTS = (
    "on_agent_start",
    "on_agent_finish",
    "on_agent_error",
    "on_round_start",
    "on_round_end",
    "on_llm_start",
    "on_llm_chunk",
    "on_llm_end",
    "on_tool_start",
    "on_tool_end",
    "on_tool_error",
)


@dataclass(slots=True)
class RunInfo:
    """Which run an event belongs to: one object per run, passed first to every callback method, so
    a callback shared by concurrent runs can tell them apart (``id``) and keep per-run state on
    ``extra``."""

    id: str
    query: str
    strategy: str
    model: str
    context: ToolContext
    metrics: RunMetrics | None = None  # the run's figures so far (final in on_agent_finish/error)
    extra: dict[str, Any] = field(default_factory=dict)


class AgentCallback:
    """The callback interface; every method is optional (the defaults do nothing and are skipped).

    Any method may be ``async def`` instead (see the module docstring for how those are scheduled)."""

    def on_agent_start(self, run: RunInfo) -> None | Awaitable[None]:
        """The run starts."""

    def on_agent_finish(self, run: RunInfo, result: AgentResult) -> None | Awaitable[None]:
        """The run ended with an answer; ``result.metrics`` holds its figures."""

    def on_agent_error(self, run: RunInfo, error: BaseException) -> None | Awaitable[None]:
        """The run ended with an error, or was stopped (``GeneratorExit``/``CancelledError``)."""

    def on_round_start(self, run: RunInfo, round: int) -> None | Awaitable[None]:
        """A round (one model call and its tool calls) starts."""

    def on_round_end(self, run: RunInfo, event: RoundFinished) -> None | Awaitable[None]:
        """A round ended: its thought, tool calls, usage and answer (if any)."""

    def on_llm_start(
        self, run: RunInfo, round: int, messages: Sequence[PromptMessage], tools: Sequence[ToolSchema]
    ) -> None | Awaitable[None]:
        """The round's request goes to the model (``tools`` is empty on a round that offers none)."""

    def on_llm_chunk(self, run: RunInfo, delta: TextDelta) -> None | Awaitable[None]:
        """A piece of streamed text (``delta.channel`` says thought or answer)."""

    def on_llm_end(self, run: RunInfo, round: int, usage: Usage) -> None | Awaitable[None]:
        """The model's reply was read; ``usage.latency`` is the model time of the call."""

    def on_tool_start(self, run: RunInfo, event: ToolCallStarted) -> None | Awaitable[None]:
        """A tool call starts."""

    def on_tool_end(self, run: RunInfo, event: ToolCallFinished) -> None | Awaitable[None]:
        """A tool call succeeded."""

    def on_tool_error(self, run: RunInfo, event: ToolCallFinished) -> None | Awaitable[None]:
        """A tool call failed (``event.meta.error`` says why; the model sees ``event.observation``)."""


Handler = Callable[..., Any]


def _handlers(callbacks: Iterable[object], name: str) -> tuple[Handler, ...]:
    """The bound ``name`` methods of ``callbacks`` that do something (AgentCallback's no-op defaults
    are left out, so an unused event costs nothing)."""
    default = getattr(AgentCallback, name)
    found = []
    for cb in callbacks:
        method = getattr(type(cb), name, None)
        if method is None or method is default:
            continue
        found.append(getattr(cb, name))
    return tuple(found)


class CallbackDispatcher:
    """The callbacks of one run, by event. ``emit_*`` methods call them; the loop calls those only
    when a dispatcher exists (``None`` when no callback is registered)."""

    __slots__ = (
        "run",
        "_pending",
        "_worker",
        "_dropped",
        "on_agent_start",
        "on_agent_finish",
        "on_agent_error",
        "on_round_start",
        "on_round_end",
        "on_llm_start",
        "on_llm_chunk",
        "on_llm_end",
        "on_tool_start",
        "on_tool_end",
        "on_tool_error",
    )
    # The handlers of each event (empty when no callback has it).
    on_agent_start: tuple[Handler, ...]
    on_agent_finish: tuple[Handler, ...]
    on_agent_error: tuple[Handler, ...]
    on_round_start: tuple[Handler, ...]
    on_round_end: tuple[Handler, ...]
    on_llm_start: tuple[Handler, ...]
    on_llm_chunk: tuple[Handler, ...]
    on_llm_end: tuple[Handler, ...]
    on_tool_start: tuple[Handler, ...]
    on_tool_end: tuple[Handler, ...]
    on_tool_error: tuple[Handler, ...]

    def __init__(self, callbacks: Sequence[object], run: RunInfo) -> None:
        self.run = run
        for name in EVENTS:
            setattr(self, name, _handlers(callbacks, name))
        self._pending: asyncio.Queue[Awaitable[Any]] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._dropped = 0

    def emit(self, handlers: tuple[Handler, ...], *args: Any) -> None:
        """Call each handler with the run and ``args``; an awaitable result is queued for the
        background worker; an exception is logged and ignored."""
        for handler in handlers:
            try:
                result = handler(self.run, *args)
            except Exception:
                log.exception("agent callback %s failed; ignored", _name(handler))
                continue
            if result is not None and inspect.isawaitable(result):
                self._schedule(result, handler)

    def _schedule(self, awaitable: Awaitable[Any], handler: Handler) -> None:
        if self._pending is None:
            self._pending = asyncio.Queue(MAX_PENDING)
            self._worker = asyncio.get_running_loop().create_task(self._drain())
            _WORKERS.add(self._worker)
            self._worker.add_done_callback(_WORKERS.discard)
        try:
            self._pending.put_nowait(awaitable)
        except asyncio.QueueFull:
            _close(awaitable)
            self._dropped += 1
            if self._dropped == 1:
                log.warning(
                    "agent callback %s is too slow: events dropped for run %s", _name(handler), self.run.id
                )

    async def _drain(self) -> None:
        assert self._pending is not None
        while True:
            awaitable = await self._pending.get()
            try:
                await awaitable
            except Exception:
                log.exception("async agent callback failed; ignored")
            finally:
                self._pending.task_done()

    async def wait(self) -> None:
        """Wait until every async callback started so far has run (tests, graceful shutdown)."""
        if self._pending is not None:
            await self._pending.join()


# Strong references to running workers: the event loop keeps only weak ones to tasks.
_WORKERS: set[asyncio.Task[None]] = set()


def _close(awaitable: Awaitable[Any]) -> None:
    if inspect.iscoroutine(awaitable):
        awaitable.close()  # never awaited on purpose: no "was never awaited" warning


def _name(handler: Handler) -> str:
    return getattr(handler, "__qualname__", repr(handler))


def new_dispatcher(
    callbacks: Sequence[object], *, query: str, strategy: str, model: str, context: ToolContext
) -> CallbackDispatcher | None:
    """The dispatcher of one run, or None when there is no callback (the zero-cost case)."""
    if not callbacks:
        return None
    run_id = context.message_id or uuid.uuid4().hex
    return CallbackDispatcher(callbacks, RunInfo(run_id, query, strategy, model, context))


def load_callback(path: str) -> object:
    """A callback named by import path, ``"package.module:name"``: a class or function is called with
    no arguments to make the callback; any other object is the callback itself."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"a callback path is 'package.module:name', not {path!r}")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target() if callable(target) and not _is_callback(target) else target


def _is_callback(obj: object) -> bool:
    return not isinstance(obj, type) and any(hasattr(obj, name) for name in EVENTS)
