"""What a tool that runs another agent or app checks first and yields last.

Two tools run a whole other run as their call — an :class:`~loopwright.agent.agent.Agent` as a tool
(``agent.subagent``) and an app as a tool (``tools.app_tool``). Both refuse a call that nests too
deep, need a non-blank ``query``, and end with the inner run's answer, files and token usage; that
shared frame lives here once, so the two keep the same limits and outputs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from loopwright.model.entities import Usage
from loopwright.tools.base import (
    LLM_USAGE,
    TextMessage,
    ToolContext,
    ToolInvokeError,
    ToolOutput,
    VariableMessage,
)


def inner_context(ctx: ToolContext, *, callee: str, kind: str, max_depth: int) -> ToolContext:
    """The context of the nested run (one level deeper), or a clear refusal past ``max_depth``.

    ``callee`` names what was not called and ``kind`` what nests ("agents", "apps")."""
    if ctx.call_depth >= max_depth:
        raise ToolInvokeError(
            f"{callee} was not called: {kind} calling {kind} went {ctx.call_depth} deep, "
            f"and the limit is {max_depth}"
        )
    return replace(ctx, call_depth=ctx.call_depth + 1)


def query_of(args: Mapping[str, Any], *, hint: str) -> str:
    """The call's ``query``, stripped; a blank one is refused with ``hint`` saying what to ask."""
    text = str(args.get("query") or "").strip()
    if not text:
        raise ToolInvokeError(f"query is required: {hint}")
    return text


def answer_outputs(text: str, files: Sequence[ToolOutput], usage: Usage) -> Iterator[ToolOutput]:
    """The nested run's answer as the call's result: its text, its files, and its usage (an
    internal variable the server adds to the calling message's usage)."""
    yield TextMessage(text)
    yield from files
    yield VariableMessage(LLM_USAGE, usage, internal=True)
