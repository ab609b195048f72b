"""ReAct prompt templates and their rendering (Dify's English templates, reference §4).

Rendering is plain ``str.replace`` on module-level constants: nothing is compiled per run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopwright.model.entities import (
    AssistantMessage,
    PromptMessage,
    SystemMessage,
    ToolMessage,
    ToolSchema,
    UserMessage,
    content_text,
)

_REACT_BODY = """Respond to the human as helpfully and accurately as possible.

{{instruction}}

You have access to the following tools:

{{tools}}

Use a json blob to specify a tool by providing an action key (tool name) and an action_input key (tool input).
Valid "action" values: "Final Answer" or {{tool_names}}

Provide only ONE action per $JSON_BLOB, as shown:

```
{
  "action": $TOOL_NAME,
  "action_input": $ACTION_INPUT
}
```

Follow this format:

Question: input question to answer
Thought: consider previous and subsequent steps
Action:
```
$JSON_BLOB
```
Observation: action result
... (repeat Thought/Action/Observation N times)
Thought: I know what to respond
Action:
```
{
  "action": "Final Answer",
  "action_input": "Final response to human"
}
```

Begin! Reminder to ALWAYS respond with a valid json blob of a single action. Use tools if necessary. \
Respond directly if appropriate. Format is Action:```$JSON_BLOB```then Observation:.
"""

REACT_CHAT_TEMPLATE = _REACT_BODY
"""The system prompt of ReAct on chat models; history, query and scratchpad travel as messages."""

REACT_COMPLETION_TEMPLATE = (
    _REACT_BODY
    + """{{historic_messages}}
Question: {{query}}
{{agent_scratchpad}}
Thought:"""
)
"""The single prompt of ReAct on completion models. Dify substitutes ``{{query}}`` with
``"Question: " + query`` under a template that already says ``Question:``, so its prompt reads
``Question: Question: …``; here ``{{query}}`` is the bare query."""

DEFAULT_THOUGHT = "I am thinking about how to help you"
CONTINUE = "continue"


def fill_inputs(template: str, inputs: Mapping[str, Any] | None) -> str:
    """Replace each ``{{key}}`` with ``str(value)``; a value whose ``str()`` fails, or an optional
    input left empty (``None``), is left out."""
    if not inputs or "{{" not in template:
        return template
    for key, value in inputs.items():
        if value is None:
            continue
        try:
            template = template.replace("{{" + key + "}}", str(value))
        except Exception:  # noqa: S112 - Dify skips values that cannot be rendered; so do we
            continue
    return template


def render_tools(tools: Sequence[ToolSchema]) -> str:
    return json.dumps([t.to_dict() for t in tools], ensure_ascii=False)


_PLACEHOLDER = re.compile(
    r"\{\{(instruction|tools|tool_names|tool_list|historic_messages|agent_scratchpad|query)\}\}"
)


def _substitute(template: str, values: Mapping[str, str]) -> str:
    # One pass, so text inserted for one placeholder (a query, a tool observation) is never itself
    # scanned for placeholders.
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def render_react_system(template: str, instruction: str, tools: Sequence[ToolSchema]) -> str:
    return _substitute(template, _tool_values(instruction, tools))


def _tool_values(instruction: str, tools: Sequence[ToolSchema]) -> dict[str, str]:
    return {
        "instruction": instruction,
        "tools": render_tools(tools),
        "tool_names": ", ".join(t.name for t in tools),
        "tool_list": render_tool_list(tools),
    }


def render_tool_list(tools: Sequence[ToolSchema]) -> str:
    """``{{tool_list}}`` (ours, not Dify's): one line per tool with its arguments, which small models
    read more easily than a JSON schema."""
    lines = []
    for t in tools:
        props = t.parameters.get("properties", {})
        args = ", ".join(f'"{name}": {p.get("type", "any")}' for name, p in props.items())
        lines.append(f"- {t.name}: {t.description} Arguments: {{{args}}}")
    return "\n".join(lines) or "(no tools)"


@dataclass(slots=True)
class ScratchpadStep:
    """One step of a ReAct run: the model's thought, its actions with their observations, or a final
    answer. ``actions`` holds ``(action JSON, observation)`` pairs; a step with no action but an
    observation is a corrective note after a reply that could not be read."""

    thought: str = ""
    actions: list[tuple[str, str]] = field(default_factory=list)
    observation: str = ""
    final_answer: str | None = None
    # Every tool call of the step failed, or the step is a corrective note: the model should try again.
    failed: bool = False


def action_json(name: str, action_input: Any) -> str:
    return json.dumps({"action": name, "action_input": action_input}, ensure_ascii=False)


def render_scratchpad(steps: Iterable[ScratchpadStep]) -> str:
    parts: list[str] = []
    for step in steps:
        if step.final_answer is not None:
            parts.append(f"Final Answer: {step.final_answer}")
            continue
        parts.append(f"Thought: {step.thought or DEFAULT_THOUGHT}\n\n")
        for action, observation in step.actions:
            parts.append(f"Action: {action}\n\nObservation: {observation}\n\n")
        if step.observation:
            parts.append(f"Observation: {step.observation}\n\n")
    return "".join(parts)


def react_history(history: Sequence[PromptMessage]) -> list[PromptMessage]:
    """Turn a function-calling style history (assistant tool calls + tool results) into the text
    form ReAct models read: each user turn followed by one assistant message with its steps.
    Unlike Dify, every step and the turn's final answer are kept."""
    out: list[PromptMessage] = []
    steps: list[ScratchpadStep] = []
    pending: dict[str, int] = {}  # tool_call_id -> index into the last step's actions

    def flush() -> None:
        if steps:
            out.append(AssistantMessage(render_scratchpad(steps)))
            steps.clear()
            pending.clear()

    for m in history:
        if isinstance(m, UserMessage):
            flush()
            out.append(m)
        elif isinstance(m, AssistantMessage) and m.tool_calls:
            step = ScratchpadStep(thought=m.content.strip())
            for call in m.tool_calls:
                pending[call.id] = len(step.actions)
                step.actions.append((action_json(call.name, _loads_or_raw(call.arguments)), ""))
            steps.append(step)
        elif isinstance(m, AssistantMessage):
            steps.append(ScratchpadStep(final_answer=m.content))
        elif isinstance(m, ToolMessage) and steps and m.tool_call_id in pending:
            i = pending[m.tool_call_id]
            action, _ = steps[-1].actions[i]
            steps[-1].actions[i] = (action, m.content)
        elif isinstance(m, SystemMessage):
            continue  # the agent's own system prompt replaces any stored one
    flush()
    return out


def render_historic_text(history: Sequence[PromptMessage]) -> str:
    """``{{historic_messages}}`` of the completion template."""
    parts: list[str] = []
    for m in history:
        if isinstance(m, UserMessage):
            parts.append(f"Question: {content_text(m.content)}\n\n")
        elif isinstance(m, AssistantMessage):
            parts.append(m.content + "\n\n")
    return "".join(parts)


def render_completion_prompt(
    template: str,
    instruction: str,
    tools: Sequence[ToolSchema],
    history_text: str,
    query: str,
    scratchpad: str,
) -> str:
    values = _tool_values(instruction, tools)
    values.update(historic_messages=history_text, agent_scratchpad=scratchpad, query=query)
    return _substitute(template, values)


def _loads_or_raw(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
