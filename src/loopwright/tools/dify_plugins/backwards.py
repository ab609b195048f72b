"""Answers to a plugin's calls back into the host ("backwards invocations").

What makes sense here is answered: ``storage`` (a key-value store per plugin), ``llm`` (the app's
model, when the host was given a way to find it) and ``upload_file`` (into the tool files, through
:mod:`~loopwright.tools.dify_plugins.uploads`). Everything else — other apps, workflow nodes,
embeddings, speech — gets a clear error at once, so the plugin never
waits for an answer that will not come (SDK 0.0.1b65 would wait 250 s).
"""

from __future__ import annotations

import binascii
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from loopwright.errors import ToolError
from loopwright.model.base import Model
from loopwright.model.entities import (
    AssistantMessage,
    PromptMessage,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from loopwright.model.settings import model_settings_from_params
from loopwright.tools.base import ToolContext
from loopwright.tools.dify_plugins.storage import PluginStorage, PluginStorageError
from loopwright.tools.dify_plugins.uploads import UploadReceiver

ModelFor = Callable[[ToolContext], Awaitable[Model | None]]
"""``model_for(ctx)``: the model of the app a tool call runs for, or None."""


class BackwardsError(ToolError):
    """A backwards call the host refuses or cannot answer; its text goes to the plugin."""


async def answer(
    kind: str,
    request: Mapping[str, Any],
    storage: PluginStorage,
    ctx: ToolContext,
    model_for: ModelFor | None,
    uploads: UploadReceiver | None = None,
) -> AsyncIterator[Mapping[str, Any]]:
    """The ``response`` data of one backwards call, in order; raises :class:`BackwardsError`."""
    if kind == "storage":
        yield await _storage(request, storage)
        return
    if kind == "llm":
        model = await model_for(ctx) if model_for is not None else None
        if model is None:
            raise BackwardsError("no model is available to plugins here")
        async for chunk in _llm(model, request):
            yield chunk
        return
    if kind == "upload_file":
        if uploads is None:
            raise BackwardsError("file uploads are not available to plugins here")
        filename = str(request.get("filename") or "file")
        mime_type = str(request.get("mimetype") or "application/octet-stream")
        yield {"url": await uploads.url_for(ctx, filename, mime_type)}
        return
    raise BackwardsError(f"loopwright does not offer {kind!r} to plugins")


async def _storage(request: Mapping[str, Any], storage: PluginStorage) -> Mapping[str, Any]:
    opt, key = request.get("opt"), str(request.get("key", ""))
    try:
        if opt == "set":
            await storage.set(key, binascii.unhexlify(str(request.get("value", ""))))
            return {"data": "ok"}
        if opt == "get":
            value = await storage.get(key)
            if value is None:
                raise BackwardsError(f"no stored value for key {key!r}")
            return {"data": value.hex()}
        if opt == "del":
            await storage.delete(key)
            return {"data": "ok"}
        if opt == "exist":
            return {"data": await storage.exists(key)}
    except (PluginStorageError, binascii.Error, ValueError) as exc:
        raise BackwardsError(str(exc)) from None
    raise BackwardsError(f"unknown storage operation {opt!r}")


async def _llm(model: Model, request: Mapping[str, Any]) -> AsyncIterator[Mapping[str, Any]]:
    """The model's reply as Dify's ``LLMResultChunk`` objects (text deltas, usage on the last)."""
    messages = [_prompt_message(m) for m in request.get("prompt_messages") or [] if isinstance(m, Mapping)]
    params = request.get("completion_params")
    stop = request.get("stop")
    name = str(request.get("model", ""))
    usage: dict[str, Any] = {}
    try:
        settings = model_settings_from_params(params if isinstance(params, Mapping) else None)
    except TypeError as exc:
        raise BackwardsError(f"bad completion_params: {exc}") from None
    stops = [str(s) for s in stop] if isinstance(stop, list) else []
    async for chunk in model.stream(messages, stop=stops, params=settings):
        if chunk.usage is not None:
            usage = {
                "prompt_tokens": chunk.usage.prompt_tokens,
                "completion_tokens": chunk.usage.completion_tokens,
                "total_tokens": chunk.usage.total_tokens,
            }
        if chunk.text:
            yield _result_chunk(name, chunk.text, None, None)
    yield _result_chunk(name, "", usage or None, "stop")


def _result_chunk(
    model: str, text: str, usage: Mapping[str, Any] | None, finish: str | None
) -> dict[str, Any]:
    delta: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text, "tool_calls": []},
        "finish_reason": finish,
    }
    if usage is not None:
        delta["usage"] = {**usage, **_ZERO_PRICES}
    return {"model": model, "prompt_messages": [], "system_fingerprint": None, "delta": delta}


_ZERO_PRICES = {
    "prompt_unit_price": "0",
    "prompt_price_unit": "0",
    "prompt_price": "0",
    "completion_unit_price": "0",
    "completion_price_unit": "0",
    "completion_price": "0",
    "total_price": "0",
    "currency": "USD",
    "latency": 0.0,
}


def _prompt_message(message: Mapping[str, Any]) -> PromptMessage:
    role = message.get("role")
    content = message.get("content")
    if isinstance(content, list):  # multi-part content: the text parts
        content = "".join(
            str(p.get("data", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text"
        )
    text = "" if content is None else str(content)
    if role == "system":
        return SystemMessage(text)
    if role == "assistant":
        return AssistantMessage(text)
    if role == "tool":
        return ToolMessage(text, str(message.get("tool_call_id", "")))
    return UserMessage(text)
