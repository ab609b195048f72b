"""The prompts a model received, per message, for the console's debug view: kept in memory, for the
last :data:`MAX_MESSAGES` messages this process ran, only while the console is on.

The runtime wraps each model it builds an agent on in a :class:`RecordingModel` when it has a
:class:`PromptLog`; the wrapper notes every call's messages, tools and stop words under the message
being run — :data:`CURRENT_MESSAGE`, set by ``AppRuntime.start`` for the run's task only — and passes the
call on unchanged. A call outside a run (a conversation's name) is not noted. Costs one list copy per
model call; nothing when the console is off.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncGenerator, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any

from cachetools import LRUCache

from loopwright.model.base import Model, ReactTurn
from loopwright.model.entities import LLMChunk, ModelFeature, ModelMode, PromptMessage, ToolSchema
from loopwright.model.settings import ModelSettings

MAX_MESSAGES = 200
MAX_ROUNDS = 100  # of one message (a run has at most 99 tool rounds and a last answer)
MAX_SHOWN_CHARS = 2_000  # of a data: URL (an inline image) in the view

CURRENT_MESSAGE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "loopwright_prompt_message", default=None
)


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One call to the model: what it was sent."""

    model: str
    messages: list[PromptMessage]
    tools: list[ToolSchema]
    stop: list[str]
    params: dict[str, Any]
    react_tools: list[str] | None = None  # a ReAct round given as data: the actions it offered


class PromptLog:
    """The model calls of the last :data:`MAX_MESSAGES` messages, by message id."""

    def __init__(self, max_messages: int = MAX_MESSAGES) -> None:
        self._calls: LRUCache[str, list[ModelCall]] = LRUCache(max_messages)

    def wrap(self, model: Model) -> Model:
        """``model``, its calls noted here (a model that takes ReAct rounds as data keeps doing so)."""
        if hasattr(model, "stream_react"):
            return _RecordingReactModel(model, self)
        return RecordingModel(model, self)

    def note(self, call: ModelCall) -> None:
        message_id = CURRENT_MESSAGE.get()
        if message_id is None:
            return
        calls = self._calls.get(message_id)
        if calls is None:
            calls = self._calls[message_id] = []
        if len(calls) < MAX_ROUNDS:
            calls.append(call)

    def calls(self, message_id: str) -> list[ModelCall] | None:
        """The message's model calls in order, or ``None`` when none were noted here."""
        return self._calls.get(message_id)


class RecordingModel:
    """A model whose calls are noted in a :class:`PromptLog`; everything else is the model's own."""

    def __init__(self, model: Model, log: PromptLog) -> None:
        self._model = model
        self._log = log
        self.name: str = model.name
        self.features: frozenset[ModelFeature] = model.features
        self.mode: ModelMode = model.mode
        self.context_size: int = model.context_size

    def __getattr__(self, name: str) -> Any:  # the model's own attributes (react_template, …)
        if name == "_model":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self._model, name)

    def count_tokens(self, messages: Sequence[PromptMessage]) -> int:
        return self._model.count_tokens(messages)

    def _note(
        self,
        messages: Sequence[PromptMessage],
        tools: Sequence[ToolSchema],
        stop: Sequence[str],
        params: ModelSettings | None,
    ) -> None:
        self._log.note(
            ModelCall(self._model.name, list(messages), list(tools), list(stop), dict(params or {}))
        )

    def stream(
        self,
        messages: Sequence[PromptMessage],
        *,
        tools: Sequence[ToolSchema] = (),
        stop: Sequence[str] = (),
        params: ModelSettings | None = None,
    ) -> AsyncGenerator[LLMChunk, None]:
        self._note(messages, tools, stop, params)
        return self._model.stream(messages, tools=tools, stop=stop, params=params)

    def stream_timed(
        self,
        messages: Sequence[PromptMessage],
        *,
        elapsed: float,
        tools: Sequence[ToolSchema] = (),
        stop: Sequence[str] = (),
        params: ModelSettings | None = None,
    ) -> AsyncGenerator[LLMChunk, None]:
        """Noted as ``stream`` is: a model with a budget for a whole run (RunTimedModel) is told the
        run's time through it, any other is called through ``stream`` (rather than this attribute
        reaching the model's own past the log)."""
        timed = getattr(self._model, "stream_timed", None)
        if timed is None:
            return self.stream(messages, tools=tools, stop=stop, params=params)
        self._note(messages, tools, stop, params)
        result: AsyncGenerator[LLMChunk, None] = timed(
            messages, elapsed=elapsed, tools=tools, stop=stop, params=params
        )
        return result


class _RecordingReactModel(RecordingModel):
    """A :class:`RecordingModel` of a model that takes ReAct rounds as data (``stream_react``)."""

    def stream_react(
        self,
        messages: Sequence[PromptMessage],
        turn: ReactTurn,
        *,
        stop: Sequence[str] = (),
        params: ModelSettings | None = None,
    ) -> AsyncGenerator[LLMChunk, None]:
        offered = [t.name for t in turn.tools]
        self._log.note(
            ModelCall(
                self._model.name, list(messages), [], list(stop), dict(params or {}), react_tools=offered
            )
        )
        stream_react = self._model.stream_react  # type: ignore[attr-defined]  # checked by PromptLog.wrap
        result: AsyncGenerator[LLMChunk, None] = stream_react(messages, turn, stop=stop, params=params)
        return result


def call_view(call: ModelCall) -> dict[str, Any]:
    """A model call as JSON: its messages (``role``, ``content``, tool calls), tools, stop words and
    settings; an inline image's data URL is shortened."""
    return {
        "model": call.model,
        "messages": [_plain(asdict(m)) for m in call.messages],
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters} for t in call.tools
        ],
        "stop": call.stop,
        "params": _plain(call.params),
        "react_tools": call.react_tools,
    }


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, str) and value.startswith("data:") and len(value) > MAX_SHOWN_CHARS:
        return f"{value[:MAX_SHOWN_CHARS]}… ({len(value)} characters)"
    return value
