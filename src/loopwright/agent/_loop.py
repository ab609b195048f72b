"""The one agent loop both strategies share: prompt → model → read reply → tools → repeat.

Iteration cap, last-round tool withholding, usage accounting, the repeated-call guardrail, parse
recovery, concurrent tool execution and every event live here. A strategy only builds the request and
reads the reply (``Strategy`` below).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Protocol

from loopwright.agent._guardrails import RepeatGuard, repeated_call_note
from loopwright.agent.approvals import ApprovalDecision, Interruption, PendingCall, denial_observation
from loopwright.agent.budget import Budget
from loopwright.agent.durability import INTERRUPTED_OBSERVATION, StepLog
from loopwright.agent.errors import AgentMaxIterationError, AgentRepeatedToolCallError
from loopwright.agent.events import (
    AgentEvent,
    AgentResult,
    ApprovalRequired,
    Finished,
    FinishReason,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallRecord,
    ToolCallStarted,
    ToolProgress,
)
from loopwright.agent.metrics import RunMetrics
from loopwright.agent.output import output_note
from loopwright.agent.run_state import PendingRound, RunState
from loopwright.agent.tool_selection import ToolChoiceRequest, ToolSelector
from loopwright.errors import AgentError
from loopwright.model.base import Model, ReactTurn
from loopwright.model.entities import (
    AssistantMessage,
    LLMChunk,
    PromptMessage,
    ToolSchema,
    Usage,
    UserMessage,
)
from loopwright.model.settings import ModelSettings
from loopwright.tools.base import ProgressMessage, Tool, ToolContext, Toolset
from loopwright.tools.engine import ProgressSink, ToolEngine, ToolInvokeMeta

log = logging.getLogger("loopwright.agent")

# ReactDecodingModel.stream_react and RunTimedModel.stream_timed, bound to their model
StreamReact = Callable[..., AsyncGenerator[LLMChunk, None]]
StreamTimed = Callable[..., AsyncGenerator[LLMChunk, None]]


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """The knobs of the loop: one agent configuration's, built once and shared by all its runs (a run
    never changes them)."""

    max_iterations: int
    max_parallel_tools: int
    max_malformed_retries: int
    params: ModelSettings
    tool_choice: str  # for the first round; later rounds are "auto"
    repeat_limit: int | None = None  # the repeated-call guard's limit (None: no guard)
    clock: Callable[[], float] = time.perf_counter  # what the run's metrics are measured with
    # the model's ReactDecodingModel.stream_react, when it has one (checked once per configuration:
    # isinstance on a Protocol costs ~4 µs)
    stream_react: StreamReact | None = None
    # the model's RunTimedModel.stream_timed, when it has one: its other rounds are told the run's time
    stream_timed: StreamTimed | None = None
    # structured output: answers that do not follow the schema are sent back at most this many times,
    # and not after ``output_budget`` seconds (on ``clock``) of the run
    max_output_retries: int = 2
    output_budget: float | None = None
    # tools (by name) whose calls wait for a person's approval (agent.approvals), beside those the
    # tools themselves mark (the engine's ``approval_names``)
    approval_names: frozenset[str] = frozenset()
    selector: ToolSelector | None = None  # chooses the tools of each round (agent.tool_selection)
    budget: Budget | None = None  # the agent's caps on a run's spending (agent.budget), unless a run's own


@dataclass(frozen=True, slots=True)
class LoopTools:
    """An agent's tools, prepared: one engine shared by its runs (so the tool result cache outlives a
    run). A toolset may change its tools between runs: when there is one, each run asks again and the
    engine's table is renewed."""

    engine: ToolEngine
    items: tuple[Tool | Toolset, ...] = ()  # the agent's tools and toolsets, in order
    dynamic: bool = False  # a toolset is among them

    async def current(self) -> ToolEngine:
        if self.dynamic:
            tools: list[Tool] = []
            for item in self.items:
                if isinstance(item, Tool):
                    tools.append(item)
                else:
                    tools.extend(await item.get_tools())
            self.engine.set_tools(tools)
        return self.engine


