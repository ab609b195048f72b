"""The ReAct strategy (chat and completion prompts) on the shared loop, with the scripted model."""

from __future__ import annotations

import asyncio
import json

import pytest

from loopwright import Agent, AgentMaxIterationError, tool
from loopwright.agent import TextDelta, ToolCallFinished
from loopwright.model.entities import AssistantMessage, SystemMessage, UserMessage
from loopwright.testing import ScriptedModel


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def wait(ms: int) -> str:
    """Sleep for some milliseconds."""
    await asyncio.sleep(ms / 1000)
    return f"waited {ms}"


def action(name: str, action_input: object, thought: str = "I should act.") -> str:
    blob = json.dumps({"action": name, "action_input": action_input})
    return f"Thought: {thought}\nAction:\n```json\n{blob}\n```\n"


def final(text: str, thought: str = "I know the answer.") -> str:
    return action("Final Answer", text, thought)


async def test_chat_react_calls_a_tool_then_answers() -> None:
    model = ScriptedModel([action("add", {"a": 2, "b": 3}), final("2 + 3 = 5")])
    agent = Agent(model=model, tools=[add], instruction="You are a calculator.")
    events = [e async for e in agent.stream("What is 2 + 3?")]
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.text == "2 + 3 = 5" and result.rounds == 2
    assert next(e for e in events if isinstance(e, ToolCallFinished)).observation == "5"

    # Thought text streams live; the action JSON does not; the final answer comes on the answer channel.
    thought = "".join(e.text for e in events if isinstance(e, TextDelta) and e.channel == "thought")
    assert "I should act." in thought and '"action"' not in thought
    answers = [e.text for e in events if isinstance(e, TextDelta) and e.channel == "answer"]
    assert answers == ["2 + 3 = 5"]

    first, second = model.requests
    assert first.tools == [] and first.stop == ["Observation"]  # tools travel in the prompt
    system = first.messages[0]
    assert isinstance(system, SystemMessage)
    assert "You are a calculator." in system.content
    assert 'Valid "action" values: "Final Answer" or add' in system.content
    assert json.loads(system.content.split("following tools:\n\n")[1].split("\n\nUse a json blob")[0]) == [
        add.schema.to_dict()
    ]
    assert [type(m).__name__ for m in first.messages] == ["SystemMessage", "UserMessage"]
    # Round 2: the scratchpad as an assistant message, then Dify's literal "continue".
    assert [type(m).__name__ for m in second.messages] == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
    ]
    scratchpad = second.messages[2].content
    assert scratchpad == (
        'Thought: I should act.\n\nAction: {"action": "add", "action_input": {"a": 2, "b": 3}}\n\n'
        "Observation: 5\n\n"
    )
    assert second.messages[3].content == "continue"


async def test_completion_react_builds_one_prompt_without_question_duplication() -> None:
    model = ScriptedModel([action("add", {"a": 1, "b": 1}), final("2")], mode="completion")
    result = await Agent(model=model, tools=[add], instruction="Be exact.").run("What is 1 + 1?")
    assert result.text == "2"
    (prompt,) = model.requests[1].messages
    assert isinstance(prompt, UserMessage) and isinstance(prompt.content, str)
    assert "Question: What is 1 + 1?\n" in prompt.content
    assert "Question: Question:" not in prompt.content
    assert prompt.content.endswith("Observation: 2\n\n\nThought:")
    assert "{{" not in prompt.content


async def test_plain_text_reply_is_the_final_answer() -> None:
    model = ScriptedModel(["Paris is the capital of France."])
    result = await Agent(model=model, tools=[add]).run("Capital of France?")
    assert result.text == "Paris is the capital of France." and result.rounds == 1


async def test_final_answer_variants_are_recognised() -> None:
    for name in ("Final Answer", "final_answer", "FINAL ANSWER", "Final-Answer"):
        model = ScriptedModel([action(name, "42")])
        assert (await Agent(model=model, tools=[add]).run("?")).text == "42"


async def test_dict_final_answer_is_json_text() -> None:
    model = ScriptedModel([action("Final Answer", {"answer": 3})])
    assert json.loads((await Agent(model=model).run("?")).text) == {"answer": 3}


async def test_classic_action_input_format_works() -> None:
    model = ScriptedModel(['Thought: add them\nAction: add\nAction Input: {"a": 4, "b": 5}\n', final("9")])
    events = [e async for e in Agent(model=model, tools=[add]).stream("4+5")]
    assert next(e for e in events if isinstance(e, ToolCallFinished)).observation == "9"


async def test_stop_word_cuts_hallucinated_observations() -> None:
    reply = action("add", {"a": 1, "b": 2}) + "Observation: 1000\nThought: done\n" + final("1000")
    model = ScriptedModel([reply, final("3")])
    result = await Agent(model=model, tools=[add]).run("1+2")
    assert result.text == "3"


async def test_stop_word_can_be_disabled() -> None:
    model = ScriptedModel([final("x")])
    await Agent(model=model, react_stop=None, stop=["END"]).run("?")
    assert model.requests[0].stop == ["END"]


