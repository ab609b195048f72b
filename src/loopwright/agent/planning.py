"""Plans (strategy ``"plan"``): the tool a model writes its plan with, reading a plan, and its checklist.

A plan travels as the arguments of one tool, :data:`PLAN_TOOL`, offered alone in a planning round and
chosen for the model (``tool_choice``): a function-calling model writes it as a JSON function call, a
ReAct model as an action, and the embedded model under the grammar built from the tool's JSON schema
(``model._local_grammar``), where every step must name an offered tool and its arguments follow that
tool's own schema. How a plan runs: ``agent._plan``.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopwright.agent.events import PlanStep, PlanStepStatus
from loopwright.agent.prompts import render_tool_list
from loopwright.model.entities import ToolSchema

PLAN_TOOL = "make_plan"

PLAN_DESCRIPTION = (
    "Write your plan before doing anything: the steps that answer the question, each one call of one "
    "of the tools below. Give each step an id (s1, s2, …), the task in a few words, the tool, its "
    "arguments, and in `after` the ids of earlier steps whose results it needs (a string argument may "
    "hold {{s1}}, the result of step s1). Steps that need nothing of each other run at once. If a step "
    "failed, write a new plan for what remains; steps that are done keep their results. If no tool is "
    "needed, write no steps.\n\nThe tools:\n"
)

CHECK_MARKS: Mapping[PlanStepStatus, str] = {
    "pending": "[ ]",
    "running": "[ ]",
    "done": "[x]",
    "failed": "[!]",
    "skipped": "[-]",
}


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """How plans run: at most ``max_replans`` new plans after failed steps, ``max_steps`` per plan."""

    max_replans: int = 2
    max_steps: int = 8

    def __post_init__(self) -> None:
        if self.max_replans < 0 or self.max_steps < 1:
            raise ValueError("max_replans must be 0 or more and max_steps 1 or more")


def plan_tool_schema(tools: Sequence[ToolSchema], max_steps: int) -> ToolSchema:
    """The plan tool for these tools: ``{"steps": [...]}``, each step one of the tools' calls."""
    variants = [_step_schema(t) for t in tools]
    if not variants:
        items: dict[str, Any] = _step_schema(None)
    else:
        items = variants[0] if len(variants) == 1 else {"anyOf": variants}
    parameters = {
        "type": "object",
        "properties": {"steps": {"type": "array", "items": items, "maxItems": max_steps}},
        "required": ["steps"],
    }
    return ToolSchema(PLAN_TOOL, PLAN_DESCRIPTION + render_tool_list(tools), parameters)


def _step_schema(tool: ToolSchema | None) -> dict[str, Any]:
    name: dict[str, Any] = {"type": "string"} if tool is None else {"type": "string", "enum": [tool.name]}
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "task": {"type": "string"},
            "tool": name,
            "arguments": tool.parameters if tool is not None else {"type": "object"},
            "after": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["id", "task", "tool", "arguments"],
    }


class PlanProblem(ValueError):
    """A plan that cannot run as written; the message tells the model what to change."""


def read_plan(
    arguments: Any, tools: Collection[str], max_steps: int, done: Collection[str] = ()
) -> tuple[PlanStep, ...]:
    """The steps of the plan tool's ``arguments``, checked: known tools, unique ids (not those of steps
    already ``done``), ``after`` naming only earlier or done steps (so a plan has no cycle). Raises
    :class:`PlanProblem`."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as e:
            raise PlanProblem(f"the plan is not valid JSON ({e.msg})") from None
    raw = arguments.get("steps") if isinstance(arguments, dict) else None
    if not isinstance(raw, list):
        raise PlanProblem('the plan must be {"steps": [...]}')
    if len(raw) > max_steps:
        raise PlanProblem(f"the plan has {len(raw)} steps; at most {max_steps} are allowed")
    steps: list[PlanStep] = []
    seen = set(done)
    for i, item in enumerate(raw):
        step = _read_step(item, i, tools, seen)
        seen.add(step.id)
        steps.append(step)
    return tuple(steps)


def _read_step(item: Any, index: int, tools: Collection[str], seen: Collection[str]) -> PlanStep:
    if not isinstance(item, dict):
        raise PlanProblem(f"step {index + 1} is not an object")
    step_id = str(item.get("id") or f"s{index + 1}").strip()
    if step_id in seen:
        raise PlanProblem(f"two steps are named {step_id!r}; give each step its own id")
    tool = str(item.get("tool") or "")
    if tool not in tools:
        known = ", ".join(sorted(tools)) or "none"
        raise PlanProblem(f"step {step_id} names no known tool ({tool!r}); the tools are: {known}")
    arguments = item.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            raise PlanProblem(f"the arguments of step {step_id} are not a JSON object") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise PlanProblem(f"the arguments of step {step_id} are not a JSON object")
    after = item.get("after") or []
    if isinstance(after, str):
        after = [after]
    if not isinstance(after, list):
        raise PlanProblem(f"`after` of step {step_id} must be a list of step ids")
    needs = tuple(str(a) for a in after)
    unknown = [a for a in needs if a not in seen]
    if unknown:
        raise PlanProblem(f"step {step_id} comes after {', '.join(unknown)}, which is no earlier step")
    return PlanStep(step_id, str(item.get("task") or tool), tool, arguments, needs)


def with_results(value: Any, results: Mapping[str, str]) -> Any:
    """``value`` with each ``{{id}}`` in its strings replaced by that step's result."""
    if isinstance(value, str):
        if "{{" not in value:
            return value
        for step_id, result in results.items():
            value = value.replace("{{" + step_id + "}}", result)
        return value
    if isinstance(value, dict):
        return {k: with_results(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [with_results(v, results) for v in value]
    return value


def render_checklist(steps: Sequence[PlanStep], status: Mapping[str, PlanStepStatus]) -> str:
    """The plan as a Markdown checklist, each step ticked as it stands."""
    lines = ["Plan:"]
    for step in steps:
        mark = CHECK_MARKS[status.get(step.id, "pending")]
        lines.append(f"- {mark} {step.id}: {step.task} ({step.tool})")
    return "\n".join(lines)
