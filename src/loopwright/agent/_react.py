"""ReAct: tools are described in the prompt; the model writes Thought/Action text that the streaming
parser reads. Chat models get a system prompt plus messages, completion models one prompt."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any, Literal

from cachetools import LRUCache

from loopwright.agent._loop import ModelRequest, RoundReply
from loopwright.agent.events import TextDelta, ToolCallRecord
from loopwright.agent.prompts import (
    CONTINUE,
    REACT_CHAT_TEMPLATE,
    REACT_COMPLETION_TEMPLATE,
    ScratchpadStep,
    action_json,
    react_history,
    render_completion_prompt,
    render_historic_text,
    render_react_system,
    render_scratchpad,
)
from loopwright.agent.react_parser import Action, DifyParserError, is_final_answer, new_parser
from loopwright.agent.run_state import RunState
from loopwright.model.base import ReactTurn
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

ParserMode = Literal["robust", "dify"]


class ReactStrategy:
    """``mode`` is the model's mode (chat or completion); ``parser_mode="dify"`` also keeps Dify's
    runner rules: only the last action of a reply runs, and only an exact "final answer" ends."""

    name = "react"

    def __init__(
        self,
        mode: Literal["chat", "completion"] = "chat",
        *,
        parser_mode: ParserMode = "robust",
        stop: Sequence[str] = ("Observation",),
        template: str | None = None,
        continue_message: str | None = None,
    ) -> None:
        self.mode = mode
        self.parser_mode = parser_mode
        self.stop = list(stop)
        self.template = template or (REACT_CHAT_TEMPLATE if mode == "chat" else REACT_COMPLETION_TEMPLATE)
        # Dify sends the literal "continue"; a model may bring its own text, where "{observation}"
        # stands for the last step's observations (small models act on what the last turn says).
        self.continue_message = continue_message or CONTINUE
        # system prompts by (instruction, tool list): instructions vary with inputs, so the least
        # recently used are dropped
        self._systems: LRUCache[tuple[str, int], tuple[Sequence[ToolSchema], str]] = LRUCache(64)

    def request(self, state: RunState, tools: Sequence[ToolSchema]) -> ModelRequest:
        if self.mode == "completion":
            prompt = render_completion_prompt(
                self.template,
                state.instruction,
                tools,
                self._history_text(state),
                state.query,
                render_scratchpad(state.scratchpad),
            )
            turn = _turn(state, tools, _observation(state))
            return ModelRequest([UserMessage(prompt)], (), self.stop, turn)
        system = self._system_prompt(state.instruction, tools)
        messages: list[PromptMessage] = [SystemMessage(system), *self._history(state), state.user_message]
        observation = _observation(state)
        if observation is not None:
            messages.append(AssistantMessage(render_scratchpad(state.scratchpad)))
            messages.append(UserMessage(self._continue(observation)))
        # Tools travel in the prompt; the API never sees them.
        turn = _turn(state, tools, observation)
        return ModelRequest(messages, (), self.stop, turn)

    async def read(
        self, chunks: AsyncIterator[LLMChunk], state: RunState
    ) -> AsyncGenerator[TextDelta | RoundReply, None]:
        rnd = state.round
        parser = new_parser(self.parser_mode)
        texts: list[str] = []
        actions: list[Action] = []
        usage: Usage | None = None
        finish: str | None = None
        error: str | None = None

        def step(events: list[str | Action]) -> list[TextDelta]:
            deltas = []
            for ev in events:
                if type(ev) is str:
                    texts.append(ev)
                    deltas.append(TextDelta(rnd, ev))
                else:
                    actions.append(ev)  # type: ignore[arg-type]
            return deltas

        async for chunk in chunks:
            if chunk.usage is not None:
                usage = chunk.usage
            if chunk.finish_reason is not None:
                finish = chunk.finish_reason
            if chunk.text and error is None:
                events, error = _parse(parser.feed, chunk.text)
                for delta in step(events):
                    yield delta
        if error is None:
            events, error = _parse(parser.flush)
            for delta in step(events):
                yield delta
        problem = error or ("; ".join(parser.problems) if parser.problems else None)
        reply = self._reply("".join(texts), actions, usage, problem, rnd)
        reply.finish_reason = finish
        yield reply

    def _reply(
        self, text: str, actions: list[Action], usage: Usage | None, problem: str | None, rnd: int
    ) -> RoundReply:
        if self.parser_mode == "dify":
            actions = actions[-1:]  # Dify runs only the last action of a reply
            finals = [a for a in actions if a.name.lower() == "final answer"]
        else:
            finals = [a for a in actions if is_final_answer(a.name)]
        tool_actions = [a for a in actions if a not in finals]
        if tool_actions:
            calls = [
                ToolCallRecord(f"call_{uuid.uuid4().hex[:24]}", a.name, _tool_input(a.input))
                for a in tool_actions
            ]
            return RoundReply(text, calls, usage)
        if finals:
            return RoundReply(text, [], usage, answer=_answer_text(finals[-1].input), answer_streamed=False)
        if problem is not None:
            return RoundReply(text, [], usage, problem=problem)
        # Plain text with no attempt at an action is the answer (Dify saves an empty answer here).
        return RoundReply(text, [], usage, answer=text.strip())

    def record(self, state: RunState, reply: RoundReply) -> None:
        failed = bool(reply.calls) and all(c.meta is not None and c.meta.error for c in reply.calls)
        step = ScratchpadStep(thought=reply.text.strip(), failed=failed)
        calls: list[ToolCall] = []
        for c in reply.calls:
            step.actions.append((action_json(c.name, c.arguments), c.observation or ""))
            calls.append(ToolCall(c.id, c.name, c.arguments_json()))
        state.scratchpad.append(step)
        state.turn.append(AssistantMessage(reply.text.strip(), calls))
        state.turn.extend(ToolMessage(c.observation or "", c.id, c.name) for c in reply.calls)

    def record_problem(self, state: RunState, reply: RoundReply, note: str) -> None:
        state.scratchpad.append(ScratchpadStep(thought=reply.text.strip(), observation=note, failed=True))

    def record_output_problem(self, state: RunState, reply: RoundReply, note: str) -> None:
        # The model sees the answer it gave, as an action, with the errors as its observation.
        answer = reply.answer if reply.answer is not None else reply.text
        step = ScratchpadStep(thought=reply.text.strip(), failed=True)
        try:
            shown: Any = json.loads(answer)
        except json.JSONDecodeError:
            shown = answer
        step.actions.append((action_json("Final Answer", shown), note))
        state.scratchpad.append(step)

    def _continue(self, observation: str) -> str:
        if "{observation}" not in self.continue_message:
            return self.continue_message
        return self.continue_message.replace("{observation}", observation)

    def _system_prompt(self, instruction: str, tools: Sequence[ToolSchema]) -> str:
        # Keyed by the identity of the tool list (the engine's, stable across runs); the entry keeps a
        # reference to the list so that identity cannot be reused by another list while cached.
        key = (instruction, id(tools))
        hit = self._systems.get(key)
        if hit is None:
            hit = self._systems[key] = (tools, render_react_system(self.template, instruction, tools))
        return hit[1]

    @staticmethod
    def _history(state: RunState) -> list[PromptMessage]:
        """The history as the prompt shows it, made once per run."""
        if state.react_history is None:
            state.react_history = react_history(state.history)
        return state.react_history

    def _history_text(self, state: RunState) -> str:
        if state.react_history_text is None:
            state.react_history_text = render_historic_text(self._history(state))
        return state.react_history_text


def _parse(call: Callable[..., list[str | Action]], *args: str) -> tuple[list[str | Action], str | None]:
    """Parser output, and in dify mode the error Dify would raise (with the text it gave first)."""
    try:
        return call(*args), None
    except DifyParserError as e:
        return e.events, f"the action could not be read ({e})"


def _tool_input(value: Any) -> dict[str, Any] | str:
    """A tool input as the engine takes it: a dict, or a string (tried as JSON first, as Dify does)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            return value
        return decoded if isinstance(decoded, dict) else value
    return json.dumps(value, ensure_ascii=False)


