"""An :class:`Agent` as a tool, whose rounds stream into the calling run as they happen.

``agent_tool(agent, name=…, description=…)`` is a tool with one parameter, ``query``. A call runs the
sub-agent and yields each of its events as progress (``ProgressMessage`` with the event as its
``detail``): the calling run streams them as ``ToolProgress`` events of that call — nested and
attributed (the call's id and tool name), before the sub-agent's answer, which is the call's result.
Its text deltas are left out (its thought comes whole with its round's end). The sub-agent's usage
travels as an ``llm_usage`` variable, which the server adds to the message's usage, as for an app
called as a tool. The call is the sub-agent's run: stopping the caller (closing its stream, a stopped
message) cancels the call, which closes the sub-agent's stream and cancels its model call and tools.

Bounds: a sub-agent calling sub-agents goes at most ``max_depth`` deep (``ToolContext.call_depth``,
shared with apps called as tools), and at most ``max_concurrent`` calls of one such tool run at once
(the others wait their turn).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from loopwright.agent.events import (
    AgentEvent,
    AgentResult,
    Finished,
    PlanCreated,
    PlanStepFinished,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
)
from loopwright.tools.base import ProgressMessage, Tool, ToolContext, ToolOutput, ToolParameter
from loopwright.tools.nested_call import answer_outputs, inner_context, query_of

if TYPE_CHECKING:
    from loopwright.agent.agent import Agent

DEFAULT_MAX_DEPTH = 3
DEFAULT_MAX_CONCURRENT = 4


def agent_tool(
    agent: Agent,
    *,
    name: str,
    description: str,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_concurrent: int = DEFAULT_MAX_CONCURRENT,
) -> Tool:
    """A tool that asks ``agent`` and streams its rounds (see the module's docstring)."""
    gate = asyncio.Semaphore(max(1, max_concurrent))
    query = ToolParameter("query", "string", required=True, description="What to ask.")

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        inner = inner_context(ctx, callee=name, kind="agents", max_depth=max_depth)
        text = query_of(args, hint="say what to ask")
        result: AgentResult | None = None
        async with gate:
            events = agent.stream(text, context=inner)
            async with aclosing(events):
                async for event in events:
                    if isinstance(event, Finished):
                        result = event.result
                    elif type(event) is not TextDelta:
                        yield ProgressMessage(describe(event), None, event)
        assert result is not None
        for output in answer_outputs(result.text, result.files, result.usage):
            yield output

    return Tool(name, description, (query,), invoke, label=name, streams_progress=True)


def describe(event: AgentEvent) -> str:
    """One line for a sub-agent's event, as a live thought shows it."""
    if isinstance(event, RoundStarted):
        return f"round {event.round}"
    if isinstance(event, ToolCallStarted):
        return f"calling {event.name}"
    if isinstance(event, ToolCallFinished):
        return f"{event.name}: {_short(event.observation)}"
    if isinstance(event, ToolProgress):
        return f"{event.name}: {event.text}"
    if isinstance(event, RoundFinished):
        return f"answer: {_short(event.answer)}" if event.answer is not None else _short(event.thought)
    if isinstance(event, PlanCreated):
        return "plan: " + ", ".join(f"{s.id} {s.task}" for s in event.steps)
    if isinstance(event, PlanStepFinished):
        return f"step {event.step.id} {event.status}"
    return event.type


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"
