"""Function calling: tools go to the model's API; its tool calls come back as structured deltas."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass

from loopwright.agent._loop import ModelRequest, RoundReply
from loopwright.agent.events import TextDelta, ToolCallRecord
from loopwright.agent.output import OUTPUT_TOOL, OutputSpec
from loopwright.agent.run_state import RunState
from loopwright.model.entities import (
    AssistantMessage,
    LLMChunk,
    PromptMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSchema,
    Usage,
    UserMessage,
)
from loopwright.tools.engine import ToolInvokeMeta


@dataclass(slots=True)
class _PartialCall:
    id: str
    name: str
    arguments: list[str]


class FunctionCallStrategy:
    name = "function-calling"

    def __init__(self, stop: Sequence[str] = ()) -> None:
        self.stop = list(stop)

    def request(self, state: RunState, tools: Sequence[ToolSchema]) -> ModelRequest:
        messages: list[PromptMessage] = []
        if state.instruction:
            messages.append(SystemMessage(state.instruction))
        messages += state.history
        messages.append(state.user_message)
        messages += state.turn
        if state.output is not None:  # the answer comes through the output tool, offered every round
            tools = [*tools, state.output.tool_schema]
        return ModelRequest(messages, tools, self.stop)

    async def read(
        self, chunks: AsyncIterator[LLMChunk], state: RunState
    ) -> AsyncGenerator[TextDelta | RoundReply, None]:
        rnd = state.round
        texts: list[str] = []
        partial: list[_PartialCall] = []
        by_index: dict[int, _PartialCall] = {}
        usage: Usage | None = None
        finish: str | None = None
        async for chunk in chunks:
            if chunk.text:
                texts.append(chunk.text)
                yield TextDelta(rnd, chunk.text)
            if chunk.tool_calls:
                for d in chunk.tool_calls:
                    current = by_index.get(d.index)
                    # Some servers reuse index 0 for every call; a new id means a new call.
                    if current is None or (d.id and current.id and d.id != current.id):
                        current = _PartialCall(d.id or "", d.name or "", [])
                        by_index[d.index] = current
                        partial.append(current)
                    elif d.name and not current.name:
                        current.name = d.name
                    if d.id and not current.id:
                        current.id = d.id
                    if d.arguments:
                        current.arguments.append(d.arguments)
            if chunk.usage is not None:
                usage = chunk.usage
            if chunk.finish_reason is not None:
                finish = chunk.finish_reason
        text = "".join(texts)
        calls = [_to_record(p, rnd, i) for i, p in enumerate(partial)]
        if state.output is not None and any(c.name == OUTPUT_TOOL for c in calls):
            yield _output_reply(state.output, text, calls, usage, finish)
            return
        yield RoundReply(text, calls, usage, answer=None if calls else text, finish_reason=finish)

    def record(self, state: RunState, reply: RoundReply) -> None:
        calls = [ToolCall(c.id, c.name, c.arguments_json()) for c in reply.calls]
        state.turn.append(AssistantMessage(reply.text, calls))
        for c in reply.calls:
            state.turn.append(ToolMessage(c.observation or "", c.id, c.name))

    def record_problem(self, state: RunState, reply: RoundReply, note: str) -> None:
        raise AssertionError("function calling replies are never malformed as a whole")

    def record_output_problem(self, state: RunState, reply: RoundReply, note: str) -> None:
        call = reply.output_call
        if call is None:  # a plain-text answer
            state.turn.append(AssistantMessage(reply.text))
            state.turn.append(UserMessage(note))
            return
        state.turn.append(AssistantMessage(reply.text, [ToolCall(call.id, call.name, call.arguments_json())]))
        state.turn.append(ToolMessage(note, call.id, call.name))


def _output_reply(
    output: OutputSpec, text: str, calls: list[ToolCallRecord], usage: Usage | None, finish: str | None
) -> RoundReply:
    """A reply that called the output tool: its arguments are the answer. Called beside other tools,
    it is left out: those run first, and the model answers again after them."""
    others = [c for c in calls if c.name != OUTPUT_TOOL]
    if others:
        return RoundReply(text, others, usage, finish_reason=finish)
    call = calls[0]
    # arguments that were not a JSON object are kept as the model wrote them, and fail the check
    answer = output.answer_of_tool(call.arguments if call.observation is None else call.raw_arguments or "")
    return RoundReply(
        text, [], usage, answer=answer, answer_streamed=False, finish_reason=finish, output_call=call
    )


def _to_record(p: _PartialCall, rnd: int, index: int) -> ToolCallRecord:
    raw = "".join(p.arguments)
    call_id = p.id or f"call_{rnd}_{index}"
    problem: str | None = None
    try:
        args = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as e:
        args = None
        problem = f"the arguments are not valid JSON ({e.msg} at position {e.pos})"
    if problem is None and not isinstance(args, dict):
        problem = "the arguments are not a JSON object"
    if problem is None and isinstance(args, dict):
        return ToolCallRecord(call_id, p.name, args, raw_arguments=raw)
    observation = f"tool call error: {problem}. Call the tool again with its arguments as one JSON object."
    return ToolCallRecord(call_id, p.name, raw, observation, [], ToolInvokeMeta(0.0, problem, {}))
