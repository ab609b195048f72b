"""Content moderation of an app's inputs and answers: Dify's ``sensitive_word_avoidance``, and more.

An app configures a list of rules (``moderation:`` in its YAML); each rule has a ``type``:

- ``keywords`` — Dify's: a case-insensitive substring of any input value or the query (and of the
  answer) flags it;
- ``regex`` — patterns (Python syntax, case-insensitive) for rules a word list cannot say, e.g. "no
  financial promises" (``guaranteed (returns|profit)``) or "no medical diagnosis" (``you (have|suffer
  from) \\w+itis``);
- ``openai_moderation`` — an OpenAI-compatible ``POST {base_url}/moderations`` endpoint: flagged when any
  result is;
- ``api`` — Dify's API-based extension (:mod:`loopwright.app.guards.extension_api`): ``app.moderation.input``
  with ``{app_id, inputs, query}``, ``app.moderation.output`` with ``{app_id, text}``; the reply is
  ``{flagged, action, preset_response, inputs, query}`` / ``{flagged, action, preset_response, text}``.

Each rule checks the inputs (``inputs.enabled``) and the answer (``outputs.enabled``) with its own
preset response. The inputs are checked in rule order; the first rule that flags them decides:
``direct_output`` answers with its preset response, ``overridden`` (``api`` only) replaces the inputs
and the query the agent sees. A rule whose provider fails or times out follows its ``on_error``:
``allow`` (the default: fail open, as Dify's output moderation) lets the text through and logs the
failure; ``block`` (fail closed) treats the text as flagged. Either way the run goes on.

How the app pipeline uses this (``app.run.pipeline``): the inputs before the run; the answer while it
streams (:class:`OutputGuard`: checked in the background every ``OUTPUT_BUFFER_CHARS`` characters, as
Dify's ``OutputModeration`` thread, without holding the stream back) and once more when it ends.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import pydantic

from loopwright.app.guards.extension_api import DEFAULT_TIMEOUT, Endpoint, ExtensionError, call_extension
from loopwright.errors import ModelError
from loopwright.tools.base import ToolInvokeError
from loopwright.tools.net import NetworkPolicy, guarded_client

log = logging.getLogger("loopwright.app.guards.moderation")

OUTPUT_BUFFER_CHARS = 300  # Dify's MODERATION_BUFFER_SIZE
MAX_PRESET_CHARS = 100  # Dify's limit on a preset response
MAX_KEYWORD_CHARS = 10_000  # Dify's limits on a keyword list
MAX_KEYWORD_ROWS = 100
OPENAI_API_BASE = "https://api.openai.com/v1"
# The answer of a fail-closed rule whose provider failed and that has no preset response of its own.
UNCHECKED_ANSWER = "Sorry, this message could not be checked. Please try again later."
Action = Literal["direct_output", "overridden"]


class Check(pydantic.BaseModel):
    """What a rule does with one side (the inputs or the answer)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    enabled: bool = True
    preset_response: str = pydantic.Field("", max_length=MAX_PRESET_CHARS)