async def test_several_actions_in_one_reply_run_concurrently() -> None:
    reply = (
        "Thought: two waits\n"
        + '```json\n{"action": "wait", "action_input": {"ms": 120}}\n```\n'
        + '```json\n{"action": "wait", "action_input": {"ms": 120}}\n```\n'
    )
    model = ScriptedModel([reply, final("ok")], chunk_size=64)
    running = peak = 0

    @tool
    async def wait(ms: int) -> str:
        """Wait a while."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(ms / 1000)
        running -= 1
        return f"waited {ms}"

    events = [e async for e in Agent(model=model, tools=[wait], react_stop=None).stream("go")]
    assert peak == 2  # both calls were in flight at once
    assert [e.observation for e in events if isinstance(e, ToolCallFinished)] == ["waited 120", "waited 120"]
    scratchpad = model.requests[1].messages[2].content
    assert scratchpad.count("Observation: waited 120") == 2


async def test_malformed_action_gets_a_corrective_observation_and_another_round() -> None:
    broken = 'Thought: use add\nAction:\n```json\n{"action": "add", "action_input": {"a": 1, "b": }\n```\n'
    model = ScriptedModel([broken, action("add", {"a": 1, "b": 1}), final("2")])
    events = [e async for e in Agent(model=model, tools=[add]).stream("1+1")]
    assert events[-1].result.text == "2"  # type: ignore[attr-defined]
    assert events[-1].result.rounds == 3  # type: ignore[attr-defined]
    note = model.requests[1].messages[2].content
    assert "could not be used" in note and '"action"' in note


async def test_malformed_replies_are_bounded_then_the_text_is_the_answer() -> None:
    broken = 'Action: {"action": "add", "action_input": {"a": 1, "b": }}'
    model = ScriptedModel([broken, broken, broken])
    result = await Agent(model=model, tools=[add], max_malformed_retries=2).run("1+1")
    assert result.rounds == 3 and model.remaining == 0
    assert result.text  # never an empty, silent end


async def test_unknown_tool_observation() -> None:
    model = ScriptedModel([action("search", {"q": "x"}), final("none")])
    events = [e async for e in Agent(model=model, tools=[add]).stream("?")]
    assert (
        next(e for e in events if isinstance(e, ToolCallFinished)).observation
        == "there is not a tool named search"
    )


async def test_last_round_prompt_lists_no_tools_and_a_tool_call_there_raises() -> None:
    model = ScriptedModel([action("add", {"a": 1, "b": 1}), action("add", {"a": 2, "b": 2})])
    with pytest.raises(AgentMaxIterationError):
        await Agent(model=model, tools=[add], max_iterations=1).run("?")
    last_system = model.requests[1].messages[0].content
    assert "following tools:\n\n[]\n" in last_system
    assert 'Valid "action" values: "Final Answer" or \n' in last_system


async def test_history_is_rendered_as_react_text() -> None:
    model = ScriptedModel([action("add", {"a": 2, "b": 2}), final("4"), final("You asked 2+2.")])
    agent = Agent(model=model, tools=[add])
    first = await agent.run("2+2?")
    await agent.run("What did I ask?", history=first.messages)
    msgs = model.requests[2].messages
    assert [type(m).__name__ for m in msgs] == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
    ]
    assert isinstance(msgs[2], AssistantMessage)
    assert msgs[2].content.startswith("Thought: I should act.\n\nAction: ")
    assert "Observation: 4\n\nFinal Answer: 4" in msgs[2].content


async def test_dify_parser_mode_runs_only_the_last_action() -> None:
    reply = (
        'Thought: two\nAction: {"action": "add", "action_input": {"a": 1, "b": 1}}\n'
        'Action: {"action": "add", "action_input": {"a": 5, "b": 5}}'
    )
    model = ScriptedModel([reply, final("10")])
    events = [e async for e in Agent(model=model, tools=[add], parser_mode="dify").stream("?")]
    assert [e.observation for e in events if isinstance(e, ToolCallFinished)] == ["10"]


async def test_dify_parser_error_is_a_recoverable_problem() -> None:
    model = ScriptedModel(['{"action": "calc", "action_input": 3}', final("ok")])
    result = await Agent(model=model, tools=[add], parser_mode="dify").run("?")
    assert result.text == "ok" and result.rounds == 2


async def test_react_rounds_tell_the_model_which_tools_the_prompt_offers() -> None:
    model = ScriptedModel([action("add", {"a": 1, "b": 1}), final("2")])
    await Agent(model=model, tools=[add], max_iterations=1, tool_choice="add").run("1+1")
    first, last = model.requests
    assert first.react is not None and last.react is not None
    assert [t.name for t in first.react.tools] == ["add"] and first.params["tool_choice"] == "add"
    assert first.react.observation is None  # the first turn asks the user's question
    assert list(last.react.tools) == [] and "tool_choice" not in last.params
    assert last.react.observation == "2"  # the follow-up turn carries what the tool returned
