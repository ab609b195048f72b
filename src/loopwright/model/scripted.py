"""A model that replays a script of replies: for deterministic tests and demos, never the network."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncGenerator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopwright.errors import UserInputError
from loopwright.model.base import ModelError, ReactTurn, estimate_message_tokens
from loopwright.model.entities import (
    TOOL_CALL_FEATURES,
    LLMChunk,
    ModelFeature,
    ModelMode,
    PromptMessage,
    ToolCallDelta,
    ToolSchema,
    Usage,
)
from loopwright.model.settings import ModelSettings


class ScriptExhaustedError(ModelError):
    """The scripted model was called more times than its script has replies."""


class UndeliverableScriptError(UserInputError):
    """A script the scripted model could not deliver as written: it holds structured tool calls, but the
    model declares no tool-call feature, so an agent would run it with ReAct, which reads only text
    (the calls would be dropped, and the agent would answer ``''``)."""


CallSpec = tuple[str, Any] | tuple[str, Any, str]


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted model reply: text, tool calls (name, arguments, optional id), usage, or an error.

    Arguments given as a ``str`` are sent verbatim, so a script can produce malformed JSON.
    """

    content: str = ""
    calls: tuple[CallSpec, ...] = ()
    usage: Usage | None = None
    raises: BaseException | None = None
    finish_reason: str | None = None  # the reason the model reports; by default "tool_calls" or "stop"

    @classmethod
    def text(cls, text: str, *, usage: Usage | None = None, finish_reason: str | None = None) -> Reply:
        return cls(content=text, usage=usage, finish_reason=finish_reason)

    @classmethod
    def tool_calls(cls, *calls: CallSpec, text: str = "", usage: Usage | None = None) -> Reply:
        return cls(content=text, calls=tuple(calls), usage=usage)

    @classmethod
    def error(cls, exc: BaseException) -> Reply:
        return cls(raises=exc)


@dataclass(slots=True)
class ModelRequest:
    """What the scripted model received in one call."""

    messages: list[PromptMessage]
    tools: list[ToolSchema]
    stop: list[str]
    params: dict[str, Any]
    react: ReactTurn | None = None  # what a ReAct round offered (the model takes it as data)


