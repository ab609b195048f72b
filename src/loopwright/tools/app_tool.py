"""Another app as a tool (the analogue of Dify's workflow-as-tool).

The tool's parameters are ``query`` plus the inner app's input form; calling it runs one message of
that app and returns its answer (text) and files. Calls nest — an app may call an app that calls an
app — up to ``max_depth`` (default 5), past which the call is refused with a clear error instead of
recursing until something breaks. The inner run's token usage is passed on as a ``llm_usage``
variable so that the outer message can count it. A runner that streams (``streams=True``) is given a
progress sink: the inner run's rounds reach the calling run as progress of the call as they happen
(``ProgressMessage``; ``Tool.streams_progress``), before its answer.

Running an app is the app layer's business; this module only needs an :data:`AppRunner`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopwright.model.entities import Usage
from loopwright.tools.base import ProgressMessage, Tool, ToolContext, ToolOutput, ToolParameter
from loopwright.tools.nested_call import answer_outputs, inner_context, query_of

DEFAULT_MAX_DEPTH = 5


@dataclass(frozen=True, slots=True)
class AppAnswer:
    """What one run of an app gave."""

    text: str
    files: Sequence[ToolOutput] = ()
    usage: Usage = field(default_factory=Usage)


AppRunner = Callable[..., Awaitable[AppAnswer]]
"""``runner(app_id, query, inputs, ctx)``: run one message of the app for ``ctx.user_id``; raise
``ToolInvokeError`` (or any error) when it fails. ``ctx.call_depth`` is already the inner depth. A
streaming runner also takes ``progress=`` (a callable told of each ``ProgressMessage``)."""


def app_tool(
    app_id: str,
    runner: AppRunner,
    *,
    name: str,
    description: str,
    inputs: Sequence[ToolParameter] = (),
    max_depth: int = DEFAULT_MAX_DEPTH,
    streams: bool = False,
) -> Tool:
    """A tool that asks the app ``app_id`` (through ``runner``) and answers with its reply."""
    query = ToolParameter("query", "string", required=True, description="What to ask the app.")
    params = (query, *(p for p in inputs if p.name != "query"))
    tool_name = tool_name_for(name)

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        inner = inner_context(ctx, callee=f"the app {name!r}", kind="apps", max_depth=max_depth)
        text = query_of(args, hint="say what to ask the app")
        values = {k: v for k, v in args.items() if k != "query"}
        if not streams:
            answer = await runner(app_id, text, values, inner)
        else:
            progress: asyncio.Queue[ProgressMessage] = asyncio.Queue()
            call = asyncio.ensure_future(runner(app_id, text, values, inner, progress=progress.put_nowait))
            async for item in _until_done(call, progress):
                yield item
            answer = call.result()
        for output in answer_outputs(answer.text, answer.files, answer.usage):
            yield output

    return Tool(
        tool_name,
        description or f"Ask the app {name!r}.",
        params,
        invoke,
        label=name,
        streams_progress=streams,
    )


async def _until_done(
    call: asyncio.Future[AppAnswer], progress: asyncio.Queue[ProgressMessage]
) -> AsyncIterator[ProgressMessage]:
    """The progress the call reports, as it comes, until it is done; cancelling (the caller stopped)
    cancels the call."""
    try:
        while not call.done():
            item = asyncio.ensure_future(progress.get())
            waiting: set[asyncio.Future[Any]] = {item, call}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if item.done():
                yield item.result()
            else:
                item.cancel()
        while not progress.empty():
            yield progress.get_nowait()
    finally:
        if not call.done():
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)


def tool_name_for(app_name: str) -> str:
    """A function name a model accepts (``[a-zA-Z0-9_-]``, at most 64 characters) from an app name."""
    cleaned = re.sub(r"[^a-zA-Z0-9_-]+", "_", app_name.strip()).strip("_").lower()
    return (cleaned or "app")[:64]
