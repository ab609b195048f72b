"""Typed model settings: the sampling values and per-call controls a caller passes to ``Model.stream``.

Every key is optional; a provider sends what its API knows and ignores the rest (see each provider).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict, cast


class ModelSettings(TypedDict, total=False):
    """Settings of one model call. Absent means "the provider's default"."""

    max_tokens: int
    """Upper bound on the reply's tokens."""
    max_completion_tokens: int
    """OpenAI's newer name for ``max_tokens`` (reasoning models)."""
    temperature: float
    top_p: float
    top_k: int
    """Local model only (llama.cpp); OpenAI-compatible servers take it under ``extra_body``."""
    min_p: float
    """Local model only."""
    repeat_penalty: float
    """Local model only."""
    presence_penalty: float
    frequency_penalty: float
    seed: int
    logit_bias: dict[str, float]
    user: str
    reasoning_effort: str
    response_format: dict[str, Any]
    parallel_tool_calls: bool
    """Sent only in a call that offers tools."""
    tool_choice: Literal["auto", "required", "none"] | str | dict[str, Any]
    """``"auto"`` (the default), ``"required"``, ``"none"``, a tool name, or the API's own mapping;
    sent only in a call that offers tools."""
    extra_body: dict[str, Any]
    """Provider-specific fields merged into the request body as they are (OpenAI-compatible servers)."""


MODEL_SETTINGS_KEYS: frozenset[str] = frozenset(ModelSettings.__annotations__)

_NUMBER_KEYS = frozenset(
    {"temperature", "top_p", "min_p", "repeat_penalty", "presence_penalty", "frequency_penalty"}
)
_INT_KEYS = frozenset({"max_tokens", "max_completion_tokens", "top_k", "seed"})


def merge_model_settings(base: ModelSettings | None, override: ModelSettings | None) -> ModelSettings:
    """``base`` with the keys of ``override`` on top (neither is changed). Returns ``base`` itself, no
    copy, when there is nothing to override."""
    if not override:
        return base if base is not None else ModelSettings()
    if not base:
        return override
    merged = base.copy()
    merged.update(override)
    return merged


def model_settings_from_params(params: Mapping[str, Any] | None) -> ModelSettings:
    """Checked conversion of a plain mapping (an app config's ``model_params``) to settings.

    Known keys are type-checked (a wrong type raises :class:`TypeError`; ``None`` values are dropped;
    an ``int`` is accepted where a float is expected). Unknown keys are kept as they are, as before:
    each provider sends the keys it knows and drops the others (the OpenAI-compatible provider logs
    them at debug level and expects provider-specific fields under ``extra_body``)."""
    out: dict[str, Any] = {}
    if not params:
        return {}
    for key, value in params.items():
        if value is None:
            continue
        if key in _NUMBER_KEYS:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"model setting {key!r} must be a number, not {type(value).__name__}")
        elif key in _INT_KEYS:
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"model setting {key!r} must be an integer, not {type(value).__name__}")
        elif key in ("extra_body", "logit_bias", "response_format"):
            if not isinstance(value, Mapping):
                raise TypeError(f"model setting {key!r} must be a mapping, not {type(value).__name__}")
            value = dict(value)
        elif key == "parallel_tool_calls" and not isinstance(value, bool):
            raise TypeError(
                f"model setting 'parallel_tool_calls' must be a boolean, not {type(value).__name__}"
            )
        out[key] = value
    return cast(ModelSettings, out)