@dataclass(slots=True)
class _Run:
    """What one run adds to the settings: its engine, whose calls wait for approval, the repeated-call
    guard, who the run is for and where its steps go."""

    settings: LoopSettings
    engine: ToolEngine
    context: ToolContext
    guard: RepeatGuard | None
    approval_names: frozenset[str]
    steps: StepLog | None
    decisions: Mapping[str, ApprovalDecision]  # a resumed run's, on its paused round's calls

    def snapshot(self, state: RunState) -> RunState:
        """The state to go on from, detached from the running one (approvals, durable steps)."""
        elapsed = self.settings.clock() - state.started_at
        return state.snapshot(elapsed, self.guard.memory() if self.guard is not None else [])


@dataclass(slots=True)
class RoundReply:
    """What a strategy read from one model reply."""

    text: str
    calls: list[ToolCallRecord]
    usage: Usage | None
    answer: str | None = None  # the final answer, when the reply has no tool calls
    answer_streamed: bool = True  # False when the answer came inside an action and was not yet shown
    problem: str | None = None  # the reply attempted an action that could not be read
    finish_reason: str | None = None  # the model's own (its last chunk's): "stop", "length", …
    output_call: ToolCallRecord | None = None  # function calling: the answer came through the output tool


@dataclass(slots=True)
class ModelRequest:
    messages: list[PromptMessage]
    tools: Sequence[ToolSchema]
    stop: Sequence[str]
    react: ReactTurn | None = None  # ReAct: what the round's prompt offers (see model.base.ReactTurn)
    elapsed: float = 0.0  # the run's seconds so far as the round starts


class Strategy(Protocol):
    """How one kind of agent talks to the model; everything else is the loop's."""

    def request(self, state: RunState, tools: Sequence[ToolSchema]) -> ModelRequest: ...

    def read(
        self, chunks: AsyncIterator[LLMChunk], state: RunState
    ) -> AsyncGenerator[TextDelta | RoundReply, None]: ...

    def record(self, state: RunState, reply: RoundReply) -> None:
        """Append a finished tool round (calls with observations) to the state."""

    def record_problem(self, state: RunState, reply: RoundReply, note: str) -> None:
        """Append an unreadable reply and the corrective note sent back to the model."""

    def record_output_problem(self, state: RunState, reply: RoundReply, note: str) -> None:
        """Append an answer that does not follow the output schema and the note sent back."""


def malformed_note(problem: str) -> str:
    return (
        f"Your last reply could not be used: {problem}. Reply with a Thought, then an Action with exactly "
        'one JSON blob in a ``` fence: {"action": <tool name or "Final Answer">, "action_input": <input>}.'
    )


