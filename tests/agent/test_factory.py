"""Strategy selection (reference §5, the newer StrategyFactory)."""

from __future__ import annotations

import pytest

from loopwright.agent._factory import create_strategy
from loopwright.agent._function_call import FunctionCallStrategy
from loopwright.agent._react import ReactStrategy
from loopwright.testing import ScriptedModel


@pytest.mark.parametrize(
    ("features", "requested", "expected"),
    [
        (["tool-call"], "auto", FunctionCallStrategy),
        (["multi-tool-call"], "auto", FunctionCallStrategy),
        (["stream-tool-call"], "auto", FunctionCallStrategy),
        ([], "auto", ReactStrategy),
        (["vision"], "auto", ReactStrategy),
        (["tool-call"], "function-calling", FunctionCallStrategy),
        ([], "function-calling", ReactStrategy),  # explicit FC falls back to ReAct when unsupported
        (["tool-call"], "react", ReactStrategy),  # explicit ReAct always gives ReAct
    ],
)
def test_selection_matrix(features: list[str], requested: str, expected: type) -> None:
    assert isinstance(create_strategy(ScriptedModel([], features=features), requested), expected)  # type: ignore[arg-type]


def test_react_prompt_follows_the_model_mode() -> None:
    chat = create_strategy(ScriptedModel([], mode="chat"), "react")
    completion = create_strategy(ScriptedModel([], mode="completion"), "react")
    assert isinstance(chat, ReactStrategy) and chat.mode == "chat"
    assert isinstance(completion, ReactStrategy) and completion.mode == "completion"


def test_stop_words() -> None:
    s = create_strategy(ScriptedModel([]), "react", stop=["END"])
    assert isinstance(s, ReactStrategy) and s.stop == ["END", "Observation"]
    s = create_strategy(ScriptedModel([]), "react", react_stop=None)
    assert isinstance(s, ReactStrategy) and s.stop == []


def test_unknown_strategy_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown strategy 'cot'"):
        create_strategy(ScriptedModel([]), "cot")  # type: ignore[arg-type]


class OwnPromptModel(ScriptedModel):
    """A model that declares its own ReAct prompt (model.base.ReactPromptModel)."""

    react_template: str | None = "MY TEMPLATE {{instruction}}"
    react_continue: str | None = "go on"


def test_a_model_with_its_own_react_prompt_gets_it() -> None:
    own = create_strategy(OwnPromptModel([]), "react")
    stock = create_strategy(ScriptedModel([]), "react")
    assert isinstance(own, ReactStrategy) and isinstance(stock, ReactStrategy)
    assert (own.template, own.continue_message) == ("MY TEMPLATE {{instruction}}", "go on")
    assert stock.template != own.template and stock.continue_message != "go on"
