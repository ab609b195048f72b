"""A model behind the OpenAI chat completions API: OpenAI itself or any server speaking it.

``OpenAICompatModel("gpt-4o-mini")`` talks to OpenAI with ``OPENAI_API_KEY``;
``OpenAICompatModel("qwen2.5", base_url="http://localhost:11434/v1")`` talks to a local server (Ollama,
vLLM, llama.cpp, LM Studio, …) that needs no key. Replies are always streamed, usage is asked for with
``stream_options.include_usage``, and every failure becomes one of :mod:`loopwright.model.errors`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import weakref
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

import openai

from loopwright.model.base import ModelError, estimate_message_tokens
from loopwright.model.entities import (
    AssistantMessage,
    ContentPart,
    FilePart,
    ImagePart,
    LLMChunk,
    ModelFeature,
    ModelMode,
    PromptMessage,
    SystemMessage,
    TextPart,
    ToolCallDelta,
    ToolMessage,
    ToolSchema,
    Usage,
    UserMessage,
)
from loopwright.model.errors import (
    ContextTooLongError,
    ModelAuthError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelRequestError,
    ModelUnavailableError,
)
from loopwright.model.settings import ModelSettings

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionChunk
    from openai.types.chat.chat_completion_chunk import (
        Choice,
        ChoiceDeltaFunctionCall,
        ChoiceDeltaToolCall,
    )
    from openai.types.completion_usage import CompletionUsage

log = logging.getLogger(__name__)

OPENAI_URL = "https://api.openai.com/v1"
PLACEHOLDER_API_KEY = "not-needed"
DEFAULT_CONTEXT_SIZE = 8192

# --- known models ---------------------------------------------------------------------------------

_TOOLS = frozenset({ModelFeature.TOOL_CALL, ModelFeature.MULTI_TOOL_CALL, ModelFeature.STREAM_TOOL_CALL})
_TOOLS_VISION = _TOOLS | {ModelFeature.VISION}
_NONE: frozenset[ModelFeature] = frozenset()

# Model-name prefix → (features, context size); the longest matching prefix wins. A name not listed
# gets the tool-call features (any server speaking this API with tools) and DEFAULT_CONTEXT_SIZE.
KNOWN_MODELS: dict[str, tuple[frozenset[ModelFeature], int]] = {
    "gpt-5": (_TOOLS_VISION, 400_000),
    "gpt-4.1": (_TOOLS_VISION, 1_047_576),
    "gpt-4o": (_TOOLS_VISION, 128_000),
    "chatgpt-4o": (frozenset({ModelFeature.VISION}), 128_000),  # no function calling
    "gpt-4-turbo": (_TOOLS_VISION, 128_000),
    "gpt-4-32k": (_TOOLS, 32_768),
    "gpt-4": (_TOOLS, 8_192),
    "gpt-3.5-turbo": (_TOOLS, 16_385),
    "o1": (_TOOLS_VISION, 200_000),
    "o1-mini": (_NONE, 128_000),  # no function calling: ReAct
    "o1-preview": (_NONE, 128_000),
    "o3": (_TOOLS_VISION, 200_000),
    "o3-mini": (_TOOLS, 200_000),
    "o4-mini": (_TOOLS_VISION, 200_000),
}


def known_model(name: str) -> tuple[frozenset[ModelFeature], int] | None:
    """Features and context size of a known model name (``"openai/gpt-4o"`` counts as ``"gpt-4o"``)."""
    base = name.rsplit("/", 1)[-1].lower()
    best = ""
    for prefix in KNOWN_MODELS:
        if base.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return KNOWN_MODELS[best] if best else None


# --- building the request -------------------------------------------------------------------------

# Sampling parameters passed on as they are; anything else must go under params["extra_body"].
SAMPLING_PARAMS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "response_format",
        "parallel_tool_calls",
        "logit_bias",
        "user",
        "reasoning_effort",
    }
)
_TOOL_CHOICES = frozenset({"auto", "required", "none"})
# Keys whose values are schemas (or maps/lists of schemas): the only places an array node can hide.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONES = ("additionalProperties", "not", "contains", "if", "then", "else")


def ensure_array_items(schema: Any) -> Any:
    """A copy of a JSON schema where every array node has ``items`` (``{"type": "string"}`` when it had
    none), as OpenAI requires. Only schema positions are visited, never ``default``/``enum`` values; the
    input is not changed."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = dict(schema)
    if _is_array(out.get("type")) and "items" not in out:
        out["items"] = {"type": "string"}
    for key, walk in _SCHEMA_WALKS.items():
        if key in out:
            out[key] = walk(out[key])
    return out