async def run_loop(
    model: Model,
    strategy: Strategy,
    tools: LoopTools,
    state: RunState,
    settings: LoopSettings,
    context: ToolContext,
    steps: StepLog | None = None,
    decisions: Mapping[str, ApprovalDecision] | None = None,
    budget: Budget | None = None,
) -> AsyncGenerator[AgentEvent, None]:
    """The events of one run. The caller iterates this generator directly (no wrapper generator):
    every level of async generators costs time on each event. ``settings`` and ``tools`` are shared by
    the runs of one configuration: only ``state`` is this run's to change. ``decisions`` (by call id)
    decide a resumed run's paused round; ``budget`` replaces the settings' for this run."""
    engine = await tools.current()
    schemas = engine.schemas
    approval = (
        settings.approval_names | engine.approval_names if engine.approval_names else settings.approval_names
    )
    guard = RepeatGuard(settings.repeat_limit) if settings.repeat_limit else None
    if guard is not None and state.guard:
        guard.restore(state.guard)  # a resumed run: the calls before the pause count
    run = _Run(settings, engine, context, guard, approval, steps, decisions or {})
    clock = settings.clock
    state.started_at = clock() - state.elapsed  # a resumed run: its time so far counts
    cap = min(settings.max_iterations, 99) + 1
    budget = _limited(budget or settings.budget)
    if state.pending is not None:  # a resumed run: the round that waited for decisions goes first
        async with aclosing(_resume_round(run, strategy, state)) as resumed:
            async for event in resumed:
                yield event
    for rnd in range(state.round + 1, cap + 1):
        if steps is not None:  # durable: the rounds so far are kept (the model call does not wait)
            await steps.step(run.snapshot(state), before_effects=False)
        state.round = rnd
        # The last round, or the one after a repeated call, offers no tools: the model must answer.
        last = rnd == cap or state.repeated is not None
        offered: tuple[str, ...] | None = None
        round_tools: Sequence[ToolSchema] = schemas
        if settings.selector is not None and not last and schemas:
            round_tools, offered = await _select_tools(settings.selector, schemas, state)
        started = clock()  # one reading: the run's time so far, and the start of the model call
        req = _request(strategy, state, () if last else round_tools, started - state.started_at)
        _check_call(budget, model, req, state)  # before the round starts: no empty round is left
        yield RoundStarted(rnd, offered)
        reply: RoundReply | None = None
        chunks = _model_stream(model, settings, req, _round_params(settings, req, rnd))
        items = strategy.read(chunks, state)
        # Closed in any case (as ``aclosing`` would, without its three calls per generator): a consumer
        # that stops listening closes the model's stream right away.
        try:
            try:
                async for item in items:
                    if type(item) is TextDelta:
                        if not state.first_token_at:
                            state.first_token_at = clock()
                        yield item
                    else:
                        reply = item  # type: ignore[assignment]
            finally:
                await items.aclose()
        finally:
            await chunks.aclose()
        assert reply is not None, "a strategy must end its reply with a RoundReply"
        usage = _timed(reply.usage, clock() - started)
        state.usage = state.usage.plus(usage)
        state.last_prompt_tokens = usage.prompt_tokens
        step = _settle(strategy, state, reply, last, run)
        if step is not _Step.TOOLS:
            for event in _round_end(step, state, reply, usage, run):
                yield event
            if step is _Step.RETRY:
                continue
            return
        _check_tools(budget, state, reply)
        if (  # one call that streams nothing: inline, no task or queue
            len(reply.calls) == 1
            and reply.calls[0].observation is None
            and steps is None
            and reply.calls[0].name not in engine.progress_names
        ):
            call = reply.calls[0]
            yield ToolCallStarted(rnd, call.id, call.name, call.arguments)
            await _invoke(engine, call, context)
            yield _finished_event(rnd, call, state)
        else:
            async with aclosing(_round_calls(run, reply, usage, state)) as call_events:
                async for event in call_events:
                    yield event
        state.calls.extend(reply.calls)
        strategy.record(state, reply)
        yield RoundFinished(rnd, reply.text, reply.calls, usage)
    raise AssertionError("unreachable: the last round either answers or raises")


def _request(
    strategy: Strategy, state: RunState, tools: Sequence[ToolSchema], elapsed: float
) -> ModelRequest:
    """The round's request, with the run's time so far (``elapsed``; in a ReAct round's offer too), for
    a model with a budget for the whole run (the embedded model)."""
    req = strategy.request(state, tools)
    req.elapsed = elapsed
    if req.react is not None:
        req.react = replace(req.react, elapsed=elapsed)
    return req


def _limited(budget: Budget | None) -> Budget | None:
    """The run's budget, when it caps anything."""
    return budget if budget is not None and budget.limited else None


def _check_call(budget: Budget | None, model: Model, req: ModelRequest, state: RunState) -> None:
    """Stop the run before a model call that would cross a cap (agent.budget): its prompt is
    estimated as the larger of the model's count and the last call's prompt."""
    if budget is not None:
        next_prompt = max(model.count_tokens(req.messages), state.last_prompt_tokens)
        budget.check_model_call(state.round - 1, state.usage, next_prompt)


def _check_tools(budget: Budget | None, state: RunState, reply: RoundReply) -> None:
    """Stop the run before tool calls that would cross its cap on tool calls."""
    if budget is not None:
        budget.check_tool_calls(len(state.calls), len(reply.calls))


