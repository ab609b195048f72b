"""Callbacks: code of yours told what a run does, as it does it (Dify's agent callback handler).

Subclass :class:`AgentCallback` and override the hooks you need, as plain or ``async`` methods; give
instances to ``Agent(callbacks=[...])`` (every run) or ``agent.stream(..., callbacks=[...])`` (one run).

How they are called:

- A **plain method** runs inline, between two events of the run: it costs the run its own time and
  nothing else.
- An **async method** never holds the run: each callback object gets one queue and one task that
  awaits its hooks in order, so a slow one falls behind without slowing the model's stream.
  ``await agent.flush_callbacks()`` waits until every queued hook has run (tests, shutdown).
- A hook that raises is logged (``loopwright.agent.callbacks``, with its traceback) and ignored; the
  run goes on as if it had not been called.
- With no callback registered the run is exactly the loop's own stream: nothing is wrapped.

The hooks, in the order a run calls them: ``on_agent_start``; per round ``on_round_start``,
``on_llm_start``, ``on_llm_chunk``…, ``on_llm_end`` (the reply has been read: before its tool calls
run), ``on_tool_start`` / ``on_tool_end`` or ``on_tool_error`` per call, ``on_round_end`` (with the
round's usage); then ``on_agent_finish``, or ``on_agent_error`` (the run raised) or ``on_agent_stop``
(its consumer stopped listening).

Strategy ``"plan"`` adds ``on_plan`` (a plan or a new plan was written) and ``on_plan_step_start`` /
``on_plan_step_end`` around each step's tool call; a round that runs a plan's steps calls no model, so
it has no ``on_llm_start``/``on_llm_end``. A tool that streams progress adds ``on_tool_progress``
calls between its ``on_tool_start`` and ``on_tool_end``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from typing import Any

from loopwright.agent.events import (
    AgentEvent,
    AgentResult,
    ApprovalRequired,
    Finished,
    PlanCreated,
    PlanStepFinished,
    PlanStepStarted,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
)

log = logging.getLogger(__name__)

HOOKS = (
    "on_agent_start",
    "on_agent_finish",
    "on_agent_error",
    "on_agent_stop",
    "on_round_start",
    "on_round_end",
    "on_llm_start",
    "on_llm_chunk",
    "on_llm_end",
    "on_tool_start",
    "on_tool_end",
    "on_tool_error",
    "on_tool_progress",
    "on_plan",
    "on_plan_step_start",
    "on_plan_step_end",
)


class AgentCallback:
    """Every hook a run calls; each does nothing here. Override what you need (plain or async)."""

    def on_agent_start(self, query: str) -> Any:
        """The run starts."""

    def on_agent_finish(self, result: AgentResult) -> Any:
        """The run ended with an answer (``result.metrics`` has its figures)."""

    def on_agent_error(self, error: BaseException) -> Any:
        """The run raised ``error`` (the model failed, the iteration cap was hit, …)."""

    def on_agent_stop(self) -> Any:
        """The run's consumer stopped listening before it ended (a stopped run)."""

    def on_round_start(self, event: RoundStarted) -> Any:
        """A round starts."""

    def on_round_end(self, event: RoundFinished) -> Any:
        """A round ended: its thought, its calls with their observations, its usage."""

    def on_llm_start(self, round: int) -> Any:
        """The model is called for ``round``."""

    def on_llm_chunk(self, event: TextDelta) -> Any:
        """The model streamed text."""

    def on_llm_end(self, round: int) -> Any:
        """The model's reply for ``round`` has been read (its usage comes with ``on_round_end``)."""

    def on_tool_start(self, event: ToolCallStarted) -> Any:
        """A tool call starts."""

    def on_tool_end(self, event: ToolCallFinished) -> Any:
        """A tool call succeeded."""

    def on_tool_error(self, event: ToolCallFinished) -> Any:
        """A tool call failed: ``event.meta.error`` says why; the observation tells the model."""

    def on_tool_progress(self, event: ToolProgress) -> Any:
        """A running tool call reported progress (``event.text``, ``event.fraction``)."""

    def on_plan(self, event: PlanCreated) -> Any:
        """Strategy ``"plan"``: the model wrote a plan (``event.revision`` 0) or a new one."""

    def on_plan_step_start(self, event: PlanStepStarted) -> Any:
        """A plan's step starts (its tool call's ``on_tool_start`` follows)."""

    def on_plan_step_end(self, event: PlanStepFinished) -> Any:
        """A plan's step ended: ``done``, ``failed`` or ``skipped``."""


