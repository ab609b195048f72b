"""Plan and execute (strategy ``"plan"``): the model writes a plan, its steps run as rounds with the
tools, a failed step leads to a new plan (bounded), and the model answers from the results.

Rounds, within the agent's round cap (``min(max_iterations, 99) + 1``):

1. a planning round: the model is offered only the plan tool (agent.planning) and made to call it;
   a reply without it is the answer (no plan was needed), a plan that cannot run is sent back with
   what is wrong (as an unreadable reply is, ``max_malformed_retries`` times);
2. one round per wave of steps, with no model call (``RoundStarted(calls_model=False)``): every step
   whose ``after`` steps are done runs in the same round, at once (at most ``max_parallel_tools``);
3. after a wave with a failed step, a planning round again while re-plans remain (``max_replans``);
   then the steps that need a failed one are skipped and the rest run;
4. the answer round: no tools offered, the model answers from the results.

The inner strategy (function calling or ReAct) builds every model request and reads every reply, and
records the plan and each wave as tool rounds: the answer round's prompt shows them as it would show
the model's own calls. Plans do not pause for approvals: a step whose tool needs a person's approval
is not run (it fails, and the model may plan without it); plan runs keep no durable checkpoints.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Sequence

from cachetools import LRUCache

from loopwright.agent._loop import (
    LoopSettings,
    LoopTools,
    ModelRequest,
    RoundReply,
    Strategy,
    _finish,
    _finished_event,
    _invoke,
    _model_stream,
    _output_ok,
    _request,
    _Run,
    _run_calls,
    _timed,
    malformed_note,
)
from loopwright.agent.events import (
    AgentEvent,
    PlanCreated,
    PlanStep,
    PlanStepFinished,
    PlanStepStarted,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallRecord,
    ToolCallStarted,
)
from loopwright.agent.planning import (
    PLAN_TOOL,
    PlanProblem,
    PlanSettings,
    plan_tool_schema,
    read_plan,
    render_checklist,
    with_results,
)
from loopwright.agent.run_state import RunState
from loopwright.model.base import Model
from loopwright.model.entities import ToolSchema, Usage, UserMessage
from loopwright.tools.base import ToolContext
from loopwright.tools.engine import ToolInvokeMeta

PLAN_ACCEPTED = "The plan is accepted; its steps run now."
APPROVAL_REFUSED = (
    "not run: this tool needs a person's approval, and a plan's steps do not wait for one; "
    "plan without it or answer"
)


def replan_note(failed: Sequence[tuple[PlanStep, str]]) -> str:
    lines = [f"Step {step.id} ({step.task}) failed: {why}" for step, why in failed]
    return "\n".join(lines) + f"\nWrite a new plan for what remains with {PLAN_TOOL}, or answer."


class PlanRun:
    """One plan-and-execute run (see the module's docstring); ``events()`` is the run's stream."""

    def __init__(
        self,
        model: Model,
        strategy: Strategy,
        tools: LoopTools,
        state: RunState,
        settings: LoopSettings,
        plans: PlanSettings,
        context: ToolContext,
    ) -> None:
        self.model = model
        self.strategy = strategy
        self.tools = tools
        self.state = state
        self.settings = settings
        self.plans = plans
        self.context = context
        self.cap = min(settings.max_iterations, 99) + 1
        self.revision = -1  # the last plan's (-1: none yet)
        self.steps: list[PlanStep] = []  # the current plan's steps not yet run
        self.results: dict[str, str] = {}  # observations of the steps done, by id (every revision)
        self.failed: list[tuple[PlanStep, str]] = []  # the last wave's failed steps and why
        self.lost: set[str] = set()  # failed or skipped steps, by id
        self.answer: RoundReply | None = None  # a planning round that answered instead
        self.retrying = False  # the last planning round wrote a plan that could not run

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        state, settings = self.state, self.settings
        engine = await self.tools.current()
        state.started_at = settings.clock() - state.elapsed
        run = _Run(settings, engine, self.context, None, frozenset(), None, {})
        names = {s.name for s in engine.schemas}
        approval = settings.approval_names | engine.approval_names
        plan_tools = _plan_tools(engine.schemas, self.plans.max_steps) if names else []
        note: str | None = None
        # a planning round or a wave needs room for itself and the answer round; a re-plan for a wave too
        while plan_tools and self.answer is None and self._room(2):
            reply: RoundReply | None = None
            async for item in self._model_round(plan_tools, note, PLAN_TOOL):
                if type(item) is RoundReply:
                    reply = item
                else:
                    yield item  # type: ignore[misc]
            assert reply is not None
            for event in self._settle_plan(reply, names):
                yield event
            note = None
            if self.retrying:
                continue
            while self.answer is None and self._ready() and self._room(2):
                async for event in self._wave(run, approval):
                    yield event
                if not self.failed:
                    continue
                if self.revision < self.plans.max_replans and self._room(3):
                    note = replan_note(self.failed)
                    self.steps = []  # the new plan replaces what is left
                    break
                for event in self._skip_lost():
                    yield event
            if note is None:
                break
        async for event in self._answer_round():
            yield event

    def _room(self, rounds: int) -> bool:
        """Whether ``rounds`` more rounds fit in the cap (the answer round among them)."""
        return self.state.round + rounds <= self.cap

    def _ready(self) -> list[PlanStep]:
        """The steps whose ``after`` steps are done: the next wave."""
        return [s for s in self.steps if all(a in self.results for a in s.after)]

    # --- rounds ----------------------------------------------------------------------------------

    async def _model_round(
        self, tools: Sequence[ToolSchema], note: str | None, tool_choice: str | None
    ) -> AsyncGenerator[AgentEvent | RoundReply, None]:
        """One model round: its events, then the reply it read (the caller settles it)."""
        state, settings = self.state, self.settings
        state.round += 1
        yield RoundStarted(state.round)
        # a ReAct round carries the run's time so far, as the loop's do (the embedded model's budget)
        req = _request(self.strategy, state, tools, settings.clock() - state.started_at)
        if note is not None:
            req = _with_note(req, note)
        params = settings.params
        if tool_choice is not None:
            params = params.copy()
            params["tool_choice"] = tool_choice
        clock = settings.clock
        started = clock()
        chunks = _model_stream(self.model, settings, req, params)
        items = self.strategy.read(chunks, state)
        reply: RoundReply | None = None
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
        reply.usage = _timed(reply.usage, clock() - started)
        state.usage = state.usage.plus(reply.usage)
        yield reply

    def _settle_plan(self, reply: RoundReply, names: set[str]) -> list[AgentEvent]:
        """A planning round's reply: a plan to run (``steps``), an answer (``answer``), or a plan sent
        back; the round's closing events."""
        state = self.state
        assert reply.usage is not None
        usage = reply.usage
        self.retrying = False
        plan_call = next((c for c in reply.calls if c.name == PLAN_TOOL), None)
        if reply.problem is not None and plan_call is None:  # ReAct: an unreadable reply
            if self._retry():
                self.strategy.record_problem(state, reply, malformed_note(reply.problem))
                self.retrying = True
                return [RoundFinished(state.round, reply.text, [], usage)]
            reply.answer = reply.text.strip()
            self.answer = reply
            return []
        if plan_call is None and not reply.calls:
            self.answer = reply  # no plan needed: this is the answer
            return []
        try:
            steps = self._read(reply, plan_call, names)
        except PlanProblem as problem:
            call = plan_call or reply.calls[0]
            call.observation = f"The plan cannot run: {problem}. Call {PLAN_TOOL} again."
            call.meta = ToolInvokeMeta(0.0, str(problem), {})
            self.strategy.record(state, RoundReply(reply.text, [call], usage))
            self.retrying = self._retry()
            if not self.retrying:  # out of retries: the answer round follows, without a plan
                self.steps = []
            return [RoundFinished(state.round, reply.text, [], usage)]
        state.malformed_streak = 0
        self.revision += 1
        self.steps = list(steps)
        if plan_call is not None:
            plan_call.observation = PLAN_ACCEPTED
            plan_call.meta = ToolInvokeMeta(0.0, None, {"tool_name": PLAN_TOOL})
            self.strategy.record(state, RoundReply(reply.text, [plan_call], usage))
        reason = "; ".join(f"{s.id} failed: {why}" for s, why in self.failed) or None
        self.failed = []
        checklist = render_checklist(steps, {})
        thought = f"{reply.text.strip()}\n\n{checklist}" if reply.text.strip() else checklist
        return [
            PlanCreated(state.round, steps, self.revision, reason),
            RoundFinished(state.round, thought, [], usage),
        ]

    def _read(
        self, reply: RoundReply, plan_call: ToolCallRecord | None, names: set[str]
    ) -> tuple[PlanStep, ...]:
        if plan_call is not None:
            if plan_call.observation is not None:  # function calling: arguments that were not JSON
                raise PlanProblem(plan_call.meta.error if plan_call.meta else "unreadable arguments")
            return read_plan(plan_call.arguments, names, self.plans.max_steps, self.results)
        # The model called tools instead of writing a plan: those calls are the plan (one wave).
        raw = [
            {"id": f"s{i + 1}", "task": c.name, "tool": c.name, "arguments": c.arguments}
            for i, c in enumerate(reply.calls)
        ]
        return read_plan({"steps": raw}, names, self.plans.max_steps, self.results)

    def _retry(self) -> bool:
        state = self.state
        state.malformed_streak += 1
        if state.malformed_streak <= self.settings.max_malformed_retries:
            state.malformed += 1
            return True
        return False

    async def _wave(self, run: _Run, approval: frozenset[str]) -> AsyncGenerator[AgentEvent, None]:
        """The steps that can run now, in one round at once."""
        state = self.state
        ready = self._ready()
        self.steps = [s for s in self.steps if s not in ready]
        state.round += 1
        rnd = state.round
        yield RoundStarted(rnd, calls_model=False)
        calls: list[ToolCallRecord] = []
        by_call: dict[str, PlanStep] = {}
        for step in ready:
            arguments = with_results(step.arguments, self.results)
            call = ToolCallRecord(f"call_{uuid.uuid4().hex[:24]}", step.tool, arguments)
            if step.tool in approval:
                call.observation = f"tool invoke error: {APPROVAL_REFUSED}"
                call.meta = ToolInvokeMeta(0.0, APPROVAL_REFUSED, {"tool_name": step.tool})
            calls.append(call)
            by_call[call.id] = step
        thought = "\n".join(f"{s.id}: {s.task}" for s in ready)
        # one step that streams nothing: no task, no queue
        if (
            len(calls) == 1
            and calls[0].observation is None
            and calls[0].name not in run.engine.progress_names
        ):
            call, only = calls[0], ready[0]
            yield PlanStepStarted(rnd, only, call.id)
            yield ToolCallStarted(rnd, call.id, call.name, call.arguments)
            await _invoke(run.engine, call, run.context)
            finished = _finished_event(rnd, call, state)
            yield finished
            yield self._step_end(rnd, only, finished)
        else:
            # each step's own event goes just before its call's start and just after its end
            async for event in _run_calls(run, calls, state):
                kind = type(event)
                if kind is ToolCallStarted:
                    yield PlanStepStarted(rnd, by_call[event.id], event.id)  # type: ignore[union-attr]
                    yield event
                elif kind is ToolCallFinished:
                    yield event
                    yield self._step_end(rnd, by_call[event.id], event)  # type: ignore[arg-type, union-attr]
                else:
                    yield event
        state.calls.extend(calls)
        self.strategy.record(state, RoundReply(thought, calls, None))
        yield RoundFinished(rnd, thought, calls, Usage())

    def _step_end(self, rnd: int, step: PlanStep, event: ToolCallFinished) -> PlanStepFinished:
        error = event.meta.error
        if error is None:
            self.results[step.id] = event.observation
            return PlanStepFinished(rnd, step, event.id, "done", event.observation)
        self.failed.append((step, error))
        self.lost.add(step.id)
        return PlanStepFinished(rnd, step, event.id, "failed", event.observation)

    def _skip_lost(self) -> list[AgentEvent]:
        """Out of re-plans: the steps that need a failed (or skipped) step will not run."""
        self.failed = []
        events: list[AgentEvent] = []
        changed = True
        while changed:
            changed = False
            for step in list(self.steps):
                lost = [a for a in step.after if a in self.lost]
                if lost:
                    self.steps.remove(step)
                    self.lost.add(step.id)
                    why = f"skipped: step {', '.join(lost)} did not succeed"
                    events.append(PlanStepFinished(self.state.round, step, "", "skipped", why))
                    changed = True
        return events

    async def _answer_round(self) -> AsyncGenerator[AgentEvent, None]:
        """The run's answer: a planning round's own, or one more round with no tools."""
        state = self.state
        reply = self.answer
        if reply is None:
            async for item in self._model_round((), None, None):
                if type(item) is RoundReply:
                    reply = item
                else:
                    yield item  # type: ignore[misc]
            assert reply is not None
            if reply.calls or reply.answer is None:  # no tools were offered: what it wrote is the answer
                reply.calls, reply.answer = [], reply.text.strip()
        if state.output is not None:
            _output_ok(self.strategy, state, reply, True, self.settings)
        assert reply.usage is not None
        for event in _finish(state, reply, reply.usage, self.settings.clock):
            yield event


# the plan tool of a tool list (the engine's, stable across runs), kept with the list so that its
# identity cannot be reused by another list while cached
_PLAN_TOOLS: LRUCache[tuple[int, int], tuple[Sequence[ToolSchema], list[ToolSchema]]] = LRUCache(64)


def _plan_tools(schemas: Sequence[ToolSchema], max_steps: int) -> list[ToolSchema]:
    key = (id(schemas), max_steps)
    hit = _PLAN_TOOLS.get(key)
    if hit is None:
        hit = _PLAN_TOOLS[key] = (schemas, [plan_tool_schema(schemas, max_steps)])
    return hit[1]


def _with_note(req: ModelRequest, note: str) -> ModelRequest:
    """The request with a note to the model after the rest: in its last user turn (ReAct's "continue")
    or as a user message of its own. A completion prompt, which ends where the model writes, is left."""
    messages = list(req.messages)
    if req.react is not None and len(messages) == 1:
        return req
    last = messages[-1] if messages else None
    if req.react is not None and isinstance(last, UserMessage) and isinstance(last.content, str):
        messages[-1] = UserMessage(f"{last.content}\n\n{note}")
    else:
        messages.append(UserMessage(note))
    return ModelRequest(messages, req.tools, req.stop, req.react)
