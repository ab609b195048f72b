"""``PreparedAgent``: what every run of one agent configuration shares, built once.

An :class:`~loopwright.agent.agent.Agent` is configuration. ``agent.prepare()`` turns it into this: the
strategy (with its prompt caches), the tool engine (with its result cache), the output spec, the loop's
settings, the callbacks. It is immutable — a run only changes its own
:class:`~loopwright.agent.run_state.RunState` — so one prepared agent serves any number of runs, at
once or in turn; the app builds one per configuration version.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from loopwright.agent._factory import create_strategy
from loopwright.agent._loop import LoopSettings, LoopTools, Strategy, StreamReact, run_loop
from loopwright.agent._react import ReactStrategy
from loopwright.agent.approvals import ApprovalDecision, Interruption
from loopwright.agent.callbacks import CallbackDispatch, with_callbacks
from loopwright.agent.durability import StepLog
from loopwright.agent.events import AgentEvent, AgentResult, Finished
from loopwright.agent.output import OutputSpec, output_spec
from loopwright.agent.prompts import fill_inputs
from loopwright.agent.run_state import RunState
from loopwright.model.base import Model
from loopwright.model.entities import (
    ContentPart,
    ModelFeature,
    PromptMessage,
    SystemMessage,
    TextPart,
    UserMessage,
)
from loopwright.model.settings import model_settings_from_params
from loopwright.tools.base import Tool, ToolContext, Toolset
from loopwright.tools.engine import ToolEngine

if TYPE_CHECKING:
    from collections.abc import Mapping

    from loopwright.agent.agent import Agent


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
    ) -> AgentResult:
        return await _result(
            self.stream(
                query, history=history, inputs=inputs, files=files, context=context, callbacks=callbacks
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
        return self._events(state, context, callbacks, steps)

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
    ) -> AsyncGenerator[AgentEvent, None]:
        state = interruption.state.detached()  # the interruption may be resumed again
        state.output = self.output
        state.decisions = {d.call_id: d for d in decisions}
        return self._events(state, context, callbacks, steps)

    def _events(
        self,
        state: RunState,
        context: ToolContext | None,
        callbacks: Sequence[object],
        steps: StepLog | None,
    ) -> AsyncGenerator[AgentEvent, None]:
        events = run_loop(
            self.model, self.strategy, self.tools, state, self.settings, context or self.context, steps
        )
        if not (self.callbacks or callbacks):
            return events  # nothing to tell: the loop's own stream, unwrapped
        dispatch = CallbackDispatch([*self.callbacks, *callbacks], self.callback_tasks)
        return with_callbacks(events, dispatch, state.query)

    async def flush_callbacks(self) -> None:
        """Wait until every async callback hook queued by these runs has run."""
        while self.callback_tasks:
            await asyncio.gather(*self.callback_tasks, return_exceptions=True)


def prepare(agent: Agent, callback_tasks: set[asyncio.Task[None]] | None = None) -> PreparedAgent:
    """The prepared form of ``agent``'s configuration (checked: a bad setting raises here)."""
    if agent.max_iterations < 0:
        raise ValueError("max_iterations must be 0 or more")
    model = agent.model
    strategy = create_strategy(
        model, agent.strategy, parser_mode=agent.parser_mode, react_stop=agent.react_stop, stop=agent.stop
    )
    output = output_spec(agent.output_type) if agent.output_type is not None else None
    settings = LoopSettings(
        max_iterations=agent.max_iterations,
        max_parallel_tools=agent.max_parallel_tools,
        max_malformed_retries=agent.max_malformed_retries,
        # A plain mapping (an app config's model_params) is checked once per configuration.
        params=model_settings_from_params(agent.model_params),
        tool_choice=agent.tool_choice,
        repeat_limit=agent.repeated_call_limit or None,
        clock=agent.clock,
        stream_react=_stream_react(model),
        max_output_retries=agent.output_retries,
        output_budget=agent.output_time_budget,
        approval_names=frozenset(agent.approval_required),
        selector=agent.tool_selector,
    )
    return PreparedAgent(
        model=model,
        strategy=strategy,
        settings=settings,
        tools=_tools(agent),
        instruction=agent.instruction,
        output=output,
        output_note=output.instruction(isinstance(strategy, ReactStrategy)) if output is not None else None,
        vision=ModelFeature.VISION in model.features,
        context=agent.context,
        callbacks=tuple(agent.callbacks),
        callback_tasks=set() if callback_tasks is None else callback_tasks,
    )


def _stream_react(model: Model) -> StreamReact | None:
    """The model's ``stream_react`` when it is a ReactDecodingModel: the check ``isinstance`` makes on
    that one-method Protocol, without its cost (~4 µs, a walk of the class's attributes)."""
    method = getattr(model, "stream_react", None)
    return method if callable(method) else None


def _tools(agent: Agent) -> LoopTools:
    items = tuple(agent.tools)
    for item in items:
        if not isinstance(item, Tool | Toolset):
            raise TypeError(f"not a tool or toolset: {item!r} (use @tool, or a Tool, or a toolset)")
    engine = ToolEngine(
        [t for t in items if isinstance(t, Tool)],
        default_timeout=agent.tool_timeout,
        observation_token_limit=agent.observation_token_limit,
        files=agent.files,
        hook=agent.tool_hook,
    )
    return LoopTools(engine, items, any(not isinstance(t, Tool) for t in items))


async def _result(events: AsyncGenerator[AgentEvent, None]) -> AgentResult:
    result: AgentResult | None = None
    # Consume the stream to its end rather than returning at "finished": an async generator left
    # unfinished is closed later by the event loop, through a thread-safe wake-up (a syscall).
    async for event in events:
        if type(event) is Finished:
            result = event.result
    assert result is not None, "an agent run always ends with a finished event or an error"
    return result
