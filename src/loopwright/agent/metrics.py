"""Per-run metrics: where a run's time went, what its tools did, what it cost.

Built once, at the end of a run, from what the loop keeps anyway (its rounds, its tool-call records,
its usage) and two timestamps, so a run pays nothing per streamed chunk beyond one comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


@dataclass(slots=True)
class RunMetrics:
    """One run's figures (times in seconds).

    ``model_time`` is the time spent in model calls (their latency); ``time_to_first_token`` runs from
    the start of the run to the first streamed text (``None`` when nothing was streamed);
    ``tool_time`` is the time each tool took, summed over its calls; ``malformed_recovered`` counts the
    unreadable replies the model was asked to resend.
    """

    total_time: float
    model_time: float
    time_to_first_token: float | None
    rounds: int
    tool_calls: int
    tool_errors: int
    malformed_recovered: int
    prompt_tokens: int
    completion_tokens: int
    total_price: Decimal
    currency: str
    tool_time: dict[str, float] = field(default_factory=dict)

    @property
    def tool_success_rate(self) -> float | None:
        """The share of tool calls that succeeded; ``None`` when no tool was called."""
        if not self.tool_calls:
            return None
        return (self.tool_calls - self.tool_errors) / self.tool_calls

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the stored message metadata and the agent log carry this)."""
        return {
            "total_time": round(self.total_time, 6),
            "model_time": round(self.model_time, 6),
            "time_to_first_token": None
            if self.time_to_first_token is None
            else round(self.time_to_first_token, 6),
            "rounds": self.rounds,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "tool_success_rate": self.tool_success_rate,
            "tool_time": {name: round(t, 6) for name, t in self.tool_time.items()},
            "malformed_recovered": self.malformed_recovered,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_price": str(self.total_price),
            "currency": self.currency,
        }

    def summary(self) -> str:
        """One line for people (the CLI prints it after an answer)."""
        ttft = "-" if self.time_to_first_token is None else f"{self.time_to_first_token:.2f} s"
        tools = f"{self.tool_calls} tool call{'s' if self.tool_calls != 1 else ''}"
        if self.tool_errors:
            tools += f" ({self.tool_errors} failed)"
        return (
            f"{self.total_time:.2f} s · first token {ttft} · model {self.model_time:.2f} s · "
            f"{self.rounds} round{'s' if self.rounds != 1 else ''} · {tools} · "
            f"{self.prompt_tokens} prompt + {self.completion_tokens} completion tokens · "
            f"{self.total_price} {self.currency}"
        )
