"""Run budgets (agent.budget): each cap stops the run before the call that would cross it."""

from __future__ import annotations

from decimal import Decimal

import pytest

from loopwright import Agent, tool
from loopwright.agent import Budget, BudgetExceededError, TextDelta, ToolCallFinished
from loopwright.agent.budget import Cap
from loopwright.model.entities import Usage
from loopwright.testing import Reply, ScriptedModel

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def usage(prompt: int, completion: int, unit: str = "0") -> Usage:
    """A call's usage with a known count (and a price per token of ``unit``)."""
    price = Decimal(unit)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        prompt_unit_price=price,
        prompt_price_unit=Decimal(1),
        prompt_price=prompt * price,
        completion_unit_price=price,
        completion_price_unit=Decimal(1),
        completion_price=completion * price,
        total_price=(prompt + completion) * price,
    )


def looping(n: int, unit: str = "0") -> ScriptedModel:
    """A model that calls ``add`` ``n`` times (100 prompt + 10 completion tokens each), then answers."""
    calls = [
        Reply.tool_calls(("add", {"a": i, "b": 1}), text=f"step {i}. ", usage=usage(100, 10, unit))
        for i in range(n)
    ]
    return ScriptedModel([*calls, Reply.text("done", usage=usage(100, 10, unit))], features=FC)


async def _run(agent: Agent, budget: Budget | None = None) -> tuple[list[object], BaseException | None]:
    events: list[object] = []
    try:
        async for event in agent.stream("go", budget=budget):
            events.append(event)
    except BudgetExceededError as e:
        return events, e
    return events, None


@pytest.mark.parametrize(
    ("budget", "model_calls", "cap"),
    [
        # 110 tokens a call; the 3rd call's prompt (≥ 100, the last one's) would make 320 > 300
        (Budget(run_tokens=300), 2, "budget.run_tokens"),
        (Budget(run_tokens=330), 3, "budget.run_tokens"),  # 220 + 100 ≤ 330: the 3rd runs, the 4th not
        (Budget(run_model_calls=2), 2, "budget.run_model_calls"),
        (Budget(run_cost=Decimal("0.25")), 2, "budget.run_cost"),  # 0.001 a token: 0.22 + 0.1 > 0.25
        (Budget(caps=(Cap("budget.conversation", tokens=250),)), 2, "budget.conversation_tokens"),
        (Budget(caps=(Cap("budget.app_daily", cost=Decimal("0.1")),)), 1, "budget.app_daily_cost"),
    ],
)
async def test_a_cap_stops_the_run_before_the_call_that_would_cross_it(
    budget: Budget, model_calls: int, cap: str
) -> None:
    model = looping(5, unit="0.001")
    events, error = await _run(Agent(model=model, tools=[add]), budget)
    assert isinstance(error, BudgetExceededError)
    assert error.cap == cap and error.code == "budget_exceeded" and error.status == 429
    assert len(model.requests) == model_calls  # no call was made past the cap
    # what was streamed so far stays with the caller
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text.startswith("step 0.")


async def test_tool_calls_are_capped_before_they_run() -> None:
    model = looping(5)
    events, error = await _run(Agent(model=model, tools=[add], budget=Budget(run_tool_calls=2)))
    assert isinstance(error, BudgetExceededError) and error.cap == "budget.run_tool_calls"
    assert sum(isinstance(e, ToolCallFinished) for e in events) == 2
    assert len(model.requests) == 3  # the third call's tool call was never run


async def test_a_run_within_its_budget_ends_normally() -> None:
    model = looping(2)
    result = await Agent(model=model, tools=[add], budget=Budget(run_tokens=330, run_tool_calls=2)).run("go")
    assert result.text == "done" and result.usage.total_tokens == 330


async def test_the_estimate_counts_the_next_prompt_when_it_is_larger() -> None:
    # a long question: the first call's prompt alone is estimated over the cap
    model = ScriptedModel([Reply.text("hi", usage=usage(5, 1))])
    with pytest.raises(BudgetExceededError):
        await Agent(model=model).run("word " * 400, budget=Budget(run_tokens=50))
    assert model.requests == []


def test_a_negative_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="run_tokens"):
        Budget(run_tokens=-1)
