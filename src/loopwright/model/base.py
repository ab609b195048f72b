"""The Model protocol every provider implements, and offline token estimation."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from loopwright.errors import ModelError as ModelError
from loopwright.model.entities import (
    AssistantMessage,
    LLMChunk,
    ModelFeature,
    ModelMode,
    PromptMessage,
    ToolSchema,
    content_text,
)
from loopwright.model.settings import ModelSettings


@runtime_checkable
class Model(Protocol):
    """What the agent loop needs from a model.

    ``stream`` returns the reply as chunks; a provider that cannot stream tool calls sends them whole
    in one chunk. ``count_tokens`` must work offline.

    ``params`` is the call's :class:`~loopwright.model.settings.ModelSettings`: sampling values
    (``temperature``, ``max_tokens``, …) and ``tool_choice``, which the agent sets and every provider
    must honour or ignore, never pass on blindly: ``"auto"`` (absent), ``"required"``, ``"none"`` or a
    tool name, as in the OpenAI API; sent only in a round that offers tools.

    A ReAct round's tools travel in the prompt; a model that can use them beyond the prompt text
    declares :class:`ReactDecodingModel`.
    """

    name: str
    features: frozenset[ModelFeature]
    mode: ModelMode
    context_size: int

    def stream(
        self,
        messages: Sequence[PromptMessage],
        *,
        tools: Sequence[ToolSchema] = (),
        stop: Sequence[str] = (),
        params: ModelSettings | None = None,
    ) -> AsyncGenerator[LLMChunk, None]: ...

    def count_tokens(self, messages: Sequence[PromptMessage]) -> int: ...


@runtime_checkable
class ReactPromptModel(Protocol):
    """A model that may bring its own ReAct prompt (the small local model does): the strategy factory
    uses ``react_template`` and ``react_continue`` instead of the stock ones when they are not ``None``."""

    react_template: str | None
    react_continue: str | None


@dataclass(frozen=True, slots=True)
class ReactTurn:
    """What one ReAct round offers, as the agent knows it (not as the prompt words it).

    ``tools``: the actions the prompt offers (empty on the last round: the model must answer).
    ``observation``: ``None`` when the turn asks the user's question; after a tool round, what the
    last step's tools returned (their observations, one per line).
    """

    tools: Sequence[ToolSchema]
    observation: str | None = None
    # structured output: the JSON Schema the Final Answer's input must follow (None: a string)
    output_schema: dict[str, Any] | None = None
    # after a tool round: whether it failed (every call an error, or a reply that could not be read)
    failed: bool = False
    # the run's seconds so far as the round starts (the agent's clock): a model with a budget for a whole
    # run (the embedded model) sizes the round from what is left
    elapsed: float = 0.0
    # the user's question of the run, and the string arguments of the last step's tool calls: what the
    # answer after a tool's result may name ("3 boxes of 48 eggs is 144 eggs.")
    question: str | None = None
    arguments: tuple[str, ...] = ()


@runtime_checkable
class ReactDecodingModel(Protocol):
    """A model that takes a ReAct round's offer as data — the local llama.cpp model constrains its
    replies with a grammar built from it, so every reply is a well-formed action naming one of the
    offered tools or the final answer. The agent calls ``stream_react`` instead of ``stream`` for a
    ReAct round when the model has it."""

    def stream_react(
        self,
        messages: Sequence[PromptMessage],
        turn: ReactTurn,
        *,
        stop: Sequence[str] = (),
        params: ModelSettings | None = None,
    ) -> AsyncGenerator[LLMChunk, None]: ...


@runtime_checkable
class RunTimedModel(Protocol):
    """A model with a time budget for a whole run (the embedded model). For a round that is not a
    ReAct round (whose ``ReactTurn`` carries the time), the agent calls ``stream_timed`` — ``stream``
    with the run's seconds so far as the round starts — instead of ``stream``."""

    def stream_timed(
        self,
        messages: Sequence[PromptMessage],
        *,
        elapsed: float,
        tools: Sequence[ToolSchema] = (),
        stop: Sequence[str] = (),
        params: ModelSettings | None = None,
    ) -> AsyncGenerator[LLMChunk, None]: ...


# Words, numbers, and single punctuation marks: close to what BPE tokenizers produce for English prose,
# within ~15 %, and it needs no vocabulary file.
_TOKEN_RE = re.compile(r"[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]")


def _weight(word: str) -> int:
    # Long words split into several tokens.
    return 1 + (len(word) - 1) // 6 if len(word) > 6 else 1


def estimate_tokens(text: str) -> int:
    """An offline estimate of the token count of ``text``."""
    if not text:
        return 0
    return sum(_weight(m.group()) for m in _TOKEN_RE.finditer(text))


def token_prefix_length(text: str, limit: int) -> int:
    """The length of the longest prefix of ``text`` whose estimated token count is at most ``limit``."""
    n = 0
    for m in _TOKEN_RE.finditer(text):
        n += _weight(m.group())
        if n > limit:
            return m.start()
    return len(text)


def estimate_message_tokens(messages: Sequence[PromptMessage]) -> int:
    """Estimated tokens of a prompt: text plus a small per-message overhead (role, separators)."""
    total = 0
    for m in messages:
        total += 4 + estimate_tokens(content_text(m.content))
        if isinstance(m, AssistantMessage):
            for call in m.tool_calls:
                total += 4 + estimate_tokens(call.name) + estimate_tokens(call.arguments)
    return total
