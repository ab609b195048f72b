"""Tools' worked examples (ToolExample) and how they land in the small-model prompt (no model needed)."""

from __future__ import annotations

import json
import re

import pytest

from loopwright import tool
from loopwright.agent.prompts import render_react_system
from loopwright.model._local_prompt import (
    SMALL_MODEL_REACT_TEMPLATE,
    TOOL_EXAMPLES,
    question_context,
    render_tool_examples,
)
from loopwright.model.entities import SystemMessage, UserMessage
from loopwright.model.local import _with_tool_examples
from loopwright.tools import ToolEngine, ToolExample
from loopwright.tools.builtin import calculator_tool, current_time_tool

SPLIT = ToolExample(
    question="How do I share 12 apples among 4 people?",
    arguments={"total": 12, "people": 4},
    result="3 each",
    answer="Each person gets 3 apples.",
)


@tool(examples=[SPLIT])
def share(total: int, people: int) -> str:
    """Share things equally.

    Args:
        total: How many things.
        people: Among how many people.
    """
    return f"{total // people} each"


def test_a_tools_examples_travel_with_its_schema_but_not_to_providers() -> None:
    assert share.examples == (SPLIT,)
    assert share.schema.examples == (SPLIT,)
    assert "examples" not in share.schema.to_dict()  # never sent to a provider's tool API
    assert share.configure().schema.examples == (SPLIT,)  # a configured copy keeps them


def test_examples_are_rendered_as_worked_react_steps() -> None:
    text = render_tool_examples([share.schema])
    assert text.startswith("Example 4. Tools: share.\nQuestion: How do I share 12 apples among 4 people?\n")
    assert "Thought: Tool needed: share." in text
    action = json.dumps({"action": "share", "action_input": {"total": 12, "people": 4}})
    assert f"\n\nAction: {action}\n\nObservation: 3 each\n\n" in text
    assert "Thought: Tool needed: none. The observation 3 each answers the question." in text
    answer = json.dumps({"action": "Final Answer", "action_input": "Each person gets 3 apples."})
    assert text.endswith(f"Action: {answer}\n\n")


def test_examples_are_numbered_on_across_tools_and_absent_without_any() -> None:
    text = render_tool_examples([share.schema, calculator_tool().schema, current_time_tool().schema])
    numbers = [int(n) for n in re.findall(r"^Example (\d+)\.", text, re.MULTILINE)]
    assert numbers == list(range(4, 4 + len(numbers))) and len(numbers) >= 3
    assert render_tool_examples([]) == ""


def test_the_small_model_prompt_gets_the_offered_tools_examples() -> None:
    tools = [share.schema]
    # The agent renders the template and leaves the examples' place to the model ...
    system = render_react_system(SMALL_MODEL_REACT_TEMPLATE, "Be brief.", tools)
    assert TOOL_EXAMPLES in system
    messages = [SystemMessage(system), UserMessage("Split 10 pears between 2 friends.")]
    # ... which fills it from the round's tools, before its own "Valid actions" line.
    filled = _with_tool_examples(messages, tools)
    content = filled[0].content  # type: ignore[union-attr]
    assert TOOL_EXAMPLES not in content
    assert content.index("Question: How do I share 12 apples") < content.index("Valid actions:")
    assert filled[1] is messages[1]
    # A last round offers no tools: no examples either.
    assert "How do I share" not in _with_tool_examples(messages, [])[0].content  # type: ignore[union-attr]


def test_the_question_context_holds_the_description_and_example_questions() -> None:
    context = question_context(share.schema)
    assert context == (
        "Questions for the tool share (Share things equally.):\nHow do I share 12 apples among 4 people?\n"
    )
    assert question_context(None).startswith("Questions that need no tool")


