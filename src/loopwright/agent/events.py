"""What an agent run streams: small typed events joined in one union, and the final result.

Each event has a ``type`` string. A Dify-style log tree (round → thought → tool_call) can be derived
from them: ``round_started``/``round_finished`` bracket a round, ``text_delta``s are its thought, and
``tool_call_started``/``tool_call_finished`` pairs (matched by ``id``) are its tool calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from loopwright.agent.approvals import Interruption, PendingCall
from loopwright.agent.metrics import RunMetrics
from loopwright.agent.records import ToolCallRecord as ToolCallRecord  # re-exported: part of the events
from loopwright.model.entities import PromptMessage, Usage
from loopwright.tools.base import ToolOutput
from loopwright.tools.engine import ToolInvokeMeta

# Why a run ended with an answer: "stop" (the model finished), "length" (the answer was cut at the
# model's token limit), "content_filter" (the provider withheld the rest). Runs that end otherwise
# raise (AgentMaxIterationError, AgentRepeatedToolCallError, ModelError, cancellation).
# "approval_required": the run paused before calling a tool that needs a person's approval
# (``result.interruption``; see agent.approvals).
FinishReason = Literal["stop", "length", "content_filter", "approval_required"]


@dataclass(slots=True)
class AgentResult:
    """The outcome of a run. ``messages`` is the conversation so far (without the system prompt), to
    pass as ``history`` to the next turn."""

    text: str
    files: list[ToolOutput]
    usage: Usage
    finish_reason: FinishReason
    rounds: int
    messages: list[PromptMessage]
    metrics: RunMetrics | None = None  # always set by a run; None only where a result is built by hand
    # Structured output (Agent.output_type): the typed value, or None. ``output_fallback`` says the
    # answer is plain text because it never followed the schema; ``output_errors`` says why.
    output: Any = None
    output_fallback: bool = False
    output_errors: list[str] = field(default_factory=list)
    # Set when finish_reason is "approval_required": the calls waiting and the state to resume from.
    interruption: Interruption | None = None


@dataclass(slots=True)
class RoundStarted:
    round: int
    # the tools this round offers when a tool selector chose them (None: every tool; the last round: none)
    offered: tuple[str, ...] | None = None
    # False for a round that runs a plan's steps (strategy "plan"): its calls come from the plan, not
    # from a model reply, so no model is called in it
    calls_model: bool = True
    type: Literal["round_started"] = field(default="round_started", init=False)


@dataclass(slots=True)
class TextDelta:
    """Text as the model streams it. ``channel="thought"`` is the model's own text (in ReAct, its
    thought; in function calling, everything it writes); ``"answer"`` is a ReAct final answer, which
    arrives inside an action and is streamed after it was parsed."""

    round: int
    text: str
    channel: Literal["thought", "answer"] = "thought"
    type: Literal["text_delta"] = field(default="text_delta", init=False)


@dataclass(slots=True)
class ToolCallStarted:
    round: int
    id: str
    name: str
    arguments: dict[str, Any] | str
    type: Literal["tool_call_started"] = field(default="tool_call_started", init=False)


@dataclass(slots=True)
class ToolCallFinished:
    round: int
    id: str
    name: str
    observation: str
    files: list[ToolOutput]
    meta: ToolInvokeMeta
    outputs: list[ToolOutput] = field(default_factory=list)  # everything the tool yielded
    type: Literal["tool_call_finished"] = field(default="tool_call_finished", init=False)


@dataclass(slots=True)
class ToolProgress:
    """A running call's progress (a tool with ``streams_progress`` yielded a ProgressMessage), between
    its ``tool_call_started`` and ``tool_call_finished``."""

    round: int
    id: str
    name: str
    text: str
    fraction: float | None = None
    # the ProgressMessage's detail: for an agent called as a tool, the sub-agent's own event
    detail: Any = None
    type: Literal["tool_progress"] = field(default="tool_progress", init=False)


@dataclass(slots=True)
class RoundFinished:
    """A round is over: its thought text, its tool calls in the model's order, its own usage, and the
    final answer if this round gave one."""

    round: int
    thought: str
    calls: list[ToolCallRecord]
    usage: Usage
    answer: str | None = None
    type: Literal["round_finished"] = field(default="round_finished", init=False)


@dataclass(slots=True)
class ApprovalRequired:
    """The round's calls include some that need approval: the run pauses here (``Finished`` with
    the interruption follows). ``calls`` is every call of the round; ``pending`` those waiting."""

    round: int
    thought: str
    calls: list[ToolCallRecord]
    pending: list[PendingCall]
    type: Literal["approval_required"] = field(default="approval_required", init=False)


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One step of a plan (strategy ``"plan"``): a task done with one tool call. ``after`` names the
    steps whose results it needs (a step waits for them; steps that need nothing of each other run
    in the same round, at once). A string argument may hold ``{{id}}``: that step's result."""

    id: str
    task: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    after: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "task": self.task,
            "tool": self.tool,
            "arguments": self.arguments,
            "after": list(self.after),
        }


PlanStepStatus = Literal["pending", "running", "done", "failed", "skipped"]


@dataclass(slots=True)
class PlanCreated:
    """The model wrote a plan (``revision`` 0) or a new one after a step failed (``reason`` says
    which and why); the steps not yet run are these."""

    round: int
    steps: tuple[PlanStep, ...]
    revision: int = 0
    reason: str | None = None
    type: Literal["plan_created"] = field(default="plan_created", init=False)


@dataclass(slots=True)
class PlanStepStarted:
    """A plan's step starts: its tool call (``call_id``) follows."""

    round: int
    step: PlanStep
    call_id: str
    type: Literal["plan_step_started"] = field(default="plan_step_started", init=False)


@dataclass(slots=True)
class PlanStepFinished:
    """A plan's step ended: ``done`` or ``failed`` after its call, ``skipped`` when a step it needs
    failed and no re-plan was left; ``result`` is its call's observation (or why it was skipped)."""

    round: int
    step: PlanStep
    call_id: str
    status: PlanStepStatus
    result: str
    type: Literal["plan_step_finished"] = field(default="plan_step_finished", init=False)


@dataclass(slots=True)
class Finished:
    result: AgentResult
    type: Literal["finished"] = field(default="finished", init=False)


AgentEvent = (
    RoundStarted
    | TextDelta
    | ToolCallStarted
    | ToolCallFinished
    | ToolProgress
    | RoundFinished
    | ApprovalRequired
    | PlanCreated
    | PlanStepStarted
    | PlanStepFinished
    | Finished
)
