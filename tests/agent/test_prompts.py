"""ReAct templates, instruction variables and scratchpad rendering (reference §4, §9.2)."""

from __future__ import annotations

import json

from loopwright.agent.prompts import (
    REACT_CHAT_TEMPLATE,
    REACT_COMPLETION_TEMPLATE,
    ScratchpadStep,
    fill_inputs,
    react_history,
    render_completion_prompt,
    render_historic_text,
    render_react_system,
    render_scratchpad,
)
from loopwright.model.entities import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSchema,
    UserMessage,
)

TOOLS = [
    ToolSchema("tool1", "first", {"type": "object", "properties": {}, "required": []}),
    ToolSchema(
        "tool2", "second", {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    ),
]


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_fill_inputs_cases_from_dify() -> None:
    assert fill_inputs("Hello {{name}}", {"name": "John"}) == "Hello John"
    assert fill_inputs("{{a}}{{b}}", {"a": 1, "b": 2}) == "12"
    assert fill_inputs("{{x}}", None) == "{{x}}"
    assert fill_inputs("Hello {{x}}", {}) == "Hello {{x}}"
    assert fill_inputs("Hello {{x}}", {"x": Unprintable()}) == "Hello {{x}}"


def test_chat_system_prompt_replaces_instruction_tools_and_names() -> None:
    text = render_react_system(REACT_CHAT_TEMPLATE, "Be kind.", TOOLS)
    assert text.startswith("Respond to the human as helpfully and accurately as possible.\n\nBe kind.\n\n")
    assert 'Valid "action" values: "Final Answer" or tool1, tool2' in text
    tools_json = text.split("following tools:\n\n")[1].split("\n\nUse a json blob")[0]
    assert json.loads(tools_json) == [t.to_dict() for t in TOOLS]
    assert text.rstrip().endswith("Format is Action:```$JSON_BLOB```then Observation:.")
    assert "{{" not in text


def test_completion_prompt_fills_every_placeholder_once() -> None:
    text = render_completion_prompt(
        REACT_COMPLETION_TEMPLATE, "I", TOOLS, "Question: old\n\nold answer\n\n", "What is {{tools}}?", "PAD"
    )
    assert text.endswith("Question: old\n\nold answer\n\n\nQuestion: What is {{tools}}?\nPAD\nThought:")
    assert text.count("Question: What is") == 1  # no "Question: Question:" and the query is not re-scanned


def test_scratchpad_rendering_strings() -> None:
    steps = [
        ScratchpadStep(thought="thinking", actions=[('{"action": "a", "action_input": {}}', "observe")]),
        ScratchpadStep(thought="", observation="that reply was broken"),
        ScratchpadStep(final_answer="done"),
    ]
    assert render_scratchpad(steps) == (
        'Thought: thinking\n\nAction: {"action": "a", "action_input": {}}\n\nObservation: observe\n\n'
        "Thought: I am thinking about how to help you\n\nObservation: that reply was broken\n\n"
        "Final Answer: done"
    )


def test_react_history_keeps_every_step_and_the_final_text() -> None:
    history = [
        SystemMessage("old system"),
        UserMessage("q1"),
        AssistantMessage("t1", [ToolCall("c1", "tool1", "{}"), ToolCall("c2", "tool2", '{"q": "x"}')]),
        ToolMessage("o1", "c1"),
        ToolMessage("o2", "c2"),
        AssistantMessage("answer 1"),
        UserMessage("q2"),
        AssistantMessage("answer 2"),
    ]
    out = react_history(history)
    assert [type(m).__name__ for m in out] == [
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    first = out[1].content
    assert first == (
        'Thought: t1\n\nAction: {"action": "tool1", "action_input": {}}\n\nObservation: o1\n\n'
        'Action: {"action": "tool2", "action_input": {"q": "x"}}\n\nObservation: o2\n\n'
        "Final Answer: answer 1"
    )
    assert out[3].content == "Final Answer: answer 2"


def test_historic_text_for_completion() -> None:
    text = render_historic_text([UserMessage("Hello"), AssistantMessage("Hi there")])
    assert text == "Question: Hello\n\nHi there\n\n"