async def test_the_built_in_examples_are_what_the_tools_really_do() -> None:
    calculator = calculator_tool()
    assert calculator.examples
    for example in calculator.examples:
        result = await ToolEngine([calculator]).invoke("calculator", dict(example.arguments))
        assert result.observation == example.result
        assert example.result in example.answer or example.result.split(".")[0] in example.answer
    clock = current_time_tool()
    assert clock.examples
    for example in clock.examples:
        now = (await ToolEngine([clock]).invoke("current_time", dict(example.arguments))).observation

        def shape(text: str) -> str:
            return re.sub(r"[A-Z][a-z]+day", "Day", re.sub(r"\d", "0", text))

        assert shape(example.result) == shape(now)  # the same form as a real result


class _Recorder:
    """A model that takes ReAct rounds as data (ReactDecodingModel) and records them."""

    features: frozenset = frozenset()  # type: ignore[type-arg]
    mode = "chat"
    name = "recorder"
    context_size = 4096

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.turns: list = []  # type: ignore[type-arg]

    def count_tokens(self, messages: object) -> int:
        return 1

    def stream(self, messages: object, **kwargs: object):  # type: ignore[no-untyped-def]
        raise AssertionError("ReAct rounds go through stream_react")

    async def stream_react(self, messages, turn, **kwargs):  # type: ignore[no-untyped-def]
        from loopwright.model.entities import LLMChunk

        self.turns.append(turn)
        yield LLMChunk(text=self.replies.pop(0))
        yield LLMChunk(finish_reason="stop")


def _action(name: str, value: object) -> str:
    return "Thought: x\n\nAction: " + json.dumps({"action": name, "action_input": value})


async def test_the_round_after_a_tool_call_says_whether_it_failed() -> None:
    from loopwright import Agent

    model = _Recorder(
        [
            _action("calculator", {"expression": "1 / 0"}),  # fails
            _action("calculator", {"expression": "6 * 7"}),  # works
            _action("Final Answer", "42"),
        ]
    )
    agent = Agent(model=model, tools=[calculator_tool()], strategy="react")  # type: ignore[arg-type]
    result = await agent.run("What is 6 * 7?")
    assert result.text == "42"
    first, after_error, after_result = model.turns
    assert first.observation is None and not first.failed
    assert after_error.observation == "tool invoke error: division by zero" and after_error.failed
    assert after_result.observation == "42" and not after_result.failed


def test_a_copied_argument_is_a_phrase_ending_where_a_clause_ends() -> None:
    from loopwright.model._local_grammar import question_spans

    assert question_spans("What is 7 squared?") == [
        "What is 7 squared",
        "is 7 squared",
        "7 squared",
        "squared",
    ]
    spans = question_spans("I have 3 boxes. Calculate (15 + 27) * 3.")
    assert "(15 + 27) * 3" in spans and "3 boxes" in spans
    assert question_spans("I have 3 boxes. Calculate (15 + 27) * 3.", "clause") == [
        "I have 3 boxes",
        "Calculate (15 + 27) * 3",
    ]
    assert "27) * 3" not in spans  # a closing bracket without its opening one
    assert "15 + 27" not in spans  # not where the clause ends


def test_from_question_parameters_are_copied_on_the_first_call_only() -> None:
    pytest.importorskip("llama_cpp")  # the grammar uses llama.cpp's schema converter
    from loopwright.model._local_grammar import react_grammar

    calculator = calculator_tool().schema
    assert calculator.from_question == {"expression": "expression"}
    copying = react_grammar([calculator], "calculator", question="What is 12% of 250?")
    assert '"\\"What is 12% of 250\\""' in copying and '"\\"12% of 250\\""' not in copying
    free = react_grammar([calculator], "calculator")
    assert '"\\"12% of 250\\""' not in free
    # A parameter with a default keeps it as a choice when the question names no place.
    clock = react_grammar([current_time_tool().schema], "current_time", question="What is today's date?")
    assert '"\\"UTC\\""' in clock and '"\\"today\'s date\\""' in clock
    # A parameter not named in from_question keeps its schema.
    assert '"\\"12% of 250\\""' not in react_grammar([share.schema], "share", question="What is 12% of 250?")


