"""ReAct prompt for small local models.

Dify's ReAct prompt is long and abstract ($JSON_BLOB, $TOOL_NAME); a 135M-parameter model follows
worked examples better than rules. The examples use tools that do not exist here, so the model learns
the pattern without being able to copy a call (the grammar only admits the real tool names). Each
thought opens with the decision ("Tool needed: <name>." or "Tool needed: none."), as this model's
grammar requires, and actions are written on one line, as the scratchpad shows them back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from loopwright.model._local_grammar import DECISION_PREFIX, answering_thought
from loopwright.model.entities import ToolSchema

SMALL_MODEL_REACT_TEMPLATE = """You are a helpful assistant. You answer questions, using a tool when the \
question needs one.
{{instruction}}

Tools:
{{tool_list}}

Example 1. Tools: word_length (counts the letters of a word).
Question: How many letters are in "banana"?
Thought: Tool needed: word_length. The question asks to count letters.

Action: {"action": "word_length", "action_input": {"word": "banana"}}

Observation: 6

Thought: Tool needed: none. The observation 6 answers the question.

Action: {"action": "Final Answer", "action_input": "\\"banana\\" has 6 letters."}

Example 2. Tools: currency_convert (converts an amount of money).
Question: How much is 250 euros in US dollars?
Thought: Tool needed: currency_convert. The question asks to convert 250 EUR to USD.

Action: {"action": "currency_convert", "action_input": {"amount": "250", "from": "EUR", "to": "USD"}}

Observation: 271.50 USD

Thought: Tool needed: none. The observation 271.50 USD answers the question.

Action: {"action": "Final Answer", "action_input": "250 euros are 271.50 US dollars."}

Example 3. Tools: currency_convert.
Question: Hello, who are you?
Thought: Tool needed: none. This is a greeting.

Action: {"action": "Final Answer", "action_input": "Hello! I am an assistant. How can I help you?"}

{{tool_examples}}Valid actions: "Final Answer" or {{tool_names}}. \
When a question needs a tool, use it with arguments \
taken from the question.
"""

SMALL_MODEL_CONTINUE = (
    "Observation: {observation}\n\nIf this observation answers my question, give the Final Answer with it."
)


# The template's place for the offered tools' own worked examples (ToolExample, written by each tool's
# author); the agent's prompt rendering leaves it alone and this model fills it from the round's tools.
TOOL_EXAMPLES = "{{tool_examples}}"
_FIRST_EXAMPLE = 4  # the template's own examples are numbered 1 to 3


def render_tool_examples(tools: Sequence[ToolSchema]) -> str:
    """The tools' worked examples in the form of the template's own: the decision, the action on
    one line, the observation, and the final answer after the thought that quotes it."""
    parts: list[str] = []
    number = _FIRST_EXAMPLE
    for tool in tools:
        for example in tool.examples:
            action = json.dumps({"action": tool.name, "action_input": example.arguments}, ensure_ascii=False)
            answer = json.dumps(
                {"action": "Final Answer", "action_input": example.answer}, ensure_ascii=False
            )
            parts.append(
                f"Example {number}. Tools: {tool.name}.\n"
                f"Question: {example.question}\n"
                f"Thought: {DECISION_PREFIX} {tool.name}. The question needs {tool.name}.\n\n"
                f"Action: {action}\n\n"
                f"Observation: {example.result}\n\n"
                f"Thought: {answering_thought(example.result)}\n\n"
                f"Action: {answer}\n\n"
            )
            number += 1
    return "".join(parts)


# Questions that need no tool, for the choice by the question's likelihood (``_local_choice``): a
# greeting, writing, a fact a model may know.
NO_TOOL_QUESTIONS = (
    "Hello, who are you?",
    "Can you write a short poem about the sea?",
    "What is the capital of France?",
)


def question_context(tool: ToolSchema | None) -> str:
    """The text before the question when the model scores how likely the question is to be one
    that the tool answers (``None``: one that needs no tool): what the tool does and the
    questions of its worked examples, one a line; the question follows on the next line."""
    if tool is None:
        head = "Questions that need no tool (greetings, writing, general knowledge):"
        questions: Sequence[str] = NO_TOOL_QUESTIONS
    else:
        head = f"Questions for the tool {tool.name} ({tool.description.strip()}):"
        questions = [example.question for example in tool.examples]
    return "".join(f"{line}\n" for line in (head, *questions))
