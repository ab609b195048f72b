"""``PreparedAgent``: what every run of one agent configuration shares, built once.

An :class:`~loopwright.agent.agent.Agent` is configuration. ``agent.prepare()`` turns it into this: the
strategy (with its prompt caches), the tool engine (with its result cache), the output spec, the loop's
settings, the callbacks. It is immutable — a run only changes its own
:class:`~loopwright.agent.run_state.RunState` — so one prepared agent serves any number of runs, at
once or in turn; the app builds one per configuration version.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from loopwright.agent._loop import LoopSettings, LoopTools, Strategy, run_loop
from loopwright.agent._plan import PlanRun
from loopwright.agent._react import ReactStrategy
from loopwright.agent.approvals import ApprovalDecision, Interruption
from loopwright.agent.budget import Budget
from loopwright.agent.callbacks import CallbackDispatch, with_callbacks
from loopwright.agent.durability import StepLog
from loopwright.agent.events import AgentEvent, AgentResult, Finished
from loopwright.agent.output import OutputSpec
from loopwright.agent.planning import PlanSettings
from loopwright.agent.prompts import fill_inputs
from loopwright.agent.run_state import RunState
from loopwright.model.base import Model
from loopwright.model.entities import (
    ContentPart,
    PromptMessage,
    SystemMessage,
    TextPart,
    UserMessage,
)
from loopwright.tools.base import ToolContext


@dataclass(frozen=True, slots=True, eq=False)
class PreparedAgent:
    """One agent configuration, ready to run (see the module's docstring). ``run``/``stream``/
    ``resume``/``resume_stream`` are the :class:`Agent`'s."""

    model: Model
    strategy: Strategy
    settings: LoopSettings
    tools: LoopTools
    instruction: str  # with ``{{variables}}`` to fill from a run's inputs
    output: OutputSpec | None
    output_note: str | None  # what the instruction says of the output schema
    vision: bool  # the model sees files: a run's files go into the user's message
    context: ToolContext  # who runs are for, unless a run says otherwise
    callbacks: tuple[object, ...]
    callback_tasks: set[asyncio.Task[None]]  # the async callback hooks queued and not yet run
    # strategy "plan": how its plans run (None: the strategy's own loop; agent._plan)
    plans: PlanSettings | None = None

    @property
    def strategy_kind(self) -> Literal["function-calling", "react"]:
        return "react" if isinstance(self.strategy, ReactStrategy) else "function-calling"

    async def run(
        self,
        query: str,
        *,
        history: Sequence[PromptMessage] | None = None,
        inputs: Mapping[str, Any] | None = None,
        files: Sequence[ContentPart] | None = None,
        context: ToolContext | None = None,
        callbacks: Sequence[object] = (),
        budget: Budget | None = None,
    ) -> AgentResult:
        return await _result(
            self.stream(
                query,
                history=history,
                inputs=inputs,
                files=files,
                context=context,
                callbacks=callbacks,
                budget=budget,
            )
        )

    def stream(
        self,
        query: str,
        *,
        history: Sequence[PromptMessage] | None = None,
        inputs: Mapping[str, Any] | None = None,
        files: Sequence[ContentPart] | None = None,
        context: ToolContext | None = None,
        callbacks: Sequence[object] = (),
        steps: StepLog | None = None,
        budget: Budget | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        instruction = fill_inputs(self.instruction, inputs) if inputs else self.instruction
        note = self.output_note
        if note is not None:
            instruction = f"{instruction}\n\n{note}" if instruction else note
        # Files reach the model only when it can see them (Dify: the vision feature); they go first.
        user = UserMessage([*files, TextPart(query)]) if files and self.vision else UserMessage(query)
        state = RunState(
            instruction,
            query,
            user,
            [m for m in history if not isinstance(m, SystemMessage)] if history else [],
            output=self.output,
        )
        return self._events(state, context, callbacks, steps, budget=budget)

    async def resume(
        self,
        interruption: Interruption,
        decisions: Sequence[ApprovalDecision],
        *,
        context: ToolContext | None = None,
        callbacks: Sequence[object] = (),
    ) -> AgentResult:
        return await _result(
            self.resume_stream(interruption, decisions, context=context, callbacks=callbacks)
        )

    def resume_stream(
        self,
        interruption: Interruption,
        decisions: Sequence[ApprovalDecision],
        *,
        context: ToolContext | None = None,
        callbacks: Sequence[object] = (),
        steps: StepLog | None = None,
        budget: Budget | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        state = interruption.state.detached()  # the interruption may be resumed again
        state.output = self.output
        decided = {d.call_id: d for d in decisions}
        return self._events(state, context, callbacks, steps, decided, budget)

    def _events(
        self,
        state: RunState,
        context: ToolContext | None,
        callbacks: Sequence[object],
        steps: StepLog | None,
        decisions: dict[str, ApprovalDecision] | None = None,
        budget: Budget | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        if self.plans is not None and state.pending is None:
            events = PlanRun(
                self.model,
                self.strategy,
                self.tools,
                state,
                self.settings,
                self.plans,
                context or self.context,
            ).events()
        else:
            events = self._loop(state, context, steps, decisions, budget)
        if not (self.callbacks or callbacks):
            return events  # nothing to tell: the loop's own stream, unwrapped
        dispatch = CallbackDispatch([*self.callbacks, *callbacks], self.callback_tasks)
        return with_callbacks(events, dispatch, state.query)

    def _loop(
        self,
        state: RunState,
        context: ToolContext | None,
        steps: StepLog | None,
        decisions: dict[str, ApprovalDecision] | None,
        budget: Budget | None,
    ) -> AsyncGenerator[AgentEvent, None]:
        return run_loop(
            self.model,
            self.strategy,
            self.tools,
            state,
            self.settings,
            context or self.context,
            steps,
            decisions,
            budget,
        )

    async def flush_callbacks(self) -> None:
        """Wait until every async callback hook queued by these runs has run."""
        while self.callback_tasks:
            await asyncio.gather(*self.callback_tasks, return_exceptions=True)


async def _result(events: AsyncGenerator[AgentEvent, None]) -> AgentResult:
    result: AgentResult | None = None
    # Consume the stream to its end rather than returning at "finished": an async generator left
    # unfinished is closed later by the event loop, through a thread-safe wake-up (a syscall).
    async for event in events:
        if type(event) is Finished:
            result = event.result
    assert result is not None, "an agent run always ends with a finished event or an error"
    return result
