"""Strategy "plan": a plan of tool steps, its waves, re-plans, the answer — on scripted models."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.agent import (
    AgentCallback,
    AgentEvent,
    PlanCreated,
    PlanStepFinished,
    PlanStepStarted,
    RoundStarted,
    ToolCallStarted,
)
from loopwright.agent.planning import PLAN_TOOL, PlanProblem, plan_tool_schema, read_plan, render_checklist
from loopwright.model.entities import ToolMessage, UserMessage
from loopwright.testing import Reply, ScriptedModel

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def broken(x: str) -> str:
    """Always fails."""
    raise RuntimeError("the service is down")


def step(
    step_id: str, tool_name: str, arguments: dict[str, Any], after: list[str] | None = None
) -> dict[str, Any]:
    return {
        "id": step_id,
        "task": f"do {step_id}",
        "tool": tool_name,
        "arguments": arguments,
        "after": after or [],
    }


def plan(*steps: dict[str, Any]) -> Reply:
    return Reply.tool_calls((PLAN_TOOL, {"steps": list(steps)}))


def react_action(name: str, action_input: object) -> str:
    blob = json.dumps({"action": name, "action_input": action_input})
    return f"Thought: I should act.\nAction:\n```json\n{blob}\n```\n"


async def events_of(agent: Agent, query: str = "go") -> list[AgentEvent]:
    return [e async for e in agent.stream(query)]


async def test_a_failed_step_leads_to_one_new_plan_and_the_answer_uses_every_result() -> None:
    model = ScriptedModel(
        [
            plan(step("s1", "add", {"a": 1, "b": 2}), step("s2", "broken", {"x": "y"})),
            plan(step("s3", "add", {"a": "{{s1}}", "b": 10})),
            Reply.text("It is 13."),
        ],
        features=FC,
    )
    events = await events_of(Agent(model=model, tools=[add, broken], strategy="plan"))
    plans = [e for e in events if isinstance(e, PlanCreated)]
    assert [p.revision for p in plans] == [0, 1]
    assert plans[1].reason is not None and "s2 failed" in plans[1].reason
    ends = {e.step.id: (e.status, e.result) for e in events if isinstance(e, PlanStepFinished)}
    assert ends["s1"] == ("done", "3") and ends["s2"][0] == "failed" and ends["s3"] == ("done", "13")
    finished = events[-1]
    assert finished.type == "finished" and finished.result.text == "It is 13."  # type: ignore[union-attr]
    # the new plan was asked for with the failure named, and s1's result stayed usable
    replan = model.requests[1]
    note = replan.messages[-1]
    assert (
        isinstance(note, UserMessage) and "s2" in str(note.content) and "service is down" in str(note.content)
    )
    assert replan.params["tool_choice"] == PLAN_TOOL and [t.name for t in replan.tools] == [PLAN_TOOL]
    # the answer round offers no tools and shows every step's result
    answer = model.requests[2]
    assert answer.tools == []
    results = [m.content for m in answer.messages if isinstance(m, ToolMessage)]
    assert "3" in results and "13" in results
    assert finished.result.rounds == 5  # type: ignore[union-attr]  # plan, wave, re-plan, wave, answer


async def test_independent_steps_run_at_once_and_a_dependent_one_after_them() -> None:
    started: list[str] = []
    both = asyncio.Event()

    @tool
    async def fetch(name: str) -> str:
        """Fetch a value."""
        started.append(name)
        if len(started) == 2:
            both.set()
        await both.wait()  # only returns once the other step has started too: they overlap
        return f"value of {name}"

    model = ScriptedModel(
        [
            plan(
                step("s1", "fetch", {"name": "a"}),
                step("s2", "fetch", {"name": "b"}),
                step("s3", "add", {"a": 1, "b": 1}, after=["s1", "s2"]),
            ),
            Reply.text("done"),
        ],
        features=FC,
    )
    # a generous tool timeout: if the steps ran one after the other the first would wait in vain and fail
    agent = Agent(model=model, tools=[fetch, add], strategy="plan", tool_timeout=10)
    events = await events_of(agent)
    rounds: dict[int, list[str]] = {}
    for e in events:
        if isinstance(e, PlanStepStarted):
            rounds.setdefault(e.round, []).append(e.step.id)
    assert list(rounds.values()) == [["s1", "s2"], ["s3"]]
    assert all(e.status == "done" for e in events if isinstance(e, PlanStepFinished))
    step_rounds = [e for e in events if isinstance(e, RoundStarted) and not e.calls_model]
    assert [r.round for r in step_rounds] == list(rounds)
    assert len(model.requests) == 2  # the plan and the answer: step rounds call no model


async def test_a_react_model_writes_its_plan_as_an_action() -> None:
    model = ScriptedModel(
        [
            react_action(PLAN_TOOL, {"steps": [step("s1", "add", {"a": 2, "b": 3})]}),
            react_action("Final Answer", "It is 5."),
        ]
    )
    agent = Agent(model=model, tools=[add], strategy="plan")
    assert agent.strategy_kind == "react"
    result = await agent.run("What is 2 + 3?")
    assert result.text == "It is 5."
    first = model.requests[0]
    assert first.react is not None and [t.name for t in first.react.tools] == [PLAN_TOOL]
    assert first.params["tool_choice"] == PLAN_TOOL
    last = model.requests[1]
    assert last.react is not None and list(last.react.tools) == []
    assert "5" in str(last.messages)  # the step's result is in the answer round's prompt


async def test_a_react_plan_round_carries_the_run_time_so_far() -> None:
    """As the loop's ReAct rounds do: a model with a budget for the whole run (the embedded model)
    sizes the answer round from what the plan's rounds left."""
    now = [100.0]

    def clock() -> float:
        now[0] += 2.0  # every reading two seconds later
        return now[0]

    model = ScriptedModel(
        [
            react_action(PLAN_TOOL, {"steps": [step("s1", "add", {"a": 2, "b": 3})]}),
            react_action("Final Answer", "It is 5."),
        ]
    )
    result = await Agent(model=model, tools=[add], strategy="plan", clock=clock).run("What is 2 + 3?")
    assert result.text == "It is 5."
    first, last = (r.react for r in model.requests)
    assert first is not None and last is not None
    assert 0 < first.elapsed < last.elapsed