def _is_array(kind: Any) -> bool:
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


def _walk_map(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value  # not a schema position after all (a malformed schema): left as it is
    return {k: ensure_array_items(v) for k, v in value.items()}


def _walk_list(value: Any) -> Any:
    return [ensure_array_items(v) for v in value] if isinstance(value, list) else value


def _walk_one(value: Any) -> Any:
    # Only a mapping: a boolean schema (``"additionalProperties": false``) has no array inside.
    return ensure_array_items(value) if isinstance(value, Mapping) else value


def _walk_items(value: Any) -> Any:
    # ``items`` may also be a list, draft-4's tuple form: one schema per position.
    return _walk_list(value) if isinstance(value, list) else _walk_one(value)


# Schema keyword → how to reach the schemas under it.
_SCHEMA_WALKS: dict[str, Callable[[Any], Any]] = {
    **dict.fromkeys(_SCHEMA_MAPS, _walk_map),
    **dict.fromkeys(_SCHEMA_LISTS, _walk_list),
    "items": _walk_items,
    **dict.fromkeys(_SCHEMA_ONES, _walk_one),
}


def tool_to_openai(tool: ToolSchema) -> dict[str, Any]:
    parameters = ensure_array_items(tool.parameters) if tool.parameters else {}
    if not parameters:
        parameters = {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
    }


def _file_note(part: FilePart) -> str:
    name = part.filename or part.url.rsplit("/", 1)[-1].split("?", 1)[0] or "file"
    where = "inline data" if part.url.startswith("data:") else part.url
    if part.url.startswith("data:") and not part.filename:
        name = "file"
    return f"[file: {name} ({part.mime_type}) {where}]"


def _content(content: str | list[ContentPart]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for p in content:
        if isinstance(p, TextPart):
            parts.append({"type": "text", "text": p.text})
        elif isinstance(p, ImagePart):
            parts.append({"type": "image_url", "image_url": {"url": p.url, "detail": p.detail}})
        else:  # chat completions has no generic file part: the model at least learns of the file
            parts.append({"type": "text", "text": _file_note(p)})
    if all(p["type"] == "text" for p in parts):
        # Plain text as a string: many local servers' chat templates cannot render a list of parts.
        return "\n".join(p["text"] for p in parts) if len(parts) > 1 else (parts[0]["text"] if parts else "")
    return parts


def message_to_openai(m: PromptMessage) -> dict[str, Any]:
    """One prompt message in the chat completions wire shape."""
    if isinstance(m, SystemMessage):
        return {"role": "system", "content": m.content}
    if isinstance(m, UserMessage):
        return {"role": "user", "content": _content(m.content)}
    if isinstance(m, AssistantMessage):
        if not m.tool_calls:
            return {"role": "assistant", "content": m.content}
        return {
            "role": "assistant",
            # A string even when empty: OpenAI accepts "" next to tool calls, and some servers
            # (llama-cpp-python's) reject null.
            "content": m.content,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments or "{}"},
                }
                for c in m.tool_calls
            ],
        }
    if isinstance(m, ToolMessage):
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    raise TypeError(f"not a prompt message: {m!r}")