@dataclass
class ScriptedModel:
    """Replays ``replies`` in order, one per ``stream`` call, split into chunks of ``chunk_size``.

    It honours stop words as a real model does (the text ends before the first stop word), streams
    tool-call arguments in fragments when it declares ``stream-tool-call``, records every request in
    ``requests`` (up to ``record`` of them), and raises :class:`ScriptExhaustedError` when the script
    runs out — unless ``cycle`` is set, when it starts over (for demos and benchmarks).
    """

    replies: Sequence[Reply | str]
    features: Iterable[ModelFeature | str] = ()
    mode: ModelMode | str = ModelMode.CHAT
    chunk_size: int = 4
    delay: float = 0.0
    context_size: int = 8192
    name: str = "scripted"
    cycle: bool = False
    record: int | None = None
    requests: list[ModelRequest] = field(default_factory=list, init=False)
    _next: int = field(default=0, init=False)
    _script: list[Reply] = field(default_factory=list, init=False, repr=False)
    _calls: list[list[tuple[str, str, str | None]]] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self.features = frozenset(ModelFeature(f) for f in self.features)
        self.mode = ModelMode(self.mode)
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        self._script = [Reply.text(r) if isinstance(r, str) else r for r in self.replies]
        _check_deliverable(self._script, self.features)
        # Arguments rendered once, not on every replay.
        self._calls = [[_render_call(spec) for spec in r.calls] for r in self._script]

    @property
    def remaining(self) -> int:
        return len(self._script) - self._next

    def count_tokens(self, messages: Sequence[PromptMessage]) -> int:
        return estimate_message_tokens(messages)

    def stream(
        self,
        messages: Sequence[PromptMessage],
        *,
        tools: Sequence[ToolSchema] = (),
        stop: Sequence[str] = (),
        params: ModelSettings | None = None,
    ) -> AsyncGenerator[LLMChunk, None]:
        return self._call(messages, tools, stop, params, None)

    def stream_react(
        self,
        messages: Sequence[PromptMessage],
        turn: ReactTurn,
        *,
        stop: Sequence[str] = (),
        params: ModelSettings | None = None,
    ) -> AsyncGenerator[LLMChunk, None]:
        """A ReAct round (ReactDecodingModel): recorded with its offer, replayed like any other."""
        return self._call(messages, (), stop, params, turn)

    def _call(
        self,
        messages: Sequence[PromptMessage],
        tools: Sequence[ToolSchema],
        stop: Sequence[str],
        params: ModelSettings | None,
        turn: ReactTurn | None,
    ) -> AsyncGenerator[LLMChunk, None]:
        n = self._next
        if self.cycle and n >= len(self._script):
            n = 0
        if n >= len(self._script):
            raise ScriptExhaustedError(
                f"ScriptedModel has no reply left for call #{n + 1}: the script has {len(self._script)}"
            )
        self._next = n + 1
        if self.record is None or len(self.requests) < self.record:
            self.requests.append(
                ModelRequest(list(messages), list(tools), list(stop), dict(params or {}), turn)
            )
        reply = self._script[n]
        return self._replay(reply, self._calls[n], n + 1, stop, messages)

    async def _replay(
        self,
        reply: Reply,
        calls: list[tuple[str, str, str | None]],
        call_number: int,
        stop: Sequence[str],
        messages: Sequence[PromptMessage],
    ) -> AsyncGenerator[LLMChunk, None]:
        if reply.raises is not None:
            raise _fresh(reply.raises)
        text = _cut_at_stop(reply.content, stop)
        size = self.chunk_size
        for i in range(0, len(text), size):
            if self.delay:
                await asyncio.sleep(self.delay)
            yield LLMChunk(text=text[i : i + size])
        if calls:
            for chunk in self._call_chunks(calls, call_number):
                if self.delay:
                    await asyncio.sleep(self.delay)
                yield chunk
        usage = reply.usage or _default_usage(messages, text, reply.calls)
        finish = reply.finish_reason or ("tool_calls" if reply.calls else "stop")
        yield LLMChunk(usage=usage, finish_reason=finish)

    def _call_chunks(self, calls: list[tuple[str, str, str | None]], call_number: int) -> list[LLMChunk]:
        whole: list[ToolCallDelta] = []
        pieces: list[LLMChunk] = []
        streams = ModelFeature.STREAM_TOOL_CALL in self.features
        for index, (name, raw, given_id) in enumerate(calls):
            call_id = given_id or f"call_{call_number}_{index}"
            if not streams:
                whole.append(ToolCallDelta(index=index, id=call_id, name=name, arguments=raw))
                continue
            pieces.append(LLMChunk(tool_calls=[ToolCallDelta(index=index, id=call_id, name=name)]))
            for i in range(0, len(raw), self.chunk_size):
                delta = ToolCallDelta(index=index, arguments=raw[i : i + self.chunk_size])
                pieces.append(LLMChunk(tool_calls=[delta]))
        return pieces if streams else [LLMChunk(tool_calls=whole)]


def _check_deliverable(script: Sequence[Reply], features: Iterable[ModelFeature | str]) -> None:
    if TOOL_CALL_FEATURES.isdisjoint(features):
        first = next((n for n, reply in enumerate(script, 1) if reply.calls), None)
        if first is not None:
            raise UndeliverableScriptError(
                f"reply #{first} of the script makes tool calls, but the model declares no tool-call "
                "feature, so an agent would use ReAct and never see them: give "
                'ScriptedModel(..., features=["tool-call"]) (or script ReAct text instead)'
            )


def _render_call(spec: CallSpec) -> tuple[str, str, str | None]:
    args = spec[1]
    raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return spec[0], raw, spec[2] if len(spec) > 2 else None


def _cut_at_stop(text: str, stop: Sequence[str]) -> str:
    cut = len(text)
    for word in stop:
        if word:
            at = text.find(word)
            if 0 <= at < cut:
                cut = at
    return text[:cut]


def _default_usage(messages: Sequence[PromptMessage], text: str, calls: tuple[CallSpec, ...]) -> Usage:
    # Cheap and deterministic: a scripted model has no tokenizer, and this runs in benchmarks.
    prompt = sum(len(m.content) if isinstance(m.content, str) else 16 for m in messages) // 4 + 1
    completion = len(text) // 4 + 8 * len(calls) + 1
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


def _fresh(error: BaseException) -> BaseException:
    """A copy of a scripted error to raise: raising the script's own instance would leave on it the
    traceback of every run that raised it — frames holding those runs' messages, kept alive as long
    as the script is."""
    try:
        return copy.copy(error)
    except Exception:  # an exception type that cannot be copied is raised as it is
        return error