class _Step(enum.Enum):
    """What a model reply leads to."""

    RETRY = "retry"  # an unreadable reply, sent back to the model with a note
    ANSWER = "answer"  # the run ends with this reply's answer
    TOOLS = "tools"  # the reply's tool calls run
    PAUSE = "pause"  # the run waits for a person's approval of the reply's tool calls


def _round_end(
    step: _Step, state: RunState, reply: RoundReply, usage: Usage, run: _Run
) -> Iterable[AgentEvent]:
    """The events of a round whose tool calls do not run now (``step`` is not TOOLS)."""
    if step is _Step.RETRY:
        return [RoundFinished(state.round, reply.text, [], usage)]
    if step is _Step.ANSWER:
        return _finish(state, reply, usage, run.settings.clock)
    return _interrupt(state, reply, usage, run)


def _settle(strategy: Strategy, state: RunState, reply: RoundReply, last: bool, run: _Run) -> _Step:
    """What a reply leads to. Raises when the last round still asks for tools; records a malformed
    reply's note while retries remain; holds repeated calls (guardrail) before tools run."""
    settings = run.settings
    if reply.calls and last:
        raise _out_of_rounds(state, run)
    if reply.problem is not None:
        state.malformed_streak += 1
        if state.malformed_streak <= settings.max_malformed_retries and not last:
            strategy.record_problem(state, reply, malformed_note(reply.problem))
            state.malformed += 1
            return _Step.RETRY
        reply.answer = reply.text.strip()  # out of retries: the reply's text is the best answer
    if not reply.calls:
        if state.output is not None and not _output_ok(strategy, state, reply, last, settings):
            return _Step.RETRY
        return _Step.ANSWER
    state.malformed_streak = 0
    if run.guard is not None:
        _hold_repeats(run.guard, state, reply.calls)
        if state.repeated is not None and _failed_before(state, reply.calls):
            # The same failing call again: another round would only copy the guard's note into the
            # answer (small models do). The run ends here with the honest short answer.
            reply.calls, reply.answer, reply.answer_streamed = [], COULD_NOT_COMPUTE, False
            return _Step.ANSWER
    if run.approval_names and _awaiting(run.approval_names, reply.calls):
        return _Step.PAUSE
    return _Step.TOOLS


def _output_ok(
    strategy: Strategy, state: RunState, reply: RoundReply, last: bool, settings: LoopSettings
) -> bool:
    """Whether the answer follows the output schema (its typed value is kept); if not, the errors
    are sent back while retries and time remain, else the answer stays plain text (a fall-back)."""
    assert state.output is not None
    answer = reply.answer if reply.answer is not None else reply.text
    value, text, errors = state.output.check(answer)
    if not errors:
        state.output_value, state.output_errors = value, []
        reply.answer = text
        return True
    state.output_errors = errors
    budget = settings.output_budget
    in_time = budget is None or settings.clock() - state.started_at < budget
    if state.output_attempts < settings.max_output_retries and in_time and not last:
        state.output_attempts += 1
        strategy.record_output_problem(state, reply, output_note(errors))
        return False
    if reply.output_call is not None:  # the answer came as tool arguments: show it as text
        reply.answer, reply.answer_streamed = answer, False
    return True


def _awaiting(names: frozenset[str], calls: list[ToolCallRecord]) -> bool:
    return any(c.observation is None and c.name in names for c in calls)


def _interrupt(state: RunState, reply: RoundReply, usage: Usage, run: _Run) -> list[AgentEvent]:
    """The run pauses before the round's calls: which wait for approval, and the state to resume."""
    names = run.approval_names
    waiting = [c for c in reply.calls if c.observation is None and c.name in names]
    state.pending = PendingRound(reply.text, reply.calls, usage, {c.id for c in waiting})
    snapshot = run.snapshot(state)
    pending = [PendingCall(c.id, c.name, c.arguments) for c in waiting]
    result = AgentResult(
        text="",
        files=state.files,
        usage=state.usage,
        finish_reason="approval_required",
        rounds=state.round,
        messages=[*state.history, state.user_message, *state.turn],
        metrics=_metrics(state, run.settings.clock()),
        interruption=Interruption(pending, snapshot),
    )
    return [ApprovalRequired(state.round, reply.text, reply.calls, pending), Finished(result)]


