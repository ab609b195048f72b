"""The tool engine: runs one tool call and always returns an observation, never raises.

Failures become Dify's observation strings (reference §6.3) so the model can react and the run goes on;
timeouts, truncation of long observations and an optional TTL cache are ours.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cachetools import TLRUCache

from loopwright.model.base import estimate_tokens, token_prefix_length
from loopwright.model.entities import ToolSchema
from loopwright.tools.base import (
    DIRECT_CALL,
    FILE_OUTPUTS,
    BlobMessage,
    DirectCallFn,
    FileMessage,
    ImageMessage,
    JsonMessage,
    LinkMessage,
    ProgressMessage,
    TextMessage,
    Tool,
    ToolContext,
    ToolCredentialError,
    ToolInvokeError,
    ToolOutput,
    ToolParameterValidationError,
    VariableMessage,
    cast_value,
)
from loopwright.tools.files.manager import StoredFile, with_file_observations

log = logging.getLogger(__name__)

IMAGE_SENT = (
    "image has been created and sent to user already, you do not need to create it, "
    "just tell the user to check it now."
)


@dataclass(slots=True)
class ToolInvokeMeta:
    """Dify's ToolInvokeMeta (time_cost, error, tool_config) plus whether the result came from cache."""

    time_cost: float = 0.0
    error: str | None = None
    tool_config: dict[str, Any] = field(default_factory=dict)
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"time_cost": self.time_cost, "error": self.error, "tool_config": self.tool_config}


@dataclass(slots=True)
class ToolResult:
    """What one call produced: the observation the model sees, every output, the file outputs."""

    observation: str
    outputs: list[ToolOutput]
    meta: ToolInvokeMeta

    @property
    def files(self) -> list[ToolOutput]:
        return [o for o in self.outputs if isinstance(o, FILE_OUTPUTS)]


_NO_CONTEXT = ToolContext()

# Runs a tool with the given arguments and returns everything it yielded.
ToolCaller = Callable[[dict[str, Any]], Awaitable[list[ToolOutput]]]
# Dify's tool_invoke_hook: ``hook(tool, arguments, context, call)`` runs instead of the tool and
# returns its outputs. It may call ``call(arguments)`` (the real tool, with the same or changed
# arguments), wrap it (audit, sandbox, time it) or not call it at all (a mock, a refusal). What it
# raises is the tool's error; the tool's timeout covers the hook.
ToolHook = Callable[[Tool, dict[str, Any], ToolContext, ToolCaller], Awaitable[list[ToolOutput]]]


# Told of each ProgressMessage a call yields, as it comes (agent: a ToolProgress event)
ProgressSink = Callable[[ProgressMessage], None]


class FileSink(Protocol):
    """Where the files tools make are kept (``loopwright.tools.files.ToolFiles``): each file output is
    stored and given a URL, and the model is told the file's name, type and URL."""

    async def store_outputs(self, outputs: Sequence[ToolOutput], ctx: ToolContext) -> list[StoredFile]: ...


_CacheKey = tuple[str, str, str]  # tool name, user id, canonical arguments
_CacheEntry = tuple[float, "ToolResult"]  # the tool's TTL, the result


def _expires(_key: _CacheKey, entry: _CacheEntry, now: float) -> float:
    return now + entry[0]