class ModerationRule(pydantic.BaseModel):
    """One moderation rule of an app (see the module's docstring)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    type: Literal["keywords", "regex", "openai_moderation", "api"]
    inputs: Check = Check(preset_response="")
    outputs: Check = Check(preset_response="")
    preset_response: str = pydantic.Field("", max_length=MAX_PRESET_CHARS)  # both sides' default
    keywords: list[str] = []
    patterns: list[str] = []
    # openai_moderation: the endpoint (default: the server's OPENAI_BASE_URL, else OpenAI's) and model
    base_url: str | None = None
    model: str = "omni-moderation-latest"
    # api: the extension; openai_moderation: its key (default: the server's OPENAI_API_KEY)
    endpoint: str | None = None
    api_key: str | None = pydantic.Field(default=None, repr=False)
    api_key_env: str | None = None
    timeout: float = pydantic.Field(DEFAULT_TIMEOUT, gt=0, le=300)
    on_error: Literal["allow", "block"] = "allow"

    @pydantic.field_validator("keywords", mode="before")
    @classmethod
    def _lines(cls, value: Any) -> Any:
        return value.split("\n") if isinstance(value, str) else value  # Dify's one keyword per line

    @pydantic.model_validator(mode="after")
    def _complete(self) -> ModerationRule:
        self.keywords = [k for k in self.keywords if k]  # Dify drops empty rows, keeps spaces
        if self.type == "keywords" and not self.keywords:
            raise ValueError("a keywords rule needs keywords")
        if len("\n".join(self.keywords)) > MAX_KEYWORD_CHARS:
            raise ValueError(f"keywords length must be less than {MAX_KEYWORD_CHARS}")  # Dify's limits
        if len(self.keywords) > MAX_KEYWORD_ROWS:
            raise ValueError(f"the number of rows for the keywords must be less than {MAX_KEYWORD_ROWS}")
        if self.type == "regex":
            if not self.patterns:
                raise ValueError("a regex rule needs patterns")
            for pattern in self.patterns:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ValueError(
                        f"pattern {pattern!r} is not a valid regular expression: {exc}"
                    ) from None
        if self.type == "api" and not self.endpoint:
            raise ValueError("an api rule needs endpoint (the API-based extension's URL)")
        if not self.inputs.enabled and not self.outputs.enabled:
            raise ValueError("at least one of inputs and outputs must be enabled")
        if self.type != "api":  # the extension sends its own preset response
            for side in ("inputs", "outputs"):
                check: Check = getattr(self, side)
                if check.enabled and not (check.preset_response or self.preset_response):
                    raise ValueError(f"{side}.preset_response (or preset_response) is required")
        return self

    def preset(self, check: Check) -> str:
        return check.preset_response or self.preset_response

    def key(self) -> str:
        """The rule's own key (``api_key``, or the variable ``api_key_env`` names)."""
        if self.api_key_env:
            value = os.environ.get(self.api_key_env, "")
            if not value:
                raise ModerationProviderError(f"the environment variable {self.api_key_env} is not set")
            return value
        return self.api_key or ""

    def extension(self) -> Endpoint:
        if self.endpoint is None:
            raise ModerationProviderError("the rule has no endpoint")
        return Endpoint(
            endpoint=self.endpoint, api_key=self.api_key, api_key_env=self.api_key_env, timeout=self.timeout
        )


@dataclass(frozen=True, slots=True)
class InputVerdict:
    """The inputs flagged by a rule: answer with ``preset_response``, or go on with ``inputs`` and
    ``query`` (``overridden``)."""

    action: Action
    preset_response: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    query: str = ""


@dataclass(frozen=True, slots=True)
class OutputVerdict:
    """The answer flagged by a rule: the text that replaces it — a preset response, or the
    extension's corrected text (``overridden``)."""

    text: str
    overridden: bool = False


@dataclass(frozen=True, slots=True)
class ModerationContext:
    """What providers need from the server: the SSRF policy and the default OpenAI endpoint."""

    app_id: str
    policy: NetworkPolicy
    openai_base_url: str | None = None
    openai_api_key: str | None = None


class ModerationProviderError(ModelError, RuntimeError):
    """A provider failed; handled by the rule's ``on_error``."""


# --- the providers -------------------------------------------------------------------------------------


def _values(inputs: Mapping[str, Any], query: str) -> list[str]:
    """What Dify checks: every input value as ``str()`` gives it (``None`` is "None", a list its repr),
    then the query when there is one."""
    values = [str(v) for v in inputs.values()]
    return [*values, query] if query else values


def keywords_hit(keywords: Sequence[str], values: Sequence[str]) -> bool:
    """Dify's keyword check: any keyword, lower-cased, in any value, lower-cased."""
    lowered = [k.lower() for k in keywords]
    return any(k in v.lower() for v in values for k in lowered)


def patterns_hit(patterns: Sequence[str], values: Sequence[str]) -> bool:
    compiled = [re.compile(p, re.IGNORECASE) for p in patterns]
    return any(p.search(v) for v in values for p in compiled)