def build_request(
    model: str,
    messages: Sequence[PromptMessage],
    *,
    tools: Sequence[ToolSchema] = (),
    stop: Sequence[str] = (),
    params: ModelSettings | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` (without the streaming ones) for one call.

    From ``params`` only :data:`SAMPLING_PARAMS` pass (``None`` values are dropped, and
    ``parallel_tool_calls`` only with tools); ``tool_choice`` is sent only with tools, a tool name
    becoming ``{"type": "function", "function": {"name": …}}``;
    ``extra_body`` (a mapping) is passed as the SDK's ``extra_body``. Other keys are dropped."""
    request: dict[str, Any] = {"model": model, "messages": [message_to_openai(m) for m in messages]}
    if tools:
        request["tools"] = [tool_to_openai(t) for t in tools]
    stops = [s for s in stop if s]
    if stops:
        request["stop"] = stops
    request.update(_params_to_send(model, params or {}, bool(tools)))
    return request


def _params_to_send(model: str, params: ModelSettings, with_tools: bool) -> dict[str, Any]:
    """The request keys that ``params`` become (see :func:`build_request`)."""
    sent: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in params.items():
        read = _PARAM_READERS.get(key)
        if read is None:
            dropped.append(key)
            continue
        value = read(value, with_tools)
        if value is not None:
            sent[key] = value
    if dropped:
        log.debug("parameters not sent to %s (put them under extra_body): %s", model, ", ".join(dropped))
    return sent


def _as_is(value: Any, with_tools: bool) -> Any:
    return value


def _with_tools_only(value: Any, with_tools: bool) -> Any:
    # OpenAI refuses parallel_tool_calls in a request without tools.
    return value if with_tools else None


def _tool_choice_param(value: Any, with_tools: bool) -> Any:
    choice = _tool_choice(value)
    return choice if with_tools else None


def _extra_body(value: Any, with_tools: bool) -> dict[str, Any] | None:
    if not value:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"params['extra_body'] must be a mapping, not {type(value).__name__}")
    return dict(value)


# A param's name → its value in the request (None: not sent). A name not here is dropped.
_PARAM_READERS: dict[str, Callable[[Any, bool], Any]] = {
    **dict.fromkeys(SAMPLING_PARAMS, _as_is),
    "parallel_tool_calls": _with_tools_only,
    "tool_choice": _tool_choice_param,
    "extra_body": _extra_body,
}


def _tool_choice(value: Any) -> str | dict[str, Any] | None:
    if value is None or value == "":
        return None
    if isinstance(value, Mapping):
        return dict(value)  # already in the API's shape
    choice = str(value)
    if choice in _TOOL_CHOICES:
        return choice
    return {"type": "function", "function": {"name": choice}}


# --- reading the stream ---------------------------------------------------------------------------

_PRICE_UNIT = Decimal("0.000001")  # prices are per million tokens
_PRICE_QUANTUM = Decimal("0.0000001")


def make_usage(
    prompt_tokens: int,
    completion_tokens: int,
    total_tokens: int | None = None,
    prices: tuple[Decimal, Decimal] | None = None,
) -> Usage:
    """A Usage with prices from ``prices`` (input, output per million tokens), as Dify computes them."""
    usage = Usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=total_tokens if total_tokens else prompt_tokens + completion_tokens,
    )
    if prices is not None:
        unit_in, unit_out = Decimal(prices[0]), Decimal(prices[1])
        usage.prompt_unit_price = unit_in
        usage.completion_unit_price = unit_out
        usage.prompt_price_unit = usage.completion_price_unit = _PRICE_UNIT
        usage.prompt_price = (prompt_tokens * unit_in * _PRICE_UNIT).quantize(_PRICE_QUANTUM, ROUND_HALF_UP)
        usage.completion_price = (completion_tokens * unit_out * _PRICE_UNIT).quantize(
            _PRICE_QUANTUM, ROUND_HALF_UP
        )
        usage.total_price = usage.prompt_price + usage.completion_price
    return usage


def convert_chunk(
    chunk: ChatCompletionChunk, prices: tuple[Decimal, Decimal] | None = None
) -> LLMChunk | None:
    """One SDK chunk as an LLMChunk, or None when it carries nothing (a role-only delta)."""
    text, deltas, finish = _read_choices(chunk.choices)
    # Usage arrives once, in the last chunk: every other chunk skips the pricing.
    usage = None if chunk.usage is None else _chunk_usage(chunk.usage, prices)
    if not text and deltas is None and usage is None and finish is None:
        return None
    return LLMChunk(text, deltas, usage, finish)


def _read_choices(choices: Sequence[Choice] | None) -> tuple[str, list[ToolCallDelta] | None, str | None]:
    """The text, tool-call fragments and finish reason of choice 0. Runs once per token, so a text
    delta is read inline; only tool-call fragments (a few chunks of a reply) call out."""
    text = ""
    deltas: list[ToolCallDelta] | None = None
    finish: str | None = None
    # Not validated by the SDK: a lenient server's chunk may hold None where a list or delta belongs.
    for choice in choices or ():
        if choice.index:  # we ask for one choice; a server sending more has its first one read
            continue
        finish = choice.finish_reason or finish
        delta = choice.delta
        if delta is None:
            continue
        if delta.content:
            text += delta.content
        if delta.tool_calls:
            deltas = _tool_call_deltas(delta.tool_calls, deltas)
        elif delta.function_call is not None:
            # The legacy single-function shape some servers still send: one call, which replaces
            # whatever an earlier entry of the same chunk held (there is no index to keep them apart).
            deltas = [_function_call_delta(delta.function_call)]
    return text, deltas, finish


def _tool_call_deltas(
    calls: Sequence[ChoiceDeltaToolCall], deltas: list[ToolCallDelta] | None
) -> list[ToolCallDelta]:
    """``deltas`` (or a new list) with these tool-call fragments appended."""
    out = deltas or []
    for position, tc in enumerate(calls):
        fn = tc.function
        out.append(
            ToolCallDelta(
                # A server that leaves the index out sends the calls in order.
                index=tc.index if isinstance(tc.index, int) else position,
                id=tc.id or None,
                name=(fn.name or None) if fn is not None else None,
                arguments=(fn.arguments or "") if fn is not None else "",
            )
        )
    return out


def _function_call_delta(fc: ChoiceDeltaFunctionCall) -> ToolCallDelta:
    return ToolCallDelta(index=0, name=fc.name or None, arguments=fc.arguments or "")


def _chunk_usage(u: CompletionUsage, prices: tuple[Decimal, Decimal] | None) -> Usage:
    # A server may leave counts out (None) or send a zero total: make_usage adds the total up.
    return make_usage(u.prompt_tokens or 0, u.completion_tokens or 0, u.total_tokens or 0, prices)


# --- errors ---------------------------------------------------------------------------------------

_CONTEXT_RE = re.compile(
    r"context[ _-]?(length|window|size)|maximum context|too many tokens|prompt is too long|"
    r"input is too long|exceeds? (the )?(model'?s? )?(context|max(imum)? (input|token))|n_ctx",
    re.IGNORECASE,
)
_KEY_RE = re.compile(r"\b(sk-[A-Za-z0-9_\-*]{4})[A-Za-z0-9_\-*]{4,}")
_MAX_MESSAGE = 500


def _server_message(exc: openai.APIError) -> str:
    body: Any = exc.body
    message: Any = None
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            message = inner.get("message") or inner.get("detail") or inner.get("msg")
        elif inner:
            message = inner
    elif isinstance(body, str | bytes) and body:
        message = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    if not message:
        message = exc.message
    text = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _scrub(text: str, api_key: str | None) -> str:
    if api_key and api_key != PLACEHOLDER_API_KEY and len(api_key) >= 4:
        text = text.replace(api_key, "***")
    return _KEY_RE.sub(r"\1***", text)


def _is_context_error(exc: openai.APIError, message: str) -> bool:
    return exc.code == "context_length_exceeded" or bool(_CONTEXT_RE.search(message))


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    while cause is not None and not str(cause) and (cause.__cause__ or cause.__context__):
        cause = cause.__cause__ or cause.__context__
    return str(cause) if cause is not None and str(cause) else type(exc).__name__


# --- the model ------------------------------------------------------------------------------------


class OpenAICompatModel:
    """A model served through the OpenAI chat completions API (see the module docstring).

    ``features`` declares what the model can do; ``None`` takes them from :data:`KNOWN_MODELS`, and an
    unknown name gets ``tool-call``, ``multi-tool-call`` and ``stream-tool-call`` — a model (or server)
    without function calling must be declared with ``features=[]`` so the agent uses ReAct.
    ``context_size`` defaults to the known model's, else 8192. ``prices`` are (input, output) per
    million tokens, for the usage the agent reports; ``None`` reports zero prices.

    The API key is ``api_key``, else ``OPENAI_API_KEY``, else — with a ``base_url``, for local servers —
    a placeholder. The SDK client is created on first use (and again if used from another event loop);
    ``aclose()`` (or ``async with``) releases its connections.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        features: Iterable[str | ModelFeature] | None = None,
        mode: str | ModelMode = ModelMode.CHAT,
        context_size: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        name: str | None = None,
        prices: tuple[Decimal, Decimal] | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a model name")
        known = known_model(model)
        self.model = model
        self.name = name or model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").rstrip("/") or None
        if features is None:
            self.features: frozenset[ModelFeature] = known[0] if known else _TOOLS
        else:
            self.features = frozenset(ModelFeature(f) for f in features)
        self.mode = ModelMode(mode)
        self.context_size = context_size or (known[1] if known else DEFAULT_CONTEXT_SIZE)
        self.timeout = timeout
        self.max_retries = max_retries
        self.prices = (Decimal(prices[0]), Decimal(prices[1])) if prices is not None else None
        key = api_key or os.environ.get("OPENAI_API_KEY") or None
        self._api_key = key or (PLACEHOLDER_API_KEY if self.base_url else None)
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._stream_options = True  # cleared when a server rejects stream_options

    def __repr__(self) -> str:
        return f"OpenAICompatModel(model={self.model!r}, base_url={self.base_url!r}, name={self.name!r})"

    @property
    def server(self) -> str:
        """Where requests go: the base URL, or OpenAI's."""
        return self.base_url or OPENAI_URL

    # --- Model protocol ---

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
        request = build_request(self.model, messages, tools=tools, stop=stop, params=params)
        return self._stream(request, messages)

    # --- the client ---

    async def aclose(self) -> None:
        """Close the SDK client's connections; the next call opens new ones."""
        client, owner = self._client, self._client_loop
        self._client = self._client_loop = None
        # Connections made in another (finished) event loop cannot be closed from this one.
        if client is not None and owner is not None and owner() is asyncio.get_running_loop():
            await client.close()

    async def __aenter__(self) -> OpenAICompatModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _get_client(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if self._client is not None and self._client_loop is not None and self._client_loop() is loop:
            return self._client
        if self._api_key is None:
            raise ModelAuthError(
                f"no API key for {self.server}: set OPENAI_API_KEY or pass api_key= "
                "(a local server needs base_url= and no key)"
            )
        # A client from another (finished) event loop holds connections that loop owned: start over.
        self._client = openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )
        self._client_loop = weakref.ref(loop)
        return self._client

    # --- streaming ---

    async def _open(self, request: dict[str, Any]) -> openai.AsyncStream[ChatCompletionChunk]:
        client = self._get_client()
        if self._stream_options:
            try:
                stream: openai.AsyncStream[ChatCompletionChunk] = await client.chat.completions.create(
                    **request, stream=True, stream_options={"include_usage": True}
                )
                return stream
            except openai.APIStatusError as e:
                # Some older servers reject the option itself; ask them again without it.
                if e.status_code not in (400, 422) or "stream_options" not in _server_message(e):
                    raise
                self._stream_options = False
                log.info("%s does not accept stream_options: usage will be missing", self.server)
        stream = await client.chat.completions.create(**request, stream=True)
        return stream

    async def _stream(
        self, request: dict[str, Any], messages: Sequence[PromptMessage]
    ) -> AsyncGenerator[LLMChunk, None]:
        try:
            response = await self._open(request)
        except openai.OpenAIError as e:
            raise self._error(e) from None
        empty = True
        try:
            async for sdk_chunk in response:
                chunk = convert_chunk(sdk_chunk, self.prices)
                if chunk is not None:
                    empty = False
                    yield chunk
        except openai.OpenAIError as e:
            raise self._error(e) from None
        except json.JSONDecodeError as e:
            raise ModelUnavailableError(
                f"the model server at {self.server} sent a malformed stream: {e.msg}"
            ) from None
        finally:
            await response.close()
        if empty:
            raise self._empty_reply(messages)

    def _empty_reply(self, messages: Sequence[PromptMessage]) -> ModelError:
        # A stream without a single text, tool-call or finish chunk is never a reply: the server failed
        # after it had sent 200 (llama-cpp-python does this when the prompt exceeds its context).
        estimate = self.count_tokens(messages)
        if estimate >= self.context_size:
            return ContextTooLongError(
                f"the model server at {self.server} sent an empty reply, and the prompt (about {estimate} "
                f"tokens) does not fit model '{self.model}' (context size {self.context_size})"
            )
        return ModelRequestError(
            f"the model server at {self.server} sent an empty reply (no text, no tool call, no finish "
            "reason): it failed while answering; its log says why (often a prompt longer than its context)"
        )

    def _error(self, exc: openai.OpenAIError) -> ModelError:
        """The loopwright error for an SDK error; its message names the server, never the key."""
        if isinstance(exc, openai.APIConnectionError):  # a timeout is one too
            return self._unreachable(exc)
        if not isinstance(exc, openai.APIError):  # e.g. the SDK refusing to start without a key
            return ModelAuthError(f"cannot call {self._where}: {_scrub(str(exc), self._api_key)}")
        message = _scrub(_server_message(exc), self._api_key)
        status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
        # The SDK's own classes (and OpenAI's error code) say most; the status says the rest.
        by_kind = self._error_by_kind(exc, message, status)
        return by_kind if by_kind is not None else self._error_by_status(exc, message, status)

    @property
    def _where(self) -> str:
        return self.base_url or "OpenAI"

    def _unreachable(self, exc: openai.APIConnectionError) -> ModelError:
        if isinstance(exc, openai.APITimeoutError):
            return ModelUnavailableError(
                f"cannot reach the model server at {self.server}: no answer within {self.timeout:g} s"
            )
        detail = _scrub(_cause(exc), self._api_key)
        return ModelUnavailableError(f"cannot reach the model server at {self.server}: {detail}")

    def _error_by_kind(self, exc: openai.APIError, message: str, status: int | None) -> ModelError | None:
        where = self._where
        if isinstance(exc, openai.AuthenticationError):
            return ModelAuthError(
                f"the API key was rejected by {where}: check OPENAI_API_KEY ({message})", status_code=status
            )
        if isinstance(exc, openai.PermissionDeniedError):
            return ModelAuthError(
                f"the API key may not use model '{self.model}' at {where}: {message}", status_code=status
            )
        if isinstance(exc, openai.RateLimitError):
            what = "the quota is used up" if exc.code == "insufficient_quota" else "rate limited"
            return ModelRateLimitError(f"{where}: {what}: {message}", status_code=status)
        # A 400 with this code is how some servers say 404 (and a stream error has no status).
        if isinstance(exc, openai.NotFoundError) or exc.code == "model_not_found":
            return ModelNotFoundError(
                f"model '{self.model}' not found at {self.server} ({message}); check the model name "
                "and that base_url is the API root (usually ending in /v1)",
                status_code=status,
            )
        return None

    def _error_by_status(self, exc: openai.APIError, message: str, status: int | None) -> ModelError:
        # Servers word a prompt beyond the context in many ways, and only as a client error (or in
        # the stream): a 5xx mentioning the context is still the server failing.
        if status == 413 or ((status is None or 400 <= status < 500) and _is_context_error(exc, message)):
            return ContextTooLongError(
                f"the prompt is too long for model '{self.model}' "
                f"(context size {self.context_size}): {message}",
                status_code=status,
            )
        if status is not None and (status >= 500 or status == 408):
            return ModelUnavailableError(
                f"cannot reach the model server at {self.server}: server error {status}: {message}",
                status_code=status,
            )
        if status is None:  # the server reported the error inside a stream it had begun with 200
            return ModelRequestError(
                f"the model server at {self.server} reported an error while streaming: {message}"
            )
        return ModelRequestError(
            f"the model server at {self.server} rejected the request ({status}): {message}",
            status_code=status,
        )


__all__ = [
    "KNOWN_MODELS",
    "SAMPLING_PARAMS",
    "OpenAICompatModel",
    "build_request",
    "convert_chunk",
    "ensure_array_items",
    "known_model",
    "make_usage",
    "message_to_openai",
    "tool_to_openai",
]
