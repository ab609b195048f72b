"""What an agent run streams: small typed events joined in one union, and the final result.

Each event has a ``type`` string. A Dify-style log tree (round → thought → tool_call) can be derived
from them: ``round_started``/``round_finished`` bracket a round, ``text_delta``s are its thought, and
``tool_call_started``/``tool_call_finished`` pairs (matched by ``id``) are its tool calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from loopwright.model.entities import PromptMessage, Usage
from loopwright.tools.base import ToolOutput
from loopwright.tools.engine import ToolInvokeMeta

# Why a run ended with an answer: "stop" (the model finished), "length" (the answer was cut at the
# model's token limit), "content_filter" (the provider withheld the rest). Runs that end otherwise
# raise (AgentMaxIterationError, AgentRepeatedToolCallError, ModelError, cancellation).
FinishReason = Literal["stop", "length", "content_filter"]


@dataclass(slots=True)
class ToolCallRecord:
    """One tool call of a round with its outcome (``observation`` is None until it finished)."""

    id: str
    name: str
    arguments: dict[str, Any] | str
    observation: str | None = None
    files: list[ToolOutput] = field(default_factory=list)
    meta: ToolInvokeMeta | None = None
    outputs: list[ToolOutput] = field(default_factory=list)  # everything the tool yielded
    raw_arguments: str | None = None  # the arguments as the model wrote them, when it wrote JSON text

    def arguments_json(self) -> str:
        if self.raw_arguments is not None:
            return self.raw_arguments
        args = self.arguments
        return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


@dataclass(slots=True)
class RunMetrics:
    """The figures of one run. Times are seconds (on the loop's clock, ``time.perf_counter``).

    ``model_time`` sums the model calls; ``time_to_first_token`` runs from the start of the run to its
    first streamed text (None when it streamed none); ``tool_time`` sums each tool's calls by tool
    name; ``malformed_recovered`` counts unreadable replies sent back to the model for another try."""

    duration: float = 0.0
    model_time: float = 0.0
    time_to_first_token: float | None = None
    tool_time: dict[str, float] = field(default_factory=dict)
    rounds: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    malformed_recovered: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    price: Decimal = Decimal(0)
    currency: str = "USD"

    @property
    def tool_success_rate(self) -> float | None:
        """The share of tool calls that succeeded (None when the run called no tool)."""
        if not self.tool_calls:
            return None
        return (self.tool_calls - self.tool_errors) / self.tool_calls

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the stored message metadata's ``agent_metrics``); the price as a decimal string."""
        return {
            "duration": round(self.duration, 6),
            "model_time": round(self.model_time, 6),
            "time_to_first_token": None
            if self.time_to_first_token is None
            else round(self.time_to_first_token, 6),
            "tool_time": {name: round(t, 6) for name, t in self.tool_time.items()},
            "rounds": self.rounds,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "tool_success_rate": self.tool_success_rate,
            "malformed_recovered": self.malformed_recovered,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "price": str(self.price),
            "currency": self.currency,
        }

    def summary(self) -> str:
        """One line for a terminal: rounds, tools, tokens, price and times."""
        ttft = "-" if self.time_to_first_token is None else f"{self.time_to_first_token:.2f}s"
        tools = f"{self.tool_calls} tool call{'s' if self.tool_calls != 1 else ''}"
        if self.tool_errors:
            tools += f" ({self.tool_errors} failed)"
        parts = [
            f"{self.rounds} round{'s' if self.rounds != 1 else ''}",
            tools,
            f"{self.tokens_in} in / {self.tokens_out} out tokens",
            f"{self.price} {self.currency}",
            f"model {self.model_time:.2f}s",
            f"first token {ttft}",
            f"total {self.duration:.2f}s",
        ]
        if self.malformed_recovered:
            n = self.malformed_recovered
            parts.insert(2, f"{n} malformed repl{'ies' if n != 1 else 'y'} recovered")
        return " · ".join(parts)


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
    metrics: RunMetrics = field(default_factory=RunMetrics)


@dataclass(slots=True)
class RoundStarted:
    round: int
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
class Finished:
    result: AgentResult
    type: Literal["finished"] = field(default="finished", init=False)


AgentEvent = RoundStarted | TextDelta | ToolCallStarted | ToolCallFinished | RoundFinished | Finished
