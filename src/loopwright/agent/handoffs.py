"""Handoffs: an agent hands the conversation to another, which goes on with its own instruction, tools
and model, and may hand it back.

An agent that may hand over gets one tool per target, ``handoff_tool(target, description)`` (named
``handoff_to_<target>``; the description says when). :func:`stream_with_handoffs` runs a turn across a
set of named agents: when the one answering calls a handoff tool, its round ends, its run is closed
before another model call, a :class:`HandoffStarted` event says who answers now, and the target runs
the same turn with the conversation carried — the history and, unless ``carry="history"``, what the
previous agent did this turn (its tool rounds, handoff included), then the user's message. At most
``max_handoffs`` hand-overs happen in one turn: past that, a handoff tool answers that the agent must
reply itself.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from loopwright.agent.events import AgentEvent, RoundFinished, ToolCallFinished
from loopwright.model.entities import AssistantMessage, PromptMessage, ToolCall, ToolMessage
from loopwright.tools.base import TextMessage, Tool, ToolContext, ToolInvokeError, ToolOutput, ToolParameter

if TYPE_CHECKING:
    from loopwright.agent.agent import Agent

HANDOFF_PREFIX = "handoff_to_"
DEFAULT_MAX_HANDOFFS = 3
Carry = Literal["turn", "history"]

# hand-overs left in the turn being run (set by stream_with_handoffs; read by the handoff tools)
_LEFT: contextvars.ContextVar[int] = contextvars.ContextVar("loopwright_handoffs_left", default=0)
# the agents the turn being run may be handed to (None: any the tools name)
_TARGETS: contextvars.ContextVar[frozenset[str] | None] = contextvars.ContextVar(
    "loopwright_handoff_targets", default=None
)
# What of the history a target sees when ``source`` hands to it: ``(source, target, history)`` → messages
HistoryFilter = Callable[[str, str, Sequence[PromptMessage]], list[PromptMessage]]


@dataclass(slots=True)
class HandoffStarted:
    """The agent ``source`` handed the conversation to ``target``, which answers from here on."""

    round: int
    source: str
    target: str
    reason: str = ""
    type: Literal["handoff_started"] = field(default="handoff_started", init=False)


def handoff_tool(target: str, description: str) -> Tool:
    """The tool that hands the conversation to the agent named ``target``."""
    reason = ToolParameter(
        "reason", "string", description="Why the conversation goes to them, in a few words."
    )

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        if _LEFT.get() <= 0:
            raise ToolInvokeError(f"the conversation cannot be handed to {target} now: answer it yourself")
        available = _TARGETS.get()
        if available is not None and target not in available:
            raise ToolInvokeError(f"{target} is not available to take the conversation: answer it yourself")
        yield TextMessage(f"Handed over to {target}.")

    return Tool(
        tool_name(target),
        f"Hand the conversation to {target}: {description}",
        (reason,),
        invoke,
        label=target,
    )


async def stream_with_handoffs(
    agents: Mapping[str, Agent],
    start: str,
    query: str,
    *,
    history: Sequence[PromptMessage] = (),
    max_handoffs: int = DEFAULT_MAX_HANDOFFS,
    carry: Carry = "turn",
    context: ToolContext | None = None,
    history_filter: HistoryFilter | None = None,
    **options: Any,
) -> AsyncGenerator[AgentEvent | HandoffStarted, None]:
    """The events of one turn across ``agents`` (by name), from ``start``; see the module's docstring.
    The last event is the answering agent's ``finished``. The target's prompt is the history (through
    ``history_filter`` when given), what was done this turn (``carry="turn"``), then the user's message.
    ``options`` go to each agent's ``stream`` (inputs, files, steps, budget)."""
    targets = {tool_name(name): name for name in agents}
    current, carried, left = start, list(history), max_handoffs
    done: list[PromptMessage] = []  # this turn's tool rounds so far, handoffs included
    names = frozenset(agents)
    while True:
        handoff: HandoffStarted | None = None
        turn: list[PromptMessage] = []
        token, offered = _LEFT.set(left), _TARGETS.set(names)
        try:
            events = agents[current].stream(query, history=carried, context=context, **options)
            async with aclosing(events):
                async for event in events:
                    yield event
                    if (
                        isinstance(event, ToolCallFinished)
                        and event.meta.error is None
                        and event.name in targets
                    ):
                        handoff = HandoffStarted(event.round, current, targets[event.name])
                    elif isinstance(event, RoundFinished):
                        turn.extend(_round_messages(event))
                        if handoff is not None:
                            handoff.reason = _reason(event, handoff.target)
                            break  # closed here: the next round's model call never starts
        finally:
            _LEFT.reset(token)
            _TARGETS.reset(offered)
        if handoff is None:
            return
        left -= 1
        yield handoff
        done.extend(turn)
        past = list(history) if history_filter is None else history_filter(current, handoff.target, history)
        carried = [*past, *done] if carry == "turn" else past
        current = handoff.target


def tool_name(target: str) -> str:
    """The handoff tool's name for a target (``[a-zA-Z0-9_-]``, at most 64 characters)."""
    return HANDOFF_PREFIX + re.sub(r"[^a-zA-Z0-9_-]+", "_", target)[:52]


def _reason(event: RoundFinished, target: str) -> str:
    for call in event.calls:
        if call.name == tool_name(target) and isinstance(call.arguments, dict):
            return str(call.arguments.get("reason") or "")
    return ""


def _round_messages(event: RoundFinished) -> list[PromptMessage]:
    """A finished tool round as function-calling messages (a ReAct prompt shows them as its steps)."""
    if not event.calls:
        return []
    calls = [ToolCall(c.id, c.name, c.arguments_json()) for c in event.calls]
    results = [ToolMessage(c.observation or "", c.id, c.name) for c in event.calls]
    return [AssistantMessage(event.thought, calls), *results]
