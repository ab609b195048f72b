"""Hard caps on what one run may spend: tokens, model calls, tool calls and money.

``Agent(..., budget=Budget(run_tokens=20_000, run_tool_calls=10))`` (or ``agent.stream(...,
budget=...)`` for one run) stops a run *before* the model call or the tool calls that would cross a
cap: the loop raises :class:`BudgetExceededError`, whose ``code`` is ``budget_exceeded``; the events
streamed so far (the answer so far) stay with the caller. The next model call's prompt is estimated as
the larger of the model's own count of the request and the prompt of the run's last call (a prompt only
grows within a run), plus nothing for its reply, which is unknown until it comes; a call's cost is
estimated from the unit prices of the run's earlier calls (none known before the first: the first call
is always allowed by a cost cap).

An application narrows a run's budget with allowances that outlive the run (what is left of a
conversation's or an end user's daily tokens, for instance): :meth:`Budget.narrowed` adds a named cap,
and the error names the cap that stopped the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from loopwright.errors import AgentError
from loopwright.model.entities import Usage

__all__ = ["Budget", "BudgetExceededError", "Cap"]


class BudgetExceededError(AgentError):
    """A run was stopped before a call that would cross one of its caps; ``cap`` names it."""

    code = "budget_exceeded"
    status = 429

    def __init__(self, cap: str, limit: int | Decimal, message: str | None = None) -> None:
        self.cap = cap
        self.limit = limit
        default = f"Budget exceeded: {cap} ({limit}) would be crossed; the run was stopped."
        super().__init__(message or default)


@dataclass(frozen=True, slots=True)
class Cap:
    """An allowance beyond the run's own caps: ``tokens`` or ``cost`` this run may still spend. ``name``
    is the prefix of the settings it comes from (``budget.conversation``, ``budget.end_user_daily``):
    the error names ``<name>_tokens`` or ``<name>_cost``."""

    name: str
    tokens: int | None = None
    cost: Decimal | None = None


@dataclass(frozen=True, slots=True)
class Budget:
    """A run's caps (None: no cap). ``run_cost`` is in the currency of the model's prices."""

    run_tokens: int | None = None
    run_model_calls: int | None = None
    run_tool_calls: int | None = None
    run_cost: Decimal | None = None
    caps: tuple[Cap, ...] = field(default=())  # allowances an application adds (``narrowed``)

    def __post_init__(self) -> None:
        for name in ("run_tokens", "run_model_calls", "run_tool_calls", "run_cost"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"budget.{name} must be 0 or more")

    @property
    def limited(self) -> bool:
        """Whether any cap is set (a budget without one costs a run nothing)."""
        return any(
            v is not None for v in (self.run_tokens, self.run_model_calls, self.run_tool_calls, self.run_cost)
        ) or bool(self.caps)

    def narrowed(self, caps: Sequence[Cap]) -> Budget:
        """This budget with more allowances (each checked on its own, beside the run's caps)."""
        return replace(self, caps=(*self.caps, *caps)) if caps else self

    def check_model_call(self, calls_made: int, used: Usage, next_prompt: int) -> None:
        """Raise :class:`BudgetExceededError` if one more model call (``next_prompt`` tokens of prompt,
        as estimated) would cross a cap, after ``calls_made`` calls that used ``used``."""
        if self.run_model_calls is not None and calls_made + 1 > self.run_model_calls:
            raise BudgetExceededError("budget.run_model_calls", self.run_model_calls)
        tokens = used.total_tokens + next_prompt
        cost = used.total_price + _prompt_cost(used, next_prompt)
        for name, token_cap, cost_cap in self._caps():
            if token_cap is not None and tokens > token_cap:
                raise BudgetExceededError(name + "_tokens", token_cap)
            if cost_cap is not None and cost > cost_cap:
                raise BudgetExceededError(name + "_cost", cost_cap)

    def check_tool_calls(self, calls_made: int, more: int) -> None:
        """Raise :class:`BudgetExceededError` if ``more`` tool calls after ``calls_made`` would cross
        ``run_tool_calls``."""
        if self.run_tool_calls is not None and calls_made + more > self.run_tool_calls:
            raise BudgetExceededError("budget.run_tool_calls", self.run_tool_calls)

    def _caps(self) -> list[tuple[str, int | None, Decimal | None]]:
        """(name prefix, tokens, cost) of every cap: the run's, then the allowances'."""
        caps: list[tuple[str, int | None, Decimal | None]] = [("budget.run", self.run_tokens, self.run_cost)]
        for cap in self.caps:
            caps.append((cap.name, cap.tokens, cap.cost))
        return caps


def _prompt_cost(used: Usage, prompt_tokens: int) -> Decimal:
    """The estimated price of ``prompt_tokens`` at the unit price of the run's earlier calls."""
    if not used.prompt_unit_price:
        return Decimal(0)
    return Decimal(prompt_tokens) * used.prompt_unit_price * used.prompt_price_unit