def test_a_place_named_in_the_question_is_its_time_zone() -> None:
    pytest.importorskip("llama_cpp")  # the grammar uses llama.cpp's schema converter
    from loopwright.model._local_grammar import react_grammar

    clock = current_time_tool().schema
    assert clock.from_question == {"timezone": "place"}
    berlin = react_grammar([clock], "current_time", question="Give me the current time in Berlin.")
    # The zone is the only choice: neither the default (UTC) nor the question's words around the city.
    assert '"\\"Europe/Berlin\\""' in berlin
    assert '"\\"UTC\\""' not in berlin and "current time in Berlin" not in berlin
    two = react_grammar([clock], "current_time", question="Is it later in Tokyo or in Los Angeles?")
    assert '"\\"Asia/Tokyo\\""' in two and '"\\"America/Los_Angeles\\""' in two


def test_after_a_short_observation_the_answer_must_state_it() -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    from loopwright.model._local_grammar import react_grammar

    grammar = react_grammar([calculator_tool().schema], "auto", observation='49 "exactly"')
    # the result whole, in one of two sentences, and nothing else around it
    (rule,) = [line for line in grammar.splitlines() if line.startswith("answer-stating ::= ")]
    assert rule == (
        'answer-stating ::= "\\"It is 49 \\\\\\"exactly\\\\\\".\\"" | '
        '"\\"The answer is 49 \\\\\\"exactly\\\\\\".\\""'
    )
    llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)  # llama.cpp reads it
    # A long observation (or none) leaves the answer free.
    assert "answer-stating" not in react_grammar([calculator_tool().schema], "auto", observation="x" * 80)


def test_an_action_whose_arguments_leave_no_choice_is_listed_whole() -> None:
    pytest.importorskip("llama_cpp")  # the grammar uses llama.cpp's schema converter
    from loopwright.model._local_grammar import action_replies

    calculator, clock = calculator_tool().schema, current_time_tool().schema
    (one,) = action_replies(calculator, "Use the calculator to compute 17 * 23.") or []
    assert one.startswith("\n\nAction: ")
    assert json.loads(one.partition("Action: ")[2]) == {
        "action": "calculator",
        "action_input": {"expression": "Use the calculator to compute 17 * 23"},
    }
    assert action_replies(clock, "Give me the current time in Berlin.") == [
        '\n\nAction: {"action": "current_time", "action_input": {"timezone": "Europe/Berlin"}}'
    ]
    # A choice left to the model: UTC or the question's words, when it names no place.
    assert len(action_replies(clock, "What is today's date?") or []) > 1
    # An expression the model writes (a word problem), or a parameter not taken from the question.
    assert action_replies(calculator, "I have 3 boxes of 48 eggs. How many eggs is that?") is None
    assert action_replies(share.schema, "What is 12% of 250?") is None


def test_an_answer_sentence_after_a_number_is_listed_with_its_subjects_and_units() -> None:
    pytest.importorskip("llama_cpp")
    from loopwright.model._local_grammar import answer_sentences

    calculator = calculator_tool().schema
    fixed = {"observation": "144", "subjects": ["3 boxes of 48 eggs"], "units": ["eggs"]}
    replies = answer_sentences([calculator], "none", **fixed)  # type: ignore[arg-type]
    assert replies is not None
    assert [json.loads(r.partition("Action: ")[2])["action_input"] for r in replies] == [
        "3 boxes of 48 eggs is 144.",
        "3 boxes of 48 eggs is 144 eggs.",
    ]
    assert answer_sentences([calculator], "auto", **fixed) is None  # a tool may still be called
    # a result that is not a number: stated as it is, in the grammar's two sentences
    friday = answer_sentences([calculator], "none", observation="Friday", subjects=["it"])
    assert [json.loads(r.partition("Action: ")[2])["action_input"] for r in friday or []] == [
        "It is Friday.",
        "The answer is Friday.",
    ]
    assert answer_sentences([calculator], "none", observation="x" * 80) is None  # too long to state
