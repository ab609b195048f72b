"""``Agent``: the configuration of an agent, and ``run``/``stream`` to use it."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from loopwright.agent._factory import StrategyName, create_strategy
from loopwright.agent._loop import LoopSettings, LoopTools, StreamReact, StreamTimed
from loopwright.agent._react import ParserMode, ReactStrategy
from loopwright.agent.approvals import ApprovalDecision, Interruption
from loopwright.agent.budget import Budget
from loopwright.agent.durability import StepLog
from loopwright.agent.events import AgentEvent, AgentResult
from loopwright.agent.output import output_spec
from loopwright.agent.planning import PlanSettings
from loopwright.agent.prepared import PreparedAgent
from loopwright.agent.tool_selection import ToolSelector
from loopwright.model.base import Model
from loopwright.model.entities import ContentPart, ModelFeature, PromptMessage
from loopwright.model.settings import ModelSettings, model_settings_from_params
from loopwright.tools.base import Tool, ToolContext, ToolLike, Toolset
from loopwright.tools.engine import FileSink, ToolEngine, ToolHook
from loopwright.tools.sandbox import Sandbox
from loopwright.tools.skills import Skill, load_skills, skill_tools, skills_instruction


@dataclass
class Agent:
    """An agent: a model, tools, an instruction, and how to run them.

    ``instruction`` may hold ``{{variables}}`` filled from the ``inputs`` of each run. ``strategy`` is
    ``"auto"`` (function calling when the model can call tools, else ReAct), ``"function-calling"``,
    ``"react"`` or ``"plan"`` (plan and execute: the model writes a plan of tool steps, they run, at
    most ``max_replans`` new plans after failed steps, then it answers; agent._plan). A run makes at
    most ``min(max_iterations, 99) + 1`` model calls (rounds, with ``plan``); the last one is offered
    no tools.

    ``output_type`` asks for the answer as a typed value (``result.output``; see agent.output).
    A call of a tool that requires approval pauses the run (``result.interruption``); ``resume`` goes
    on with the decisions (see agent.approvals).

    An ``Agent`` is configuration: its runs use its prepared form (``prepare()``: strategy, tool engine,
    output spec, …; agent.prepared), made when it is built and made again when a field was set since.
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
    # strategy "plan": new plans after failed steps, and steps per plan (agent.planning.PlanSettings)
    max_replans: int = 2
    max_plan_steps: int = 8
    # Skills (tools.skills): folders or zips with a SKILL.md, or loaded Skills; the prompt names them
    # and the model loads one with the load_skill tool. Their scripts run only in ``skill_sandbox``.
    skills: Sequence[str | os.PathLike[str] | Skill] = ()
    skill_sandbox: Sandbox | None = None
    # Caps on what one run spends (agent.budget): tokens, model calls, tool calls, money; a run about to
    # cross one stops with BudgetExceededError. ``stream(..., budget=...)`` replaces it for one run.
    budget: Budget | None = None
    # the prepared form, and the configuration it was made from (see ``prepare``)
    _prepared: tuple[tuple[Any, ...], PreparedAgent] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.prepare()  # fail early on a bad setting; the first run finds it ready

    def prepare(self) -> PreparedAgent:
        """The prepared form of this configuration, shared by every run; made again when a field was
        set since (fields are compared by value, so a list changed in place is not noticed)."""
        key = self._key()
        hit = self._prepared
        if hit is None or hit[0] != key:
            hit = self._prepared = (key, _prepare(self, hit[1].callback_tasks if hit is not None else None))
        return hit[1]

    def _key(self) -> tuple[Any, ...]:
        return (
            self.model,
            self.tools,
            self.instruction,
            self.strategy,
            self.max_iterations,
            self.parser_mode,
            self.react_stop,
            self.stop,
            self.model_params,
            self.tool_choice,
            self.max_parallel_tools,
            self.tool_timeout,
            self.observation_token_limit,
            self.repeated_call_limit,
            self.max_malformed_retries,
            self.context,
            self.files,
            self.callbacks,
            self.tool_hook,
            self.tool_selector,
            self.clock,
            self.output_type,
            self.output_retries,
            self.output_time_budget,
            self.approval_required,
            self.max_replans,
            self.max_plan_steps,
            self.skills,
            self.skill_sandbox,
            self.budget,
        )

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
        """Run to the end and return the result; raises what ``stream`` raises."""
        return await self.prepare().run(
            query,
            history=history,
            inputs=inputs,
            files=files,
            context=context,
            callbacks=callbacks,
            budget=budget,
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
        """Run and yield events as they happen; the last one is ``finished`` with the result.
        ``context`` (who the run is for) replaces the agent's own ``context`` for this run's tools;
        ``callbacks`` are told of this run's events after the agent's own (see agent.callbacks);
        ``steps`` records its step boundaries (durable execution: agent.durability); ``budget``
        replaces the agent's caps for this run (agent.budget).

        Raises ``AgentMaxIterationError`` when the model still calls tools in the last round,
        ``AgentRepeatedToolCallError`` when it repeats one call, ``BudgetExceededError`` before a call
        that would cross a cap of the budget, and the model's own errors.
        Closing the generator early cancels the model stream and running tool calls."""
        return self.prepare().stream(
            query,
            history=history,
            inputs=inputs,
            files=files,
            context=context,
            callbacks=callbacks,
            steps=steps,
            budget=budget,
        )

    async def resume(
        self,
        interruption: Interruption,
        decisions: Sequence[ApprovalDecision],
        *,
        context: ToolContext | None = None,
        callbacks: Sequence[object] = (),
    ) -> AgentResult:
        """Go on with a run that paused for approvals (see agent.approvals); as ``run``."""
        return await self.prepare().resume(interruption, decisions, context=context, callbacks=callbacks)

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
        """The events of a resumed run, as ``stream``'s: the paused round's tool calls first. A durable
        run's snapshot (agent.durability) is taken up the same way, without ``decisions``."""
        return self.prepare().resume_stream(
            interruption, decisions, context=context, callbacks=callbacks, steps=steps, budget=budget
        )

    async def flush_callbacks(self) -> None:
        """Wait until every async callback hook queued by this agent's runs has run."""
        await self.prepare().flush_callbacks()

    @property
    def strategy_kind(self) -> Literal["function-calling", "react"]:
        """The strategy runs use: ``"auto"`` resolved against the model's features."""
        return self.prepare().strategy_kind


def _prepare(agent: Agent, callback_tasks: set[asyncio.Task[None]] | None = None) -> PreparedAgent:
    """The prepared form of ``agent``'s configuration (checked: a bad setting raises here)."""
    if agent.max_iterations < 0:
        raise ValueError("max_iterations must be 0 or more")
    model = agent.model
    strategy = create_strategy(
        model, agent.strategy, parser_mode=agent.parser_mode, react_stop=agent.react_stop, stop=agent.stop
    )
    output = output_spec(agent.output_type) if agent.output_type is not None else None
    skills = load_skills(agent.skills) if agent.skills else []
    instruction = agent.instruction
    if skills:  # the prompt names the skills; their instructions come with load_skill
        note = skills_instruction(skills)
        instruction = f"{instruction}\n\n{note}" if instruction else note
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
        stream_timed=_stream_timed(model),
        max_output_retries=agent.output_retries,
        output_budget=agent.output_time_budget,
        approval_names=frozenset(agent.approval_required),
        selector=agent.tool_selector,
        budget=agent.budget,
    )
    return PreparedAgent(
        model=model,
        strategy=strategy,
        settings=settings,
        tools=_tools(agent, skill_tools(skills, agent.skill_sandbox) if skills else ()),
        instruction=instruction,
        output=output,
        output_note=output.instruction(isinstance(strategy, ReactStrategy)) if output is not None else None,
        vision=ModelFeature.VISION in model.features,
        context=agent.context,
        callbacks=tuple(agent.callbacks),
        callback_tasks=set() if callback_tasks is None else callback_tasks,
        plans=PlanSettings(agent.max_replans, agent.max_plan_steps) if agent.strategy == "plan" else None,
    )


def _stream_react(model: Model) -> StreamReact | None:
    """The model's ``stream_react`` when it is a ReactDecodingModel: the check ``isinstance`` makes on
    that one-method Protocol, without its cost (~4 µs, a walk of the class's attributes)."""
    method = getattr(model, "stream_react", None)
    return method if callable(method) else None


def _stream_timed(model: Model) -> StreamTimed | None:
    """The model's ``stream_timed`` when it is a RunTimedModel (checked as ``_stream_react`` is)."""
    method = getattr(model, "stream_timed", None)
    return method if callable(method) else None


def _tools(agent: Agent, extra: Sequence[Tool] = ()) -> LoopTools:
    items = (*agent.tools, *extra)
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