class ToolEngine:
    """Invokes tools by name for one agent. Holds the tool table and the result cache.

    ``clock`` is what cache expiry is measured with (seconds; ``time.monotonic`` by default)."""

    def __init__(
        self,
        tools: Iterable[Tool],
        *,
        default_timeout: float = 30.0,
        observation_token_limit: int | None = 4000,
        files: FileSink | None = None,
        clock: Callable[[], float] = time.monotonic,
        hook: ToolHook | None = None,
    ) -> None:
        self.tools: dict[str, Tool] = {}
        self.schemas: list[ToolSchema] = []
        self.approval_names: frozenset[str] = frozenset()
        self.unsafe_names: frozenset[str] = frozenset()
        self.progress_names: frozenset[str] = frozenset()
        self.set_tools(tools)
        self.default_timeout = default_timeout
        self.observation_token_limit = observation_token_limit
        self.files = files
        self.hook = hook
        # Tool results by (name, user, arguments), each kept for its tool's cache_ttl; made when a tool
        # with a cache_ttl is first called (most engines have none, and an agent may be built per run).
        self._cache: TLRUCache[_CacheKey, _CacheEntry] | None = None
        self._clock = clock

    def set_tools(self, tools: Iterable[Tool]) -> None:
        """Replace the tool table (a toolset's tools may change between runs); the cache is kept."""
        table: dict[str, Tool] = {}
        for t in tools:
            if t.name in table:
                log.warning("two tools are named %r; the later one is used", t.name)
            table[t.name] = t
        self.tools = table
        self.schemas = [t.schema for t in table.values()]
        # the tools whose calls wait for a person's approval (agent.approvals)
        self.approval_names = frozenset(t.name for t in table.values() if t.requires_approval)
        # the tools a call of which must not run twice (durable runs: agent.durability)
        self.unsafe_names = frozenset(t.name for t in table.values() if not t.idempotent)
        # the tools whose calls stream progress (Tool.streams_progress)
        self.progress_names = frozenset(t.name for t in table.values() if t.streams_progress)

    def _results(self) -> TLRUCache[_CacheKey, _CacheEntry]:
        cache = self._cache
        if cache is None:
            cache = self._cache = TLRUCache(1024, ttu=_expires, timer=self._clock)
        return cache

    async def invoke(
        self,
        name: str,
        arguments: str | Mapping[str, Any],
        ctx: ToolContext | None = None,
        progress: ProgressSink | None = None,
    ) -> ToolResult:
        """Run one call; ``progress`` is told of each ProgressMessage it yields, as it comes."""
        tool = self.tools.get(name)
        if tool is None:
            return _error_result(f"there is not a tool named {name}")
        started = time.perf_counter()
        ctx = ctx or _NO_CONTEXT
        expired: list[bool] = []  # set by the timer: the call ran out of time
        timeout = tool.timeout if tool.timeout is not None else self.default_timeout
        try:
            args = prepare_arguments(tool, arguments)
            # The user is part of the key: a tool may answer differently per user (it gets the context).
            key = (name, ctx.user_id, _canonical(args)) if tool.cache_ttl else None
            if key is not None and (hit := self._results().get(key)) is not None:
                result = hit[1]
                return ToolResult(
                    result.observation, result.outputs, ToolInvokeMeta(0.0, None, {"tool_name": name}, True)
                )
            outputs = await _within(timeout, self._call(tool, args, ctx, progress), expired)
        except Exception as e:  # a tool's own bug (or its own timeout) must not end the run
            timed_out = isinstance(e, TimeoutError) and bool(expired)
            return _failure(name, e, f"timed out after {timeout:g} s" if timed_out else None, started)
        result = await self._result(outputs, ctx, name, started)
        if key is not None and tool.cache_ttl:
            self._results()[key] = (tool.cache_ttl, result)
        return result

    def _call(
        self, tool: Tool, args: dict[str, Any], ctx: ToolContext, progress: ProgressSink | None
    ) -> Awaitable[list[ToolOutput]]:
        if self.hook is not None:
            return self.hook(tool, args, ctx, _caller(tool, ctx, progress))
        direct: DirectCallFn | None = getattr(tool.invoke, DIRECT_CALL, None)
        if direct:
            return direct(args, ctx)
        if tool.streams_progress:
            return _collect_progress(tool.invoke(args, ctx), progress)
        return _collect(tool.invoke(args, ctx))

    async def _result(
        self, outputs: list[ToolOutput], ctx: ToolContext, name: str, started: float
    ) -> ToolResult:
        """A successful call's result: files stored and linked, the observation rendered and cut."""
        shown = outputs
        if self.files is not None and any(isinstance(o, FILE_OUTPUTS) for o in outputs):
            stored = await self.files.store_outputs(outputs, ctx)
            shown = with_file_observations(outputs, stored)
            outputs = _linked(outputs, stored)
        meta = ToolInvokeMeta(time.perf_counter() - started, tool_config={"tool_name": name})
        return ToolResult(self._truncate(render_observation(shown)), outputs, meta)

    def _truncate(self, text: str) -> str:
        limit = self.observation_token_limit
        # No tokenizer yields more tokens than characters, so short texts skip the count.
        if limit is None or len(text) <= limit:
            return text
        tokens = estimate_tokens(text)
        if tokens <= limit:
            return text
        keep = token_prefix_length(text, limit)
        return (
            f"{text[:keep]}\n[truncated: the tool returned about {tokens} tokens; "
            f"only the first {limit} are shown]"
        )


