"""``Agent``: the configuration of an agent, and ``run``/``stream`` to use it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from loopwright.agent._factory import StrategyName, create_strategy
from loopwright.agent._guardrails import RepeatGuard
from loopwright.agent._loop import LoopSettings, RunState, Strategy, StreamReact, run_loop
from loopwright.agent._react import ParserMode, ReactStrategy
from loopwright.agent._snapshot import dump_state, load_state
from loopwright.agent.approvals import ApprovalDecision, Interruption
from loopwright.agent.callbacks import CallbackDispatch, with_callbacks
from loopwright.agent.durability import StepLog
from loopwright.agent.events import AgentEvent, AgentResult, Finished
from loopwright.agent.output import OutputSpec, output_spec
from loopwright.agent.prompts import fill_inputs
from loopwright.agent.tool_selection import ToolSelector
from loopwright.model.base import Model, ReactDecodingModel
from loopwright.model.entities import (
    ContentPart,
    ModelFeature,
    PromptMessage,
    SystemMessage,
    TextPart,
    UserMessage,
)
from loopwright.model.settings import ModelSettings, model_settings_from_params
from loopwright.tools.base import Tool, ToolContext, ToolLike, Toolset
from loopwright.tools.engine import FileSink, ToolEngine, ToolHook


@dataclass
class Agent:
    """An agent: a model, tools, an instruction, and how to run them.

    ``instruction`` may hold ``{{variables}}`` filled from the ``inputs`` of each run. ``strategy`` is
    ``"auto"`` (function calling when the model can call tools, else ReAct), ``"function-calling"``
    or ``"react"``. A run makes at most ``min(max_iterations, 99) + 1`` model calls; the last one is
    offered no tools.

    ``output_type`` asks for the answer as a typed value (``result.output``; see agent.output).
    A call of a tool that requires approval pauses the run (``result.interruption``); ``resume`` goes
    on with the decisions (see agent.approvals).
    """

    model: Model
    tools: Sequence[ToolLike] = ()
    instruction: str = ""
    strategy: StrategyName = "auto"
    max_iterations: int = 10
    parser_mode: ParserMode = "robust"
    react_stop: str | None = "Observation"
    stop: Sequence[str] = ()
    # A plain mapping (YAML) is accepted: see model_settings_from_params.
    model_params: ModelSettings | Mapping[str, Any] = field(default_factory=dict)
    tool_choice: str = "auto"
    max_parallel_tools: int = 8
    tool_timeout: float = 30.0
    observation_token_limit: int | None = 4000
    repeated_call_limit: int | None = 3
    max_malformed_retries: int = 2
    context: ToolContext = field(default_factory=ToolContext)
    files: FileSink | None = None  # keeps the files tools make (the server's tool files)
    # AgentCallback objects (agent.callbacks) told of every run's events
    callbacks: Sequence[object] = ()
    # Wraps or replaces every tool call (Dify's tool_invoke_hook; see tools.engine.ToolHook)
    tool_hook: ToolHook | None = None
    # Chooses the tools each round offers, out of many (agent.tool_selection; e.g. tools.ranking)
    tool_selector: ToolSelector | None = None
    # What result.metrics times are measured with (seconds); a test may pass a fake clock
    clock: Callable[[], float] = field(default=time.perf_counter, repr=False)
    # Structured output (agent.output): a pydantic model, dataclass, TypedDict or raw JSON Schema;
    # answers that do not follow it are sent back at most ``output_retries`` times and not after
    # ``output_time_budget`` seconds of the run (on ``clock``), then the answer stays plain text.
    output_type: Any = None
    output_retries: int = 2
    output_time_budget: float | None = None
    # Tools (by name) whose calls wait for a person's approval, beside @tool(requires_approval=True)
    approval_required: Sequence[str] = ()
    _callback_tasks: set[asyncio.Task[None]] = field(default_factory=set, init=False, repr=False)
    _engine: ToolEngine | None = field(default=None, init=False, repr=False)
    _dynamic: bool = field(default=False, init=False, repr=False)  # a toolset is among the tools
    _strategy: tuple[tuple[Any, ...], Strategy] | None = field(default=None, init=False, repr=False)
    _decoding: tuple[Model, StreamReact | None] | None = field(default=None, init=False, repr=False)
    _output: tuple[Any, OutputSpec | None] = field(default=(None, None), init=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_iterations < 0:
            raise ValueError("max_iterations must be 0 or more")
        create_strategy(self.model, self.strategy)  # fail early on a bad strategy name
        self._output_spec()  # fail early on an output type that has no JSON Schema
        for item in self.tools:
            if not isinstance(item, Tool | Toolset):
                raise TypeError(f"not a tool or toolset: {item!r} (use @tool, or a Tool, or a toolset)")

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
        """Run to the end and return the result; raises what ``stream`` raises."""
        result: AgentResult | None = None
        # Consume the stream to its end rather than returning at "finished": an async generator left
        # unfinished is closed later by the event loop, through a thread-safe wake-up (a syscall).
        events = self.stream(
            query, history=history, inputs=inputs, files=files, context=context, callbacks=callbacks
        )
        async for event in events:
            if type(event) is Finished:
                result = event.result
        assert result is not None, "an agent run always ends with a finished event or an error"
        return result

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
        """Run and yield events as they happen; the last one is ``finished`` with the result.
        ``context`` (who the run is for) replaces the agent's own ``context`` for this run's tools;
        ``callbacks`` are told of this run's events after the agent's own (see agent.callbacks);
        ``steps`` records its step boundaries (durable execution: agent.durability).

        Raises ``AgentMaxIterationError`` when the model still calls tools in the last round,
        ``AgentRepeatedToolCallError`` when it repeats one call, and the model's own errors.
        Closing the generator early cancels the model stream and running tool calls."""
        strategy = self._get_strategy()
        instruction = fill_inputs(self.instruction, inputs)
        output = self._output_spec()
        if output is not None:
            note = output.instruction(isinstance(strategy, ReactStrategy))
            instruction = f"{instruction}\n\n{note}" if instruction else note
        state = RunState(
            instruction=instruction,
            query=query,
            user_message=self._user_message(query, files),
            history=[m for m in history or () if not isinstance(m, SystemMessage)],
            output=output,
        )
        return self._events(strategy, state, context, callbacks, query, steps)

    async def resume(
        self,
        interruption: Interruption,
        decisions: Sequence[ApprovalDecision],
        *,
        context: ToolContext | None = None,
        callbacks: Sequence[object] = (),
    ) -> AgentResult:
        """Go on with a run that paused for approvals (see agent.approvals); as ``run``."""
        result: AgentResult | None = None
        async for event in self.resume_stream(interruption, decisions, context=context, callbacks=callbacks):
            if type(event) is Finished:
                result = event.result
        assert result is not None, "an agent run always ends with a finished event or an error"
        return result

    def resume_stream(
        self,
        interruption: Interruption,
        decisions: Sequence[ApprovalDecision],
        *,
        context: ToolContext | None = None,
        callbacks: Sequence[object] = (),
        steps: StepLog | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """The events of a resumed run, as ``stream``'s: the paused round's tool calls first. A durable
        run's snapshot (agent.durability) is taken up the same way, without ``decisions``."""
        strategy = self._get_strategy()
        state, elapsed, guard = load_state(interruption.state)
        state.output = self._output_spec()
        state.decisions = {d.call_id: d for d in decisions}
        state.cache["elapsed"] = elapsed
        state.cache["guard"] = guard
        return self._events(strategy, state, context, callbacks, state.query, steps)

    def _events(
        self,
        strategy: Strategy,
        state: RunState,
        context: ToolContext | None,
        callbacks: Sequence[object],
        query: str,
        steps: StepLog | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        guard = RepeatGuard(self.repeated_call_limit) if self.repeated_call_limit else None
        if guard is not None and "guard" in state.cache:
            guard.restore(state.cache.pop("guard"))
        settings = LoopSettings(
            max_iterations=self.max_iterations,
            max_parallel_tools=self.max_parallel_tools,
            max_malformed_retries=self.max_malformed_retries,
            # A plain mapping (an app config's model_params) is checked once per run, not per call.
            params=model_settings_from_params(self.model_params),
            tool_choice=self.tool_choice,
            tool_context=context or self.context,
            guard=guard,
            clock=self.clock,
            stream_react=self._stream_react(),
            max_output_retries=self.output_retries,
            output_budget=self.output_time_budget,
            approval_names=frozenset(self.approval_required),
            snapshot=lambda s, elapsed: dump_state(s, elapsed, guard.memory() if guard else []),
            selector=self.tool_selector,
            steps=steps,
        )
        events = run_loop(self.model, strategy, self._tool_engine, state, settings)
        if not (self.callbacks or callbacks):
            return events  # nothing to tell: the loop's own stream, unwrapped
        dispatch = CallbackDispatch([*self.callbacks, *callbacks], self._callback_tasks)
        return with_callbacks(events, dispatch, query)

    def _output_spec(self) -> OutputSpec | None:
        """The spec of ``output_type``, made again only when it was changed."""
        made_from, spec = self._output
        if made_from is not self.output_type:
            spec = output_spec(self.output_type) if self.output_type is not None else None
            self._output = (self.output_type, spec)
        return spec

    def _stream_react(self) -> StreamReact | None:
        """The model's ``stream_react`` when it is a ReactDecodingModel; checked once per model."""
        hit = self._decoding
        if hit is None or hit[0] is not self.model:
            model = self.model
            hit = self._decoding = (
                model,
                model.stream_react if isinstance(model, ReactDecodingModel) else None,
            )
        return hit[1]

    async def flush_callbacks(self) -> None:
        """Wait until every async callback hook queued by this agent's runs has run."""
        while self._callback_tasks:
            await asyncio.gather(*self._callback_tasks, return_exceptions=True)

    @property
    def strategy_kind(self) -> Literal["function-calling", "react"]:
        """The strategy runs use: ``"auto"`` resolved against the model's features."""
        return "react" if isinstance(self._get_strategy(), ReactStrategy) else "function-calling"

    def _get_strategy(self) -> Strategy:
        # Strategies keep no per-run state, so one serves every run (and keeps its prompt caches)
        # until a setting it depends on changes.
        key = (self.model, self.strategy, self.parser_mode, self.react_stop, tuple(self.stop))
        if self._strategy is None or self._strategy[0] != key:
            strategy = create_strategy(
                self.model,
                self.strategy,
                parser_mode=self.parser_mode,
                react_stop=self.react_stop,
                stop=self.stop,
            )
            self._strategy = (key, strategy)
        return self._strategy[1]

    def _user_message(self, query: str, files: Sequence[ContentPart] | None) -> UserMessage:
        # Files reach the model only when it can see them (Dify: the vision feature); they go first.
        if files and ModelFeature.VISION in self.model.features:
            return UserMessage([*files, TextPart(query)])
        return UserMessage(query)

    async def _tool_engine(self) -> ToolEngine:
        # One engine per agent, so the tool result cache (@tool(cache_ttl=...)) outlives a run. A
        # toolset may change its tools between runs: it is asked again each run and the table renewed.
        if self._engine is not None and not self._dynamic:
            return self._engine

        tools: list[Tool] = []
        dynamic = False
        for item in self.tools:
            if isinstance(item, Tool):
                tools.append(item)
            else:
                tools.extend(await item.get_tools())
                dynamic = True
        if self._engine is not None:
            self._engine.set_tools(tools)
            return self._engine
        self._dynamic = dynamic
        self._engine = ToolEngine(
            tools,
            default_timeout=self.tool_timeout,
            observation_token_limit=self.observation_token_limit,
            files=self.files,
            hook=self.tool_hook,
        )
        return self._engine
