"""Typed model settings: merging and the checked conversion of a config's plain mapping."""

import pytest

from loopwright.model import ModelSettings, merge_model_settings, model_settings_from_params


def test_merge_overrides_keys() -> None:
    base = ModelSettings(temperature=0.2, max_tokens=100)
    merged = merge_model_settings(base, {"max_tokens": 50, "seed": 7})
    assert merged == {"temperature": 0.2, "max_tokens": 50, "seed": 7}
    assert base == {"temperature": 0.2, "max_tokens": 100}  # not changed


def test_merge_without_override_returns_base_itself() -> None:
    base = ModelSettings(seed=1)
    assert merge_model_settings(base, None) is base
    assert merge_model_settings(None, {"seed": 2}) == {"seed": 2}


def test_from_params_checks_known_keys_and_keeps_unknown_ones() -> None:
    settings = model_settings_from_params(
        {"temperature": 0, "max_tokens": 64, "stop": None, "extra_body": {"a": 1}, "my_key": "x"}
    )
    assert settings == {"temperature": 0, "max_tokens": 64, "extra_body": {"a": 1}, "my_key": "x"}


@pytest.mark.parametrize(
    "params",
    [
        {"temperature": "hot"},
        {"temperature": True},
        {"max_tokens": 1.5},
        {"seed": "1"},
        {"extra_body": "nope"},
        {"parallel_tool_calls": "yes"},
    ],
)
def test_from_params_rejects_wrong_types(params: dict[str, object]) -> None:
    with pytest.raises(TypeError, match="model setting"):
        model_settings_from_params(params)