def prepare_arguments(tool: Tool, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
    """The arguments a tool is invoked with: decoded, merged with configured form values (which win),
    defaults filled, required ones checked, and values cast to the declared types."""
    args = _decode_arguments(tool, arguments)
    if tool.form_values:
        args.update(tool.form_values)
    validated = tool.validates_arguments
    for p in tool.parameters:
        if p.name in args:
            if not validated:
                args[p.name] = cast_value(p, args[p.name])
        elif p.default is not None:
            args[p.name] = p.default
        elif p.required:
            raise ToolParameterValidationError(f"missing required parameter {p.name!r}")
    return args


def _decode_arguments(tool: Tool, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(arguments, str):
        return dict(arguments)
    text = arguments.strip()
    if not text:
        return {}
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict):
        return decoded
    llm_params = tool.llm_parameters
    if len(llm_params) == 1:  # a plain string for a one-parameter tool, as Dify accepts
        return {llm_params[0].name: arguments}
    raise ToolParameterValidationError(f"tool arguments should be a JSON object, but got: {arguments!r}")


def render_observation(outputs: list[ToolOutput]) -> str:
    """The text the model sees for a tool's outputs (Dify's rules, with readable variables and files):
    the texts in order, then each JSON output not already among them."""
    texts: list[str] = []
    jsons: list[str] = []
    for out in outputs:
        if isinstance(out, JsonMessage):
            if not out.suppress_output:
                jsons.append(json.dumps(out.data, ensure_ascii=False, default=str))
        elif (text := _output_text(out)) is not None:
            texts.append(text)
    if jsons:
        seen = set(texts)
        texts.extend(j for j in jsons if j not in seen)
    return "".join(texts)


def _output_text(out: ToolOutput) -> str | None:
    """The observation text of one non-JSON output; None for what the model does not see."""
    if isinstance(out, TextMessage):
        return out.text
    if isinstance(out, LinkMessage):
        return f"result link: {out.url}. please tell user to check it."
    if isinstance(out, ImageMessage) or (
        isinstance(out, BlobMessage | FileMessage) and out.mime_type.startswith("image/")
    ):
        return IMAGE_SENT
    if isinstance(out, BlobMessage):
        return f"file created: {out.filename or 'unnamed'} ({out.mime_type}, {len(out.data)} bytes)"
    if isinstance(out, FileMessage):
        return f"file created: {out.filename or out.url} ({out.mime_type})"
    if isinstance(out, VariableMessage) and not out.internal:
        return f"{out.name}: {json.dumps(out.value, ensure_ascii=False, default=str)}"
    return None  # log messages are progress for the user interface; the model does not need them


def _linked(outputs: list[ToolOutput], stored: Sequence[StoredFile]) -> list[ToolOutput]:
    """The outputs with each stored file as a link to its stored copy (bytes are not carried on)."""
    by_output = {id(s.output): s for s in stored}
    linked: list[ToolOutput] = []
    for out in outputs:
        item = by_output.get(id(out))
        if item is None or item.file is None:
            linked.append(out)
            continue
        f = item.file
        if isinstance(out, ImageMessage):
            linked.append(ImageMessage(item.url, f.mime_type))
        else:
            linked.append(FileMessage(item.url, f.mime_type, f.filename))
    return linked


def _caller(tool: Tool, ctx: ToolContext, progress: ProgressSink | None = None) -> ToolCaller:
    """The real call a tool hook gets: ``tool`` run with the arguments it is given."""

    async def call(arguments: dict[str, Any]) -> list[ToolOutput]:
        if tool.streams_progress:
            return await _collect_progress(tool.invoke(arguments, ctx), progress)
        return [m async for m in tool.invoke(arguments, ctx)]

    return call


async def _collect(outputs: AsyncIterator[ToolOutput]) -> list[ToolOutput]:
    return [m async for m in outputs]


async def _collect_progress(
    outputs: AsyncIterator[ToolOutput], progress: ProgressSink | None
) -> list[ToolOutput]:
    """A call's outputs without its progress, which goes to ``progress`` as it comes (a sink that
    raises is ignored: progress must never fail a call)."""
    kept: list[ToolOutput] = []
    async for m in outputs:
        if type(m) is not ProgressMessage:
            kept.append(m)
        elif progress is not None:
            try:
                progress(m)
            except Exception:
                log.exception("a progress sink raised; ignored")
    return kept


async def _within(
    seconds: float | None, call: Awaitable[list[ToolOutput]], expired: list[bool]
) -> list[ToolOutput]:
    """``await call``, cancelled after ``seconds`` with ``TimeoutError`` (``expired`` then
    gets an item): ``asyncio.timeout``'s rules (a cancellation from outside stays one), at a third of
    its cost per call (no context-manager object, one timer handle)."""
    if seconds is None:
        return await call
    task = asyncio.current_task()
    assert task is not None, "a tool call runs in a task"
    loop = asyncio.get_running_loop()
    cancelling = task.cancelling()
    timer = loop.call_at(loop.time() + seconds, _expire, task, expired)
    try:
        outputs = await call
    except asyncio.CancelledError:
        if expired and task.uncancel() <= cancelling:
            raise TimeoutError from None
        raise
    finally:
        timer.cancel()
    if expired:  # the time ran out as the call returned: the cancellation is withdrawn, as asyncio does
        task.uncancel()
    return outputs


def _expire(task: asyncio.Task[Any], expired: list[bool]) -> None:
    expired.append(True)
    task.cancel()


def _failure(name: str, e: Exception, timed_out: str | None, started: float) -> ToolResult:
    """The observation for a failed call: Dify's strings for the tool errors it knows, else the
    error's own text (or the timeout) in ``meta.error``."""
    if isinstance(e, ToolParameterValidationError):
        return _error_result(f"tool parameters validation error: {e}, please check your tool parameters")
    if isinstance(e, ToolCredentialError):
        return _error_result("Please check your tool provider credentials")
    if isinstance(e, ToolInvokeError):
        return _error_result(f"tool invoke error: {e}")
    error = timed_out or str(e) or type(e).__name__
    log.info("tool %s failed: %s", name, error)
    meta = ToolInvokeMeta(time.perf_counter() - started, error, {"tool_name": name})
    return ToolResult(f"tool invoke error: {error}", [], meta)


def _error_result(text: str) -> ToolResult:
    return ToolResult(text, [], ToolInvokeMeta(0.0, text, {}))


def _canonical(args: Mapping[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