async def _resume_round(run: _Run, strategy: Strategy, state: RunState) -> AsyncGenerator[AgentEvent, None]:
    """The paused round, decided: approved calls run (with edited arguments when given), denied ones
    (and those left without a decision) get the denial as their observation. A durable run's round
    taken up after a crash (agent.durability) runs the calls that had not finished; a non-idempotent
    one that had started gets :data:`INTERRUPTED_OBSERVATION`."""
    pending = state.pending
    assert pending is not None
    for call in pending.calls:
        if call.observation is None and call.id in pending.started:
            call.observation = INTERRUPTED_OBSERVATION
            call.meta = ToolInvokeMeta(0.0, "interrupted", {})
        if call.id not in pending.awaiting:
            continue
        decision = run.decisions.get(call.id) or ApprovalDecision.deny(call.id, "no decision was given")
        if not decision.approved:
            call.observation = denial_observation(decision.reason)
            call.meta = ToolInvokeMeta(0.0, "denied", {})
        elif decision.answer is not None:  # a question the user answered: the answer is the result
            call.observation = decision.answer
            call.meta = ToolInvokeMeta(0.0, None, {})
        elif decision.arguments is not None:
            call.arguments, call.raw_arguments = dict(decision.arguments), None
    pending.awaiting = set()  # decided: a durable snapshot from here on runs the calls as they are
    if run.steps is None:
        state.pending = None
    else:  # durable: the decisions are kept before the calls run
        await run.steps.step(run.snapshot(state))
    async with aclosing(_run_calls(run, pending.calls, state)) as call_events:
        async for event in call_events:
            yield event
    state.pending = None
    state.calls.extend(pending.calls)
    reply = RoundReply(pending.text, pending.calls, pending.usage)
    strategy.record(state, reply)
    yield RoundFinished(state.round, pending.text, pending.calls, pending.usage)


async def _round_calls(
    run: _Run, reply: RoundReply, usage: Usage, state: RunState
) -> AsyncGenerator[AgentEvent, None]:
    """A round's calls (``_run_calls``); a durable run keeps the reply before they run, as a round
    waiting for them (agent.durability)."""
    steps = run.steps
    if steps is not None:
        state.pending = PendingRound(reply.text, reply.calls, usage, set())
        await steps.step(run.snapshot(state))
    try:
        async with aclosing(_run_calls(run, reply.calls, state)) as call_events:
            async for event in call_events:
                yield event
    finally:
        state.pending = None


async def _select_tools(
    selector: ToolSelector, tools: Sequence[ToolSchema], state: RunState
) -> tuple[Sequence[ToolSchema], tuple[str, ...] | None]:
    """The round's tools as the selector chose them (in the agent's order), and their names; every tool
    when it chooses none or fails (selection must never end a run)."""
    used = {c.name for c in state.calls} | _used_in(state.history)
    request = ToolChoiceRequest(tools, state.query, _texts(state.history), frozenset(used), state.round)
    try:
        names = await selector.select(request)
    except Exception as exc:
        log.warning("tool selection failed, offering every tool: %s", exc)
        return tools, None
    if names is None:
        return tools, None
    wanted = set(names)
    chosen = [t for t in tools if t.name in wanted]
    return chosen, tuple(t.name for t in chosen)


def _used_in(history: Sequence[PromptMessage]) -> set[str]:
    return {call.name for m in history if isinstance(m, AssistantMessage) for call in m.tool_calls}


def _texts(history: Sequence[PromptMessage]) -> list[str]:
    return [
        m.content
        for m in history
        if isinstance(m, UserMessage | AssistantMessage) and isinstance(m.content, str)
    ]