async def test_a_plan_that_cannot_run_is_sent_back_with_what_is_wrong() -> None:
    model = ScriptedModel(
        [plan(step("s1", "nope", {})), plan(step("s1", "add", {"a": 1, "b": 1})), Reply.text("2")],
        features=FC,
    )
    result = await Agent(model=model, tools=[add], strategy="plan").run("go")
    assert result.text == "2"
    sent_back = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert "no known tool" in sent_back[-1].content and "add" in sent_back[-1].content


async def test_a_reply_without_a_plan_is_the_answer() -> None:
    model = ScriptedModel([react_action("Final Answer", "Hello!")])
    events = await events_of(Agent(model=model, tools=[add], strategy="plan"))
    assert not [e for e in events if isinstance(e, PlanCreated)]
    assert events[-1].result.text == "Hello!"  # type: ignore[union-attr]
    assert len(model.requests) == 1


async def test_out_of_new_plans_the_steps_after_a_failed_one_are_skipped() -> None:
    model = ScriptedModel(
        [
            plan(step("s1", "broken", {"x": "1"}), step("s2", "add", {"a": 1, "b": 1}, after=["s1"])),
            Reply.text("I could not do it."),
        ],
        features=FC,
    )
    events = await events_of(Agent(model=model, tools=[add, broken], strategy="plan", max_replans=0))
    ends = [(e.step.id, e.status) for e in events if isinstance(e, PlanStepFinished)]
    assert ends == [("s1", "failed"), ("s2", "skipped")]
    assert not any(isinstance(e, ToolCallStarted) and e.name == "add" for e in events)
    assert events[-1].result.text == "I could not do it."  # type: ignore[union-attr]


async def test_the_round_cap_keeps_the_answer_round() -> None:
    steps = [
        step(f"s{i}", "add", {"a": i, "b": 0}, after=[f"s{i - 1}"] if i > 1 else []) for i in range(1, 6)
    ]
    model = ScriptedModel([plan(*steps), Reply.text("partial")], features=FC)
    result = await Agent(model=model, tools=[add], strategy="plan", max_iterations=3).run("go")
    assert result.text == "partial" and result.rounds == 4  # plan, two waves, the answer


async def test_callbacks_see_the_plan_and_no_model_call_in_step_rounds() -> None:
    seen: list[str] = []

    class Recorder(AgentCallback):
        def on_plan(self, event: PlanCreated) -> None:
            seen.append(f"plan {len(event.steps)}")

        def on_plan_step_start(self, event: PlanStepStarted) -> None:
            seen.append(f"start {event.step.id}")

        def on_plan_step_end(self, event: PlanStepFinished) -> None:
            seen.append(f"end {event.step.id} {event.status}")

        def on_llm_start(self, round: int) -> None:
            seen.append(f"llm {round}")

    model = ScriptedModel([plan(step("s1", "add", {"a": 1, "b": 1})), Reply.text("2")], features=FC)
    await Agent(model=model, tools=[add], strategy="plan", callbacks=[Recorder()]).run("go")
    assert seen == ["llm 1", "plan 1", "start s1", "end s1 done", "llm 3"]


def test_read_plan_checks_tools_ids_and_order() -> None:
    tools = {"add"}
    assert read_plan({"steps": [step("s1", "add", {})]}, tools, 8)[0].tool == "add"
    with pytest.raises(PlanProblem, match="no earlier step"):
        read_plan({"steps": [step("s1", "add", {}, after=["s2"]), step("s2", "add", {})]}, tools, 8)
    with pytest.raises(PlanProblem, match="two steps"):
        read_plan({"steps": [step("s1", "add", {}), step("s1", "add", {})]}, tools, 8)
    with pytest.raises(PlanProblem, match="at most 1"):
        read_plan({"steps": [step("s1", "add", {}), step("s2", "add", {})]}, tools, 1)
    with pytest.raises(PlanProblem, match="two steps"):  # a new plan may not rename a done step
        read_plan({"steps": [step("s1", "add", {})]}, tools, 8, done={"s1"})
    done = read_plan({"steps": [step("s2", "add", {}, after=["s1"])]}, tools, 8, done={"s1"})
    assert done[0].after == ("s1",)


def test_the_checklist_ticks() -> None:
    steps = read_plan({"steps": [step("s1", "add", {}), step("s2", "add", {})]}, {"add"}, 8)
    text = render_checklist(steps, {"s1": "done"})
    assert text.splitlines() == ["Plan:", "- [x] s1: do s1 (add)", "- [ ] s2: do s2 (add)"]


def test_the_embedded_model_gets_a_grammar_for_the_plan() -> None:
    """The plan tool's schema becomes a ReAct grammar (model._local_grammar) where each step names an
    offered tool with arguments of that tool's schema."""
    pytest.importorskip("llama_cpp")
    from loopwright.model._local_grammar import react_grammar

    schema = plan_tool_schema([add.schema, broken.schema], 4)
    grammar = react_grammar([schema], PLAN_TOOL)
    assert '\\"add\\"' in grammar and '\\"broken\\"' in grammar and PLAN_TOOL in grammar
    assert "Final Answer" not in grammar  # the planning round must write a plan