async def openai_flagged(rule: ModerationRule, text: str, ctx: ModerationContext) -> bool:
    """Whether an OpenAI-compatible moderation endpoint flags ``text``."""
    base = (rule.base_url or ctx.openai_base_url or OPENAI_API_BASE).rstrip("/")
    key = rule.key() if (rule.api_key or rule.api_key_env) else ctx.openai_api_key
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        async with asyncio.timeout(rule.timeout):  # the whole call, not each read
            async with guarded_client(ctx.policy, timeout=httpx.Timeout(rule.timeout)) as client:
                response = await client.post(
                    f"{base}/moderations", json={"model": rule.model, "input": text}, headers=headers
                )
    except (httpx.TimeoutException, TimeoutError):
        raise ModerationProviderError("the moderation endpoint timed out") from None
    except (httpx.HTTPError, ToolInvokeError) as exc:
        raise ModerationProviderError(f"the moderation endpoint failed: {exc}") from None
    if response.status_code != 200:
        raise ModerationProviderError(f"the moderation endpoint answered {response.status_code}")
    try:
        results = response.json()["results"]
        return any(bool(r["flagged"]) for r in results)
    except (ValueError, KeyError, TypeError):
        raise ModerationProviderError("the moderation endpoint's reply has no results") from None


async def _api(
    rule: ModerationRule, point: Any, params: dict[str, Any], ctx: ModerationContext
) -> dict[str, Any]:
    try:
        return await call_extension(rule.extension(), point, params, ctx.policy)
    except ExtensionError as exc:
        raise ModerationProviderError(f"the moderation extension failed: {exc}") from None


async def _input_verdict(
    rule: ModerationRule, inputs: dict[str, Any], query: str, ctx: ModerationContext
) -> InputVerdict | None:
    preset = rule.preset(rule.inputs)
    if rule.type == "api":
        params = {"app_id": ctx.app_id, "inputs": inputs, "query": query}
        reply = await _api(rule, "app.moderation.input", params, ctx)
        if not reply.get("flagged"):
            return None
        if reply.get("action") == "overridden":
            new_inputs = reply.get("inputs")
            new_query = reply.get("query")
            return InputVerdict(
                "overridden",
                inputs=dict(new_inputs) if isinstance(new_inputs, dict) else inputs,
                query=new_query if isinstance(new_query, str) else query,
            )
        return InputVerdict("direct_output", str(reply.get("preset_response") or preset))
    values = _values(inputs, query)
    if rule.type == "keywords":
        flagged = keywords_hit(rule.keywords, values)
    elif rule.type == "regex":
        flagged = patterns_hit(rule.patterns, values)
    else:
        flagged = await openai_flagged(rule, "\n".join(values), ctx)
    return InputVerdict("direct_output", preset) if flagged else None


async def _output_verdict(rule: ModerationRule, text: str, ctx: ModerationContext) -> OutputVerdict | None:
    preset = rule.preset(rule.outputs)
    if rule.type == "api":
        reply = await _api(rule, "app.moderation.output", {"app_id": ctx.app_id, "text": text}, ctx)
        if not reply.get("flagged"):
            return None
        if reply.get("action") == "overridden" and isinstance(reply.get("text"), str):
            return OutputVerdict(reply["text"], overridden=True)
        return OutputVerdict(str(reply.get("preset_response") or preset))
    if rule.type == "keywords":
        flagged = keywords_hit(rule.keywords, [text])
    elif rule.type == "regex":
        flagged = patterns_hit(rule.patterns, [text])
    else:
        flagged = await openai_flagged(rule, text, ctx)
    return OutputVerdict(preset) if flagged else None


# --- the checks ----------------------------------------------------------------------------------------


async def check_inputs(
    rules: Sequence[ModerationRule], inputs: dict[str, Any], query: str, ctx: ModerationContext
) -> InputVerdict | None:
    """The first rule's verdict that flags the inputs or the query (None: they pass). An
    ``overridden`` verdict's inputs and query are what the next rules check."""
    result: InputVerdict | None = None
    for rule in rules:
        if not rule.inputs.enabled:
            continue
        try:
            verdict = await _input_verdict(rule, inputs, query, ctx)
        except Exception as exc:  # whatever a provider does, the run goes on (on_error decides)
            blocked = _failed(rule, exc, rule.preset(rule.inputs))
            if blocked is not None:
                return InputVerdict("direct_output", blocked)
            continue
        if verdict is None:
            continue
        if verdict.action == "direct_output":
            return verdict
        inputs, query, result = verdict.inputs, verdict.query, verdict
    return result