def _timed(usage: Usage | None, elapsed: float) -> Usage:
    """The round's usage with the model call's latency, when the provider did not measure it."""
    usage = usage or Usage()
    if usage.latency:
        return usage
    return usage.with_latency(elapsed)  # a copy: the provider's is not ours


def _model_stream(
    model: Model, settings: LoopSettings, req: ModelRequest, params: ModelSettings
) -> AsyncGenerator[LLMChunk, None]:
    """The model's reply to one round: a ReAct round goes to a model that takes its offer as data
    (ReactDecodingModel) through ``stream_react``; any other round to a model with a budget for a
    whole run (RunTimedModel) through ``stream_timed``, with the run's time so far; everything else
    through ``stream``."""
    if req.react is not None and settings.stream_react is not None:
        return settings.stream_react(req.messages, req.react, stop=req.stop, params=params)
    if settings.stream_timed is not None:
        return settings.stream_timed(
            req.messages, elapsed=req.elapsed, tools=req.tools, stop=req.stop, params=params
        )
    return model.stream(req.messages, tools=req.tools, stop=req.stop, params=params)


def _out_of_rounds(state: RunState, run: _Run) -> AgentError:
    """The error of a run whose last round still asked for tools."""
    if state.repeated is not None:
        return AgentRepeatedToolCallError(state.repeated, run.guard.limit if run.guard else 0)
    return AgentMaxIterationError(run.settings.max_iterations)


# The answer of a run that kept making the same failing tool call.
COULD_NOT_COMPUTE = "I could not compute that."


def _failed_before(state: RunState, calls: list[ToolCallRecord]) -> bool:
    """Whether the held (repeated) call failed the times it ran: its last run ended in an error."""
    held = {call.name for call in calls}
    for call in reversed(state.calls):
        if call.name in held:
            return call.meta is not None and call.meta.error is not None
    return False


def _hold_repeats(guard: RepeatGuard, state: RunState, calls: list[ToolCallRecord]) -> None:
    """A call repeated ``guard.limit`` times is not run again: the model is told so and gets one
    more round, without tools, to answer."""
    name = guard.repeated(calls)
    if name is None:
        return
    state.repeated = name
    note = repeated_call_note(name, guard.limit)
    for call in calls:
        call.observation = note
        call.meta = ToolInvokeMeta(0.0, "repeated call", {})


def _round_params(settings: LoopSettings, req: ModelRequest, rnd: int) -> ModelSettings:
    """The model parameters of one round: the agent's, plus ``tool_choice`` (first round only, and
    only when tools are offered, in the API's list or in a ReAct prompt)."""
    choice = settings.tool_choice if rnd == 1 else "auto"
    if choice == "auto" or not (req.tools if req.react is None else req.react.tools):
        return settings.params  # the common case: no copy
    params = settings.params.copy()
    params["tool_choice"] = choice
    return params


# The model's finish reasons a run reports as they are; any other ("tool_calls" on the answer round
# after a malformed reply, a provider's own word) is a normal stop.
_FINISH_REASONS: dict[str, FinishReason] = {"length": "length", "content_filter": "content_filter"}


def _finish(state: RunState, reply: RoundReply, usage: Usage, clock: Callable[[], float]) -> list[AgentEvent]:
    answer = reply.answer if reply.answer is not None else reply.text
    events: list[AgentEvent] = []
    if answer and not reply.answer_streamed:
        events.append(TextDelta(state.round, answer, "answer"))
    state.turn.append(AssistantMessage(answer))
    result = AgentResult(
        text=answer,
        files=state.files,
        usage=state.usage,
        finish_reason=_FINISH_REASONS.get(reply.finish_reason or "stop", "stop"),
        rounds=state.round,
        messages=[*state.history, state.user_message, *state.turn],
        metrics=_metrics(state, clock()),
    )
    if state.output is not None:
        result.output = state.output_value
        result.output_errors = state.output_errors
        result.output_fallback = bool(state.output_errors)
    events.append(RoundFinished(state.round, reply.text, [], usage, answer))
    events.append(Finished(result))
    return events


