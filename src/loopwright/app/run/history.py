"""A conversation's history as prompt messages, rebuilt from its stored messages and agent thoughts
(Dify's ``organize_agent_history``), and trimmed to a token budget by whole turns
(``AgentHistoryPromptTransform``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.model.entities import (
    AssistantMessage,
    PromptMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from loopwright.store import codec
from loopwright.store.models import Message, MessageAgentThought
from loopwright.store.threads import load_thread

__all__ = ["load_history", "rebuild_history", "trim_to_budget"]


def _thought_messages(row: MessageAgentThought) -> list[PromptMessage]:
    names = codec.split_tool_names(row.tool)
    if not names:
        return [AssistantMessage(content=row.thought or "")]
    keys = codec.unique_tool_keys(names)
    inputs = codec.decode_history_inputs(row.tool, row.tool_input)
    outputs = codec.decode_history_observations(row.tool, row.observation)
    calls: list[ToolCall] = []
    results: list[PromptMessage] = []
    for name, key in zip(names, keys, strict=True):
        call_id = str(uuid.uuid4())
        calls.append(ToolCall(id=call_id, name=name, arguments=json.dumps(inputs[key])))
        results.append(ToolMessage(content=outputs[key], tool_call_id=call_id, name=name))
    return [AssistantMessage(content=row.thought or "", tool_calls=calls), *results]


def rebuild_history(
    messages: Sequence[Message],
    thoughts: Mapping[str, Sequence[MessageAgentThought]],
    *,
    exclude_message_id: str | None = None,
) -> list[PromptMessage]:
    """Prompt messages for ``messages`` (chronological) and their thoughts (by message id, in position
    order). Each message gives its query as a user message, then per thought either an assistant message
    with tool calls plus one tool message per call, or the thought as assistant text; a message without
    thoughts gives its answer when non-empty. ``exclude_message_id`` (the current message) is skipped."""
    out: list[PromptMessage] = []
    for msg in messages:
        if msg.id == exclude_message_id:
            continue
        out.append(UserMessage(content=msg.query))
        rows = thoughts.get(msg.id) or ()
        if rows:
            for row in rows:
                out.extend(_thought_messages(row))
        elif msg.answer:
            out.append(AssistantMessage(content=msg.answer))
    return out


async def load_history(
    session: AsyncSession, conversation_id: str, *, exclude_message_id: str | None = None
) -> list[PromptMessage]:
    """The conversation's current thread rebuilt as prompt messages (see :func:`rebuild_history`)."""
    thread, thoughts = await load_thread(session, conversation_id)
    return rebuild_history(thread, thoughts, exclude_message_id=exclude_message_id)


def trim_to_budget(
    messages: Sequence[PromptMessage],
    count_tokens: Callable[[Sequence[PromptMessage]], int],
    budget: int,
    max_messages: int | None = None,
) -> list[PromptMessage]:
    """Fit history into ``budget`` tokens (and at most ``max_messages`` non-system messages).

    Everything is returned unchanged when it fits. Otherwise the system messages are kept and turns (a
    turn starts at a user message) are taken from the newest backwards; the first turn that would
    overflow is dropped with everything older. Each turn is counted once (the parts' counts added up:
    linear in the history, where counting every candidate whole was quadratic); the result is counted
    whole at the end, and loses its oldest turns while a model's own count of the whole says more.
    """
    system = [m for m in messages if isinstance(m, SystemMessage)]
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    if count_tokens(list(messages)) <= budget and (max_messages is None or len(rest) <= max_messages):
        return list(messages)
    turns: list[list[PromptMessage]] = []  # newest first, each in order
    used = count_tokens(system) if system else 0
    turn: list[PromptMessage] = []
    kept_messages = 0
    for msg in reversed(rest):
        turn.append(msg)
        if not isinstance(msg, UserMessage):
            continue
        turn.reverse()
        too_many = max_messages is not None and kept_messages + len(turn) > max_messages
        cost = count_tokens(turn)
        if too_many or used + cost > budget:
            break
        turns.append(turn)
        used += cost
        kept_messages += len(turn)
        turn = []
    while turns and count_tokens(system + [m for t in reversed(turns) for m in t]) > budget:
        turns.pop()  # the oldest kept turn
    return system + [m for t in reversed(turns) for m in t]