class _Target:
    """One callback object's overridden hooks, split into the plain and the async ones."""

    __slots__ = ("name", "plain", "queued", "queue")

    def __init__(self, callback: object) -> None:
        self.name = type(callback).__name__
        self.plain: dict[str, Callable[..., Any]] = {}
        self.queued: dict[str, Callable[..., Any]] = {}
        self.queue: asyncio.Queue[tuple[Callable[..., Any], tuple[Any, ...]] | None] | None = None
        for hook in HOOKS:
            method = getattr(callback, hook, None)
            if method is None or getattr(type(callback), hook, None) is getattr(AgentCallback, hook, None):
                continue  # not overridden: never called
            (self.queued if inspect.iscoroutinefunction(method) else self.plain)[hook] = method


class CallbackDispatch:
    """Calls one run's callbacks (see the module's docstring); ``tasks`` holds the async workers
    (the Agent keeps them so they are not collected while they run)."""

    def __init__(self, callbacks: Sequence[object], tasks: set[asyncio.Task[None]]) -> None:
        self._targets = [_Target(c) for c in callbacks]
        self._tasks = tasks

    def __call__(self, hook: str, *args: Any) -> None:
        for target in self._targets:
            plain = target.plain.get(hook)
            if plain is not None:
                try:
                    plain(*args)
                except Exception:
                    log.exception("callback %s.%s raised; ignored", target.name, hook)
                continue
            queued = target.queued.get(hook)
            if queued is not None:
                self._enqueue(target, queued, args)

    def close(self) -> None:
        """No more hooks: each async worker ends once its queue is empty."""
        for target in self._targets:
            if target.queue is not None:
                target.queue.put_nowait(None)

    def _enqueue(self, target: _Target, method: Callable[..., Any], args: tuple[Any, ...]) -> None:
        if target.queue is None:
            target.queue = asyncio.Queue()
            task = asyncio.get_running_loop().create_task(_drain(target.name, target.queue))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        target.queue.put_nowait((method, args))


async def _drain(name: str, queue: asyncio.Queue[tuple[Callable[..., Any], tuple[Any, ...]] | None]) -> None:
    while (item := await queue.get()) is not None:
        method, args = item
        try:
            await method(*args)
        except Exception:
            log.exception("callback %s.%s raised; ignored", name, method.__name__)


async def with_callbacks(
    events: AsyncGenerator[AgentEvent, None], dispatch: CallbackDispatch, query: str
) -> AsyncGenerator[AgentEvent, None]:
    """The run's events unchanged, with the callbacks told of each."""
    dispatch("on_agent_start", query)
    reading = 0  # the round whose model reply is being read; 0: none
    try:
        async with aclosing(events):
            async for event in events:
                kind = type(event)
                if kind is TextDelta:
                    dispatch("on_llm_chunk", event)
                elif kind is RoundStarted:
                    dispatch("on_round_start", event)
                    if event.calls_model:  # type: ignore[union-attr]
                        reading = event.round  # type: ignore[union-attr]
                        dispatch("on_llm_start", reading)
                else:
                    reading = _after_reply(dispatch, event, reading)
                yield event
    except GeneratorExit:
        if reading != _FINISHED:  # closed after its answer: the run finished, it was not stopped
            dispatch("on_agent_stop")
        raise
    except BaseException as error:
        dispatch("on_agent_error", error)
        raise
    finally:
        dispatch.close()