def _metrics(state: RunState, now: float) -> RunMetrics:
    """The run's figures from what the loop kept (see agent.metrics)."""
    tool_time: dict[str, float] = {}
    errors = 0
    for call in state.calls:
        if call.meta is not None:
            tool_time[call.name] = tool_time.get(call.name, 0.0) + call.meta.time_cost
            errors += call.meta.error is not None
    usage = state.usage
    return RunMetrics(
        total_time=now - state.started_at,
        model_time=usage.latency,
        time_to_first_token=state.first_token_at - state.started_at if state.first_token_at else None,
        rounds=state.round,
        tool_calls=len(state.calls),
        tool_errors=errors,
        malformed_recovered=state.malformed,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_price=usage.total_price,
        currency=usage.currency,
        tool_time=tool_time,
    )


async def _run_calls(
    run: _Run, calls: list[ToolCallRecord], state: RunState
) -> AsyncGenerator[AgentEvent, None]:
    """Run a round's calls, at most ``max_parallel_tools`` at a time. Started/finished events stream
    as calls start and end; each record gets its observation, so the model sees results in its own
    order whatever order they finished in."""
    rnd = state.round
    ready = [c for c in calls if c.observation is not None]  # refused before running (bad arguments)
    todo = [c for c in calls if c.observation is None]
    for c in ready:
        yield ToolCallStarted(rnd, c.id, c.name, c.arguments)
        yield _finished_event(rnd, c, state)
    if not todo:
        return
    queue: asyncio.Queue[AgentEvent] = asyncio.Queue()
    gate = asyncio.Semaphore(max(1, run.settings.max_parallel_tools))
    steps, engine = run.steps, run.engine
    unfinished = len(todo)

    async def one(call: ToolCallRecord) -> None:
        nonlocal unfinished
        async with gate:
            queue.put_nowait(ToolCallStarted(rnd, call.id, call.name, call.arguments))
            if steps is not None and call.name in engine.unsafe_names:  # durable: never run twice
                assert state.pending is not None
                state.pending.started.add(call.id)
                await steps.step(run.snapshot(state))
            progress = _progress_sink(queue, rnd, call) if call.name in engine.progress_names else None
            await _invoke(engine, call, run.context, progress)
            unfinished -= 1
            if steps is not None and unfinished:  # durable: the round's last is kept by the next round
                await steps.step(run.snapshot(state), before_effects=False)
            queue.put_nowait(_finished_event(rnd, call, state))

    tasks = [asyncio.create_task(one(c)) for c in todo]
    try:
        remaining = 2 * len(todo)  # a start and a finish per call; progress comes between them
        while remaining:
            event = await queue.get()
            if type(event) is not ToolProgress:
                remaining -= 1
            yield event
    finally:
        for t in tasks:
            t.cancel()  # a consumer that stops listening (a stopped run) stops the tools too
        await asyncio.gather(*tasks, return_exceptions=True)


def _progress_sink(queue: asyncio.Queue[AgentEvent], rnd: int, call: ToolCallRecord) -> ProgressSink:
    def sink(message: ProgressMessage) -> None:
        queue.put_nowait(
            ToolProgress(rnd, call.id, call.name, message.text, message.fraction, message.detail)
        )

    return sink


async def _invoke(
    engine: ToolEngine, call: ToolCallRecord, ctx: ToolContext, progress: ProgressSink | None = None
) -> None:
    result = await engine.invoke(call.name, call.arguments, ctx, progress)
    call.observation = result.observation
    call.files = result.files
    call.meta = result.meta
    call.outputs = result.outputs


def _finished_event(rnd: int, call: ToolCallRecord, state: RunState) -> ToolCallFinished:
    """A finished call's event; its files join the run's."""
    assert call.observation is not None and call.meta is not None
    state.files.extend(call.files)
    return ToolCallFinished(rnd, call.id, call.name, call.observation, call.files, call.meta, call.outputs)
