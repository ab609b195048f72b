"""Choosing a strategy for a model (reference §5, the newer StrategyFactory's rules)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from loopwright.agent._function_call import FunctionCallStrategy
from loopwright.agent._loop import Strategy
from loopwright.agent._react import ParserMode, ReactStrategy
from loopwright.model.base import Model
from loopwright.model.entities import TOOL_CALL_FEATURES, ModelMode

StrategyName = Literal["auto", "function-calling", "react", "plan"]
STRATEGY_NAMES: tuple[str, ...] = ("auto", "function-calling", "react", "plan")


def supports_tool_calls(model: Model) -> bool:
    return bool(TOOL_CALL_FEATURES & model.features)


def create_strategy(
    model: Model,
    name: StrategyName = "auto",
    *,
    parser_mode: ParserMode = "robust",
    react_stop: str | None = "Observation",
    stop: Sequence[str] = (),
) -> Strategy:
    """Function calling when asked for (or on ``auto``) and the model can call tools; ReAct otherwise,
    with the chat or completion prompt by the model's mode. ``plan`` gets the strategy ``auto`` would:
    the one its planning and answer rounds talk to the model with (agent._plan)."""
    if name not in STRATEGY_NAMES:
        raise ValueError(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGY_NAMES)}")
    if name != "react" and supports_tool_calls(model):
        return FunctionCallStrategy(stop=stop)
    react_stops = [*stop, react_stop] if react_stop and react_stop not in stop else list(stop)
    mode: Literal["chat", "completion"] = "completion" if model.mode == ModelMode.COMPLETION else "chat"
    # A model may bring its own ReAct prompt (the small local model does: a ReactPromptModel, read with
    # getattr — isinstance on that Protocol walks its class's attributes, ~8 µs per agent built).
    return ReactStrategy(
        mode,
        parser_mode=parser_mode,
        stop=react_stops,
        template=getattr(model, "react_template", None),
        continue_message=getattr(model, "react_continue", None),
    )