async def check_output(
    rules: Sequence[ModerationRule], text: str, ctx: ModerationContext
) -> OutputVerdict | None:
    """The first rule's verdict that flags ``text`` (None: it passes)."""
    for rule in rules:
        if not rule.outputs.enabled:
            continue
        try:
            verdict = await _output_verdict(rule, text, ctx)
        except Exception as exc:  # whatever a provider does, the run goes on (on_error decides)
            preset = _failed(rule, exc, rule.preset(rule.outputs))
            verdict = OutputVerdict(preset) if preset is not None else None
        if verdict is not None:
            return verdict
    return None


def _failed(rule: ModerationRule, exc: Exception, preset: str) -> str | None:
    """A provider's failure: None lets the text through (``on_error: allow``), else the preset answer."""
    blocking = rule.on_error == "block"
    log.warning("moderation (%s) failed, %s: %s", rule.type, "blocked" if blocking else "let through", exc)
    return (preset or UNCHECKED_ANSWER) if blocking else None


class OutputGuard:
    """Output moderation of one streaming answer: ``feed(text)`` as it comes; a check of the text so far
    starts in the background whenever ``buffer_chars`` more have come and none is running (the stream is
    never held back). :meth:`poll` gives what a finished check found: a ``direct_output`` verdict ends
    the answer (``flagged``); an ``overridden`` one (an extension's corrected text) replaces the text so
    far and the stream goes on, as Dify's ``OutputModeration`` worker does. :meth:`final` checks the
    whole answer at the end."""

    def __init__(
        self, rules: Sequence[ModerationRule], ctx: ModerationContext, buffer_chars: int = OUTPUT_BUFFER_CHARS
    ) -> None:
        self.rules = [r for r in rules if r.outputs.enabled]
        self.ctx = ctx
        self.buffer_chars = max(buffer_chars, 1)
        self._text: list[str] = []
        self._size = 0
        self._checked = 0
        self._task: asyncio.Task[OutputVerdict | None] | None = None
        self._pending: OutputVerdict | None = None  # an overridden text not yet sent
        self._ended = False  # final() ran: the answer's last word is said
        self.flagged: OutputVerdict | None = None

    def feed(self, text: str) -> None:
        self._text.append(text)
        self._size += len(text)
        self._collect()
        if self.flagged is None and self._task is None and self._size - self._checked >= self.buffer_chars:
            self._checked = self._size
            self._task = asyncio.ensure_future(check_output(self.rules, "".join(self._text), self.ctx))

    def _collect(self) -> None:
        task = self._task
        if task is None or not task.done():
            return
        self._task = None
        if task.cancelled() or task.exception() is not None:
            return
        verdict = task.result()
        if verdict is None or self.flagged is not None:
            return
        if verdict.overridden:  # the checked part corrected, what came since kept (Dify's worker)
            rest = "".join(self._text)[self._checked :]
            self._pending = OutputVerdict(verdict.text + rest, overridden=True)
        else:
            self.flagged = verdict

    def poll(self) -> OutputVerdict | None:
        """What a finished background check found, once: the verdict that ends the answer, or an
        overridden text to send as a replacement."""
        self._collect()
        if self._ended:
            return None
        if self.flagged is not None:
            return self.flagged
        pending, self._pending = self._pending, None
        return pending

    async def final(self, text: str) -> OutputVerdict | None:
        """The whole answer checked (after any background check still running)."""
        if self._task is not None:
            await asyncio.wait({self._task})
            self._collect()
        self._ended, self._pending = True, None
        if self.flagged is not None:
            return self.flagged
        return await check_output(self.rules, text, self.ctx) if text else None

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