def _after_reply(dispatch: CallbackDispatch, event: AgentEvent, reading: int) -> int:
    """Hooks for the events that follow a model reply; returns the round still being read (0: none)."""
    if reading and type(event) in (ToolCallStarted, RoundFinished, ApprovalRequired, PlanCreated):
        dispatch("on_llm_end", reading)
        reading = 0
    if type(event) is ToolCallStarted:
        dispatch("on_tool_start", event)
    elif type(event) is ToolCallFinished:
        dispatch("on_tool_error" if event.meta.error is not None else "on_tool_end", event)
    elif type(event) is RoundFinished:
        dispatch("on_round_end", event)
    elif type(event) is Finished:
        dispatch("on_agent_finish", event.result)
        return _FINISHED
    else:
        hook = _MORE_HOOKS.get(type(event))
        if hook is not None:
            dispatch(hook, event)
    return reading


_MORE_HOOKS: dict[type, str] = {
    ToolProgress: "on_tool_progress",
    PlanCreated: "on_plan",
    PlanStepStarted: "on_plan_step_start",
    PlanStepFinished: "on_plan_step_end",
}


_FINISHED = -1  # what _after_reply returns once the run has answered


_SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "authorization", "credential", "cookie")
TRUNCATE_AT = 200


def _short(text: str, limit: int = TRUNCATE_AT) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def _safe_arguments(arguments: dict[str, Any] | str) -> str:
    """Tool arguments for a log line: values under secret-looking names masked, then truncated."""
    if isinstance(arguments, dict):
        shown = {k: "***" if any(w in k.lower() for w in _SECRET_WORDS) else v for k, v in arguments.items()}
        return _short(repr(shown))
    return _short(arguments)


class LoggingCallback(AgentCallback):
    """One structured log line per event (logger ``loopwright.agent.run``; chunks at DEBUG, the rest at
    INFO): tool arguments and outputs truncated to 200 characters, values of arguments whose names
    look secret (key, token, password, …) masked. Model text is not logged, only its size."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.log = logger or logging.getLogger("loopwright.agent.run")

    def on_agent_start(self, query: str) -> None:
        self.log.info("agent_start query_chars=%d", len(query))

    def on_agent_finish(self, result: AgentResult) -> None:
        self.log.info(
            "agent_finish rounds=%d %s", result.rounds, result.metrics.summary() if result.metrics else ""
        )

    def on_agent_error(self, error: BaseException) -> None:
        self.log.info("agent_error type=%s message=%s", type(error).__name__, _short(str(error)))

    def on_agent_stop(self) -> None:
        self.log.info("agent_stop")

    def on_round_start(self, event: RoundStarted) -> None:
        if event.offered is None:
            self.log.info("round_start round=%d", event.round)
        else:
            self.log.info("round_start round=%d offered=%s", event.round, ",".join(event.offered))

    def on_round_end(self, event: RoundFinished) -> None:
        usage = event.usage
        self.log.info(
            "round_end round=%d calls=%d tokens=%d latency=%.3f",
            event.round,
            len(event.calls),
            usage.total_tokens if usage else 0,
            usage.latency if usage else 0.0,
        )

    def on_llm_start(self, round: int) -> None:
        self.log.info("llm_start round=%d", round)

    def on_llm_chunk(self, event: TextDelta) -> None:
        self.log.debug("llm_chunk round=%d chars=%d", event.round, len(event.text))

    def on_llm_end(self, round: int) -> None:
        self.log.info("llm_end round=%d", round)

    def on_tool_start(self, event: ToolCallStarted) -> None:
        self.log.info(
            "tool_start tool=%s call=%s arguments=%s", event.name, event.id, _safe_arguments(event.arguments)
        )

    def on_tool_end(self, event: ToolCallFinished) -> None:
        self.log.info(
            "tool_end tool=%s call=%s time=%.3f output=%s",
            event.name,
            event.id,
            event.meta.time_cost,
            _short(event.observation),
        )

    def on_tool_error(self, event: ToolCallFinished) -> None:
        self.log.info(
            "tool_error tool=%s call=%s time=%.3f error=%s",
            event.name,
            event.id,
            event.meta.time_cost,
            _short(event.meta.error or ""),
        )

    def on_plan(self, event: PlanCreated) -> None:
        steps = ",".join(s.id for s in event.steps)
        self.log.info("plan round=%d revision=%d steps=%s", event.round, event.revision, steps)

    def on_plan_step_end(self, event: PlanStepFinished) -> None:
        self.log.info("plan_step step=%s tool=%s status=%s", event.step.id, event.step.tool, event.status)