def _answer_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _turn(state: RunState, tools: Sequence[ToolSchema], observation: str | None) -> ReactTurn:
    arguments = _last_arguments(state) if observation is not None else ()
    schema, failed = _output_schema(state), _failed(state)
    return ReactTurn(tools, observation, schema, failed, question=state.query, arguments=arguments)


def _last_arguments(state: RunState) -> tuple[str, ...]:
    """The string arguments of the last step's tool calls (its actions, as the scratchpad keeps them)."""
    out: list[str] = []
    for action, _ in state.scratchpad[-1].actions:
        try:
            given = json.loads(action).get("action_input")
        except (ValueError, AttributeError):
            continue
        values = given.values() if isinstance(given, dict) else [given]
        out.extend(v for v in values if isinstance(v, str))
    return tuple(out)


def _output_schema(state: RunState) -> dict[str, Any] | None:
    return state.output.schema if state.output is not None else None


def _failed(state: RunState) -> bool:
    """Whether the last step failed (all its tool calls, or the reply before it could not be read)."""
    return bool(state.scratchpad) and state.scratchpad[-1].failed


def _observation(state: RunState) -> str | None:
    """What the last step's tools returned (one per line), or its corrective note; ``None`` before
    the first step, when the turn asks the user's question."""
    if not state.scratchpad:
        return None
    step = state.scratchpad[-1]
    return "\n".join(obs for _, obs in step.actions) or step.observation
