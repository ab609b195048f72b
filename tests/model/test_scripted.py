"""ScriptedModel: deterministic replay of scripted replies, as a real streaming model would send them."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import pytest

from loopwright.errors import UserInputError
from loopwright.model import (
    AssistantMessage,
    LLMChunk,
    Model,
    ModelFeature,
    ModelMode,
    PromptMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSchema,
    Usage,
    UserMessage,
    estimate_tokens,
)
from loopwright.model.scripted import UndeliverableScriptError
from loopwright.testing import Reply, ScriptedModel, ScriptExhaustedError

HELLO = [UserMessage("hello")]
FC = ["tool-call"]  # the feature that makes an agent use function calling, and the script's calls


async def collect(
    model: ScriptedModel,
    messages: Sequence[PromptMessage] = HELLO,
    *,
    tools: Sequence[ToolSchema] = (),
    stop: Sequence[str] = (),
    params: dict[str, Any] | None = None,
) -> list[LLMChunk]:
    return [c async for c in model.stream(messages, tools=tools, stop=stop, params=params)]


def text_of(chunks: list[LLMChunk]) -> str:
    return "".join(c.text for c in chunks)


def assembled_calls(chunks: list[LLMChunk]) -> dict[int, dict[str, Any]]:
    """Tool-call deltas merged by index, as an agent loop does."""
    calls: dict[int, dict[str, Any]] = {}
    for c in chunks:
        for d in c.tool_calls or []:
            call = calls.setdefault(d.index, {"id": None, "name": None, "arguments": ""})
            if d.id:
                call["id"] = d.id
            if d.name:
                call["name"] = d.name
            call["arguments"] += d.arguments
    return calls


# --- text -----------------------------------------------------------------------------------------------


async def test_text_is_split_into_chunks_of_chunk_size_that_rejoin() -> None:
    text = "The quick brown fox jumps over the lazy dog."
    model = ScriptedModel([Reply.text(text)], chunk_size=5)
    chunks = await collect(model)
    text_chunks = [c.text for c in chunks if c.text]
    assert "".join(text_chunks) == text
    assert all(len(t) == 5 for t in text_chunks[:-1])
    assert 1 <= len(text_chunks[-1]) <= 5
    assert len(text_chunks) == -(-len(text) // 5)


async def test_a_plain_string_in_the_script_is_a_text_reply() -> None:
    model = ScriptedModel(["hi there"], chunk_size=3)
    chunks = await collect(model)
    assert [c.text for c in chunks if c.text] == ["hi ", "the", "re"]


async def test_chunk_size_one_streams_character_by_character() -> None:
    model = ScriptedModel(["abc"], chunk_size=1)
    assert [c.text for c in await collect(model) if c.text] == ["a", "b", "c"]


def test_chunk_size_below_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="chunk_size"):
        ScriptedModel(["x"], chunk_size=0)


async def test_stop_words_cut_the_text_before_the_first_stop_word() -> None:
    reply = 'Thought: use the tool\nAction: {"action": "x"}\nObservation: made up\nFinal Answer: 42'
    model = ScriptedModel([reply, reply, reply], chunk_size=4)
    assert text_of(await collect(model, stop=["Observation"])) == (
        'Thought: use the tool\nAction: {"action": "x"}\n'
    )
    # The earliest occurrence wins, whatever the order of the stop list.
    assert text_of(await collect(model, stop=["Final Answer", "Action:"])) == "Thought: use the tool\n"
    # A stop word that never occurs, or an empty one, changes nothing.
    assert text_of(await collect(model, stop=["", "nowhere"])) == reply


async def test_stop_word_at_the_start_gives_no_text() -> None:
    model = ScriptedModel(["Observation: x"])
    chunks = await collect(model, stop=["Observation"])
    assert text_of(chunks) == ""
    assert chunks[-1].usage is not None


# --- tool calls ---------------------------------------------------------------------------------------


async def test_tool_calls_without_stream_feature_come_whole_in_one_chunk() -> None:
    model = ScriptedModel(
        [Reply.tool_calls(("search", {"q": "weather in Paris"}), ("calculator", {"expression": "2+2"}))],
        features=[ModelFeature.TOOL_CALL, ModelFeature.MULTI_TOOL_CALL],
        chunk_size=3,
    )
    chunks = await collect(model)
    with_calls = [c for c in chunks if c.tool_calls]
    assert len(with_calls) == 1
    deltas = with_calls[0].tool_calls
    assert deltas is not None
    assert [(d.index, d.name) for d in deltas] == [(0, "search"), (1, "calculator")]
    assert json.loads(deltas[0].arguments) == {"q": "weather in Paris"}
    assert json.loads(deltas[1].arguments) == {"expression": "2+2"}
    assert all(d.id for d in deltas)
    assert deltas[0].id != deltas[1].id
    assert chunks[-1].finish_reason == "tool_calls"


async def test_tool_calls_with_stream_feature_come_as_header_then_argument_fragments() -> None:
    args = {"query": "a fairly long query string", "limit": 10, "tags": ["x", "y"]}
    model = ScriptedModel(
        [Reply.tool_calls(("search", args), ("other", {"a": 1}))],
        features=["tool-call", "stream-tool-call"],
        chunk_size=4,
    )
    chunks = await collect(model)
    call_chunks = [c for c in chunks if c.tool_calls]
    deltas = [d for c in call_chunks for d in c.tool_calls or []]
    first = [d for d in deltas if d.index == 0]
    # The first fragment names the call; the rest carry only argument text.
    assert first[0].id and first[0].name == "search" and first[0].arguments == ""
    assert all(d.id is None and d.name is None for d in first[1:])
    assert len(first) > 3
    assert all(1 <= len(d.arguments) <= 4 for d in first[1:])
    calls = assembled_calls(chunks)
    assert json.loads(calls[0]["arguments"]) == args
    assert calls[0]["arguments"] == json.dumps(args, ensure_ascii=False)
    assert calls[1]["name"] == "other"
    assert json.loads(calls[1]["arguments"]) == {"a": 1}
    # Calls are streamed one after the other, never interleaved.
    indexes = [d.index for d in deltas]
    assert indexes == sorted(indexes)


async def test_explicit_call_ids_are_used() -> None:
    for features in (["tool-call"], ["tool-call", "stream-tool-call"]):
        model = ScriptedModel(
            [Reply.tool_calls(("a", {}, "call_abc"), ("b", {"x": 1}, "call_def"))], features=features
        )
        calls = assembled_calls(await collect(model))
        assert [calls[0]["id"], calls[1]["id"]] == ["call_abc", "call_def"]


async def test_generated_call_ids_are_unique_across_replies() -> None:
    model = ScriptedModel([Reply.tool_calls(("a", {})), Reply.tool_calls(("a", {}))], features=FC)
    first = assembled_calls(await collect(model))[0]["id"]
    second = assembled_calls(await collect(model))[0]["id"]
    assert first and second and first != second


@pytest.mark.parametrize("features", [["tool-call"], ["tool-call", "stream-tool-call"]])
async def test_string_arguments_are_passed_verbatim(features: list[str]) -> None:
    malformed = "{'q': 'single quotes', trailing: 1,"
    model = ScriptedModel([Reply.tool_calls(("search", malformed))], features=features, chunk_size=5)
    assert assembled_calls(await collect(model))[0]["arguments"] == malformed


async def test_non_ascii_arguments_are_not_escaped() -> None:
    model = ScriptedModel([Reply.tool_calls(("translate", {"text": "日本語"}))], features=FC)
    assert assembled_calls(await collect(model))[0]["arguments"] == '{"text": "日本語"}'


async def test_text_comes_before_tool_calls_in_one_reply() -> None:
    model = ScriptedModel(
        [Reply.tool_calls(("a", {"x": 1}), text="Let me check.")], features=FC, chunk_size=4
    )
    chunks = await collect(model)
    first_call = next(i for i, c in enumerate(chunks) if c.tool_calls)
    assert text_of(chunks[:first_call]) == "Let me check."
    assert text_of(chunks[first_call:]) == ""


# --- usage and finish ---------------------------------------------------------------------------------


async def test_usage_comes_on_the_last_chunk_only() -> None:
    model = ScriptedModel(["some reply text"], chunk_size=4)
    chunks = await collect(model, [SystemMessage("be brief"), UserMessage("a question of some length")])
    assert chunks[-1].usage is not None
    assert all(c.usage is None for c in chunks[:-1])
    usage = chunks[-1].usage
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert chunks[-1].finish_reason == "stop"


async def test_given_usage_is_returned_as_given() -> None:
    given = Usage(prompt_tokens=11, completion_tokens=22, total_tokens=33, currency="EUR", latency=0.1)
    model = ScriptedModel(
        [Reply.text("ok", usage=given), Reply.tool_calls(("a", {}), usage=given)], features=FC
    )
    for _ in range(2):
        chunks = await collect(model)
        assert chunks[-1].usage == Usage(
            prompt_tokens=11, completion_tokens=22, total_tokens=33, currency="EUR", latency=0.1
        )


# --- requests ---------------------------------------------------------------------------------------------


async def test_requests_record_messages_tools_stop_and_params() -> None:
    schema = ToolSchema("search", "Search", {"type": "object", "properties": {}, "required": []})
    messages: list[PromptMessage] = [
        SystemMessage("sys"),
        UserMessage("q1"),
        AssistantMessage("", [ToolCall("c1", "search", "{}")]),
    ]
    model = ScriptedModel(["a", "b"])
    await collect(model, messages, tools=[schema], stop=["Observation"], params={"temperature": 0.2})
    messages.append(UserMessage("later"))  # the recorded request is a snapshot
    await collect(model)
    assert len(model.requests) == 2
    first, second = model.requests
    assert [m.role for m in first.messages] == ["system", "user", "assistant"]
    assert first.tools == [schema]
    assert first.stop == ["Observation"]
    assert first.params == {"temperature": 0.2}
    assert second.messages == HELLO
    assert (second.tools, second.stop, second.params) == ([], [], {})


# --- exhaustion and errors --------------------------------------------------------------------------------


async def test_calling_beyond_the_script_raises_a_clear_error() -> None:
    model = ScriptedModel(["only one"])
    assert model.remaining == 1
    await collect(model)
    assert model.remaining == 0
    with pytest.raises(ScriptExhaustedError, match=r"no reply left for call #2.*script has 1"):
        await collect(model)
    assert len(model.requests) == 1


async def test_empty_script_raises_on_first_call() -> None:
    with pytest.raises(ScriptExhaustedError, match="#1"):
        await collect(ScriptedModel([]))


async def test_reply_error_raises_the_exception_while_streaming() -> None:
    boom = ConnectionError("provider down")
    model = ScriptedModel([Reply.error(boom), "recovered"])
    with pytest.raises(ConnectionError, match="provider down") as info:
        await collect(model)
    assert info.value.__traceback__ is not None
    assert text_of(await collect(model)) == "recovered"


async def test_a_scripted_error_keeps_no_traceback_of_the_runs_that_raised_it() -> None:
    # Raising the script's own instance would chain every run's frames (and their messages) onto it
    # for as long as the script lives: a long test or bench held gigabytes that way.
    boom = ConnectionError("provider down")
    model = ScriptedModel([Reply.error(boom)], cycle=True)
    for _ in range(3):
        with pytest.raises(ConnectionError):
            await collect(model)
    assert boom.__traceback__ is None


# --- timing -----------------------------------------------------------------------------------------------


async def test_delay_applies_per_chunk() -> None:
    delay = 0.02
    model = ScriptedModel(["x" * 20], chunk_size=4, delay=delay)
    start = time.monotonic()
    chunks = await collect(model)
    elapsed = time.monotonic() - start
    assert len([c for c in chunks if c.text]) == 5
    assert elapsed >= 5 * delay - 1e-3  # asyncio may wake up to its clock resolution early
    assert elapsed < 5.0  # a generous ceiling: it only catches a delay applied per character


async def test_no_delay_is_fast() -> None:
    model = ScriptedModel(["x" * 2000], chunk_size=1)
    start = time.monotonic()
    await collect(model)
    assert time.monotonic() - start < 5.0  # 2,000 chunks without a delay take milliseconds


# --- protocol and token counts --------------------------------------------------------------------------


def test_scripted_model_satisfies_the_model_protocol() -> None:
    model = ScriptedModel([], features=["tool-call"], mode="completion")
    assert isinstance(model, Model)
    assert model.features == frozenset({ModelFeature.TOOL_CALL})
    assert model.mode is ModelMode.COMPLETION


@pytest.mark.parametrize("features", [[], ["vision", "agent-thought"]])
def test_a_script_with_tool_calls_needs_a_tool_call_feature(features: list[str]) -> None:
    """Without one, an agent would run the script with ReAct, which reads only text: the calls would be
    dropped and the answer would be ''. The script is refused at once, naming the fix."""
    script = ["Thinking.", Reply.tool_calls(("add", {"a": 1}))]
    with pytest.raises(UndeliverableScriptError, match=r'reply #2 .*features=\["tool-call"\]') as caught:
        ScriptedModel(script, features=features)
    assert isinstance(caught.value, UserInputError) and isinstance(caught.value, ValueError)


@pytest.mark.parametrize("feature", ["tool-call", "multi-tool-call", "stream-tool-call"])
def test_any_tool_call_feature_delivers_a_script_with_tool_calls(feature: str) -> None:
    model = ScriptedModel([Reply.tool_calls(("add", {"a": 1}))], features=[feature])
    assert model.remaining == 1


async def test_with_the_feature_an_agent_runs_the_scripted_call() -> None:
    """What the refused script does once the model declares the feature: the agent calls the tool."""
    from loopwright import Agent, tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedModel([Reply.tool_calls(("add", {"a": 2, "b": 3})), "It is 5."], features=FC)
    result = await Agent(model=model, tools=[add]).run("2 + 3?")
    assert result.text == "It is 5."
    assert [m.content for m in result.messages if isinstance(m, ToolMessage)] == ["5"]


def test_unknown_feature_is_rejected() -> None:
    with pytest.raises(ValueError):
        ScriptedModel([], features=["telepathy"])


def test_estimate_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("hello") == 1
    assert estimate_tokens("hello world") == 2
    assert estimate_tokens("Hello, world!") == 4
    sentence = "The quick brown fox jumps over the lazy dog, again and again."
    words = len(sentence.split())
    assert words <= estimate_tokens(sentence) <= 2 * words
    # Long words and long numbers take several tokens.
    assert estimate_tokens("internationalization") > 1
    assert estimate_tokens("1234567890") > 1
    # More text, more tokens.
    assert estimate_tokens(sentence * 10) == 10 * estimate_tokens(sentence)


def test_count_tokens() -> None:
    model = ScriptedModel([])
    assert model.count_tokens([]) == 0
    short = model.count_tokens([UserMessage("hi")])
    longer = model.count_tokens([UserMessage("hi " * 100)])
    assert 0 < short < longer
    with_call = model.count_tokens(
        [UserMessage("hi"), AssistantMessage("", [ToolCall("c", "search", '{"q": "paris weather"}')])]
    )
    assert with_call > short


async def test_generated_call_ids_are_unique_when_streams_are_consumed_later() -> None:
    model = ScriptedModel([Reply.tool_calls(("a", {})), Reply.tool_calls(("a", {}))], features=FC)
    first_stream = model.stream(HELLO)
    second_stream = model.stream(HELLO)
    first = assembled_calls([c async for c in first_stream])[0]["id"]
    second = assembled_calls([c async for c in second_stream])[0]["id"]
    assert first != second
