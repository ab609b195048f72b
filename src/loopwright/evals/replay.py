"""Replay: the model replies recorded with a case, given back in order, so a set runs with no model.

An app's agent is built once per configuration and shared by every run, so the model it holds cannot
be one case's script. :class:`ReplayModel` stands in for the app's model and hands each call to the
script of the case being run — found through a context variable that :func:`replaying` sets in the
case's task (a run's task is created inside it, so it inherits it). The script is a
:class:`~loopwright.model.scripted.ScriptedModel` of the case's replies, every turn's in order (one
conversation is one script). The tools still run.

:func:`replies_of` turns a stored message's agent log back into the replies that produced it.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from loopwright.config import ScriptReply, ToolCallSpec
from loopwright.model.base import ModelError, estimate_message_tokens
from loopwright.model.entities import TOOL_CALL_FEATURES, LLMChunk, ModelMode, PromptMessage, ToolSchema
from loopwright.model.scripted import Reply, ScriptedModel
from loopwright.model.settings import ModelSettings
from loopwright.tools.base import InvokeFn, TextMessage, Tool, ToolContext, ToolOutput

if TYPE_CHECKING:
    from loopwright.evals.schema import ToolOutputRecord

_SCRIPT: ContextVar[ScriptedModel | None] = ContextVar("loopwright_eval_replay", default=None)
_TOOL_OUTPUTS: ContextVar[Mapping[str, deque[str]] | None] = ContextVar(
    "loopwright_eval_tool_outputs", default=None
)


class NoRecordingError(ModelError):
    """A replayed run called the model with no recorded reply left (or none recorded at all): the app
    now takes more rounds than the conversation that was recorded."""


class ReplayModel:
    """The model of every app in a replayed run (see the module's docstring). It declares tool calls,
    so an app on ``auto`` uses function calling; an app on ``react`` gets its replies as ReAct text."""

    mode = ModelMode.CHAT
    features = TOOL_CALL_FEATURES

    def __init__(self, name: str = "replay", context_size: int = 32768) -> None:
        self.name = name
        self.context_size = context_size

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
        script = _SCRIPT.get()
        if script is None:
            raise NoRecordingError("a replayed run has no recorded replies: record the case first")
        if script.remaining <= 0:
            raise NoRecordingError(
                f"the recorded replies ran out after {len(script.replies)}: the app takes more model "
                "rounds than the recorded conversation did"
            )
        return script.stream(messages, tools=tools, stop=stop, params=params)


@contextmanager
def replaying(
    replies: Sequence[ScriptReply], *, react: bool = False, tool_outputs: Sequence[ToolOutputRecord] = ()
) -> Iterator[ScriptedModel]:
    """Within this block (and the tasks started in it), :class:`ReplayModel` plays ``replies``, and
    the tools :func:`replayed_tools` wrapped give back ``tool_outputs`` (each tool its own, in order)."""
    queues: dict[str, deque[str]] = defaultdict(deque)
    for record in tool_outputs:
        queues[record.tool].append(record.output)
    script = ScriptedModel(
        [react_reply(r) if react else r.to_reply() for r in replies],
        features=TOOL_CALL_FEATURES,
        chunk_size=1 << 16,  # one chunk per reply: nobody watches it stream
        record=0,
        name="replay",
    )
    token = _SCRIPT.set(script)
    outputs = _TOOL_OUTPUTS.set(queues)
    try:
        yield script
    finally:
        _TOOL_OUTPUTS.reset(outputs)
        _SCRIPT.reset(token)


def replayed_tools(tools: Sequence[Tool]) -> list[Tool]:
    """``tools`` that give back the outputs recorded for them in a :func:`replaying` block (until those
    run out: then they run), and run as ever outside one. Never cached: each case has its own."""
    return [replace(t, invoke=_replayed(t.name, t.invoke), cache_ttl=None) for t in tools]


def _replayed(name: str, real: InvokeFn) -> InvokeFn:
    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        recorded = _TOOL_OUTPUTS.get()
        queue = recorded.get(name) if recorded is not None else None
        if queue:
            yield TextMessage(queue.popleft())
            return
        async for output in real(args, ctx):
            yield output

    return invoke


def react_reply(reply: ScriptReply) -> Reply:
    """A recorded reply as the ReAct text an app on the ``react`` strategy reads: its first tool call
    as an action (a ReAct round makes one), else the text as the final answer."""
    if "error" in reply.model_fields_set:
        return reply.to_reply()
    if not reply.tool_calls:
        return Reply.text(f"Final Answer: {reply.text}")
    name, args = reply.tool_calls[0][0], reply.tool_calls[0][1]
    blob = json.dumps({"action": name, "action_input": args}, ensure_ascii=False)
    thought = reply.text.strip() or "I should use a tool."
    return Reply.text(f"Thought: {thought}\nAction:\n```json\n{blob}\n```\n")


def replies_of(agent_log: Mapping[str, Any], answer: str) -> list[ScriptReply]:
    """The model replies behind a stored message (its agent log, app.admin.agent_log's shape): one per
    round — its text and its tool calls — and the final answer as the last, text-only one."""
    replies: list[ScriptReply] = []
    iterations = list(agent_log.get("iterations", []))
    for it in iterations:
        calls: list[ToolCallSpec] = [
            (str(c["tool_name"]), _args(c.get("tool_input"))) for c in it.get("tool_calls", [])
        ]
        if calls:
            replies.append(ScriptReply(text=it.get("thought", ""), tool_calls=calls))
    last = iterations[-1] if iterations else None
    final = (
        last["thought"] if last is not None and not last.get("tool_calls") and last.get("thought") else answer
    )
    replies.append(ScriptReply(text=final))
    return replies


def _args(value: Any) -> dict[str, Any] | str:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return {}
