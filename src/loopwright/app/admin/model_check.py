"""A model's "test connection": one tiny call, with a timeout, that says whether the spec works.

The model is built afresh (a scripted model from its own registry, so the check consumes no reply the
apps' runs would get) and asked for a few tokens. Whatever goes wrong — a bad spec, a missing key, a
refused connection, a timeout, a provider's error — is the result's ``error``, never an exception: the
console shows it as it is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass

from loopwright.config import ConfigError, ScriptedModels, Settings, build_model
from loopwright.errors import LoopwrightError
from loopwright.model.entities import LLMChunk, UserMessage

DEFAULT_TIMEOUT = 20.0  # seconds; a slow first token of a cold server still fits
MAX_REPLY_CHARS = 200
PROBE = "Reply with the single word OK."


@dataclass(frozen=True, slots=True)
class ModelCheck:
    """What a check found: ``ok`` with the model's ``reply`` (its first characters), or ``error``;
    ``latency`` is the call's seconds (``None`` when the model could not even be built)."""

    model: str
    ok: bool
    reply: str = ""
    error: str | None = None
    latency: float | None = None


async def check_model(spec: str, settings: Settings, *, time_limit: float = DEFAULT_TIMEOUT) -> ModelCheck:
    """Build the model ``spec`` names and make one tiny call to it, within ``time_limit`` seconds."""
    try:
        model = build_model(spec, settings, scripts=ScriptedModels())
    except (ConfigError, LoopwrightError) as exc:
        return ModelCheck(spec, False, error=str(exc))
    started = time.perf_counter()
    try:
        async with asyncio.timeout(time_limit):
            reply = await _ask(model.stream([UserMessage(PROBE)], params={"max_tokens": 8}))
    except TimeoutError:
        return ModelCheck(spec, False, error=f"no answer within {time_limit:g} s", latency=time_limit)
    except Exception as exc:  # a provider's error of any kind is what the check reports
        text = " ".join(str(exc).split()) or type(exc).__name__
        return ModelCheck(spec, False, error=text, latency=time.perf_counter() - started)
    return ModelCheck(spec, True, reply=reply, latency=time.perf_counter() - started)


async def _ask(chunks: AsyncGenerator[LLMChunk, None]) -> str:
    """The reply's text (its first :data:`MAX_REPLY_CHARS`); the stream is closed either way."""
    parts: list[str] = []
    try:
        async for chunk in chunks:
            if chunk.text:
                parts.append(chunk.text)
                if sum(map(len, parts)) >= MAX_REPLY_CHARS:
                    break
    finally:
        await chunks.aclose()
    return "".join(parts)[:MAX_REPLY_CHARS]
