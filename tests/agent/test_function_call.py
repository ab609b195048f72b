"""The function-calling strategy on the shared loop, with the scripted model."""

from __future__ import annotations

import asyncio
import json

import pytest

from loopwright import Agent, AgentMaxIterationError, AgentRepeatedToolCallError, tool
from loopwright.agent import TextDelta, ToolCallFinished, ToolCallStarted
from loopwright.model.entities import AssistantMessage, ImagePart, SystemMessage, ToolMessage, UserMessage
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools import ImageMessage

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def slow(ms: int) -> str:
    """Sleep for some milliseconds."""
    await asyncio.sleep(ms / 1000)
    return f"slept {ms}"


@tool
def broken(x: str) -> str:
    """Always fails."""
    raise RuntimeError(f"disk on fire ({x})")


def fc_model(*replies: Reply | str, features: list[str] = FC, **kw: object) -> ScriptedModel:
    return ScriptedModel(list(replies), features=features, **kw)  # type: ignore[arg-type]


async def collect(agent: Agent, query: str, **kw: object) -> list[object]:
    return [e async for e in agent.stream(query, **kw)]  # type: ignore[arg-type]


async def test_one_tool_round_then_answer() -> None:
    model = fc_model(Reply.tool_calls(("add", {"a": 2, "b": 3}), text="Adding."), Reply.text("It is 5."))
    agent = Agent(model=model, tools=[add], instruction="You are a calculator.")
    events = await collect(agent, "What is 2 + 3?")

    types = [e.type for e in events]  # type: ignore[attr-defined]
    assert types[0] == "round_started" and types[-1] == "finished"
    assert (
        types.index("tool_call_started") < types.index("tool_call_finished") < types.index("round_finished")
    )
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.text == "It is 5."
    assert result.rounds == 2 and result.finish_reason == "stop"
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [f.observation for f in finished] == ["5"]
    # The text streamed live, in the scripted model's 4-character chunks.
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(deltas) == "Adding.It is 5." and len(deltas) > 2

    # Round 2 saw the system prompt, the query, the assistant call and the tool result with its id.
    second = model.requests[1].messages
    assert isinstance(second[0], SystemMessage) and second[0].content == "You are a calculator."
    assert isinstance(second[2], AssistantMessage) and second[2].tool_calls[0].name == "add"
    assert isinstance(second[3], ToolMessage) and second[3].content == "5"
    assert second[3].tool_call_id == second[2].tool_calls[0].id
    assert [t.name for t in model.requests[0].tools] == ["add"]


async def test_usage_is_summed_over_rounds() -> None:
    from loopwright.model.entities import Usage

    u1 = Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12)
    u2 = Usage(prompt_tokens=20, completion_tokens=3, total_tokens=23)
    model = fc_model(Reply.tool_calls(("add", {"a": 1, "b": 1}), usage=u1), Reply.text("2", usage=u2))
    result = await Agent(model=model, tools=[add]).run("1+1?")
    assert (result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.total_tokens) == (
        30,
        5,
        35,
    )
    assert u1.total_tokens == 12 and u2.total_tokens == 23  # never aliased or mutated


async def test_history_round_trips_into_the_next_turn() -> None:
    model = fc_model(
        Reply.tool_calls(("add", {"a": 2, "b": 3})), Reply.text("5"), Reply.text("You asked about 2 + 3.")
    )
    agent = Agent(model=model, tools=[add], instruction="Be brief.")
    first = await agent.run("What is 2 + 3?")
    second = await agent.run("What did I ask?", history=first.messages)
    assert second.text == "You asked about 2 + 3."
    sent = model.requests[2].messages
    assert [type(m).__name__ for m in sent] == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
        "UserMessage",
    ]
    assert len(second.messages) == len(first.messages) + 2


async def test_instruction_variables_are_filled_from_inputs() -> None:
    model = fc_model(Reply.text("Bonjour"))
    await Agent(model=model, instruction="Answer in {{language}} to {{name}}.").run(
        "hi", inputs={"language": "French"}
    )
    assert model.requests[0].messages[0].content == "Answer in French to {{name}}."


async def test_parallel_calls_run_concurrently_and_results_keep_model_order() -> None:
    # Event gates instead of a stopwatch: every call waits until all three are running (a barrier that
    # sequential calls could never pass: they would time out), then they end in the order c2, c3, c1.
    all_running = asyncio.Barrier(3)
    done = {name: asyncio.Event() for name in ("c1", "c2", "c3")}
    after = {"c2": None, "c3": "c2", "c1": "c3"}

    @tool
    async def gated(name: str) -> str:
        """Waits for its turn."""
        await all_running.wait()
        before = after[name]
        if before is not None:
            await done[before].wait()
        done[name].set()
        return f"ended {name}"

    model = fc_model(
        Reply.tool_calls(
            ("gated", {"name": "c1"}, "c1"), ("gated", {"name": "c2"}, "c2"), ("gated", {"name": "c3"}, "c3")
        ),
        Reply.text("done"),
    )
    events = await collect(Agent(model=model, tools=[gated], tool_timeout=30), "go")
    finished = [e.id for e in events if isinstance(e, ToolCallFinished)]
    assert finished == ["c2", "c3", "c1"]  # events arrive as calls end …
    tool_messages = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in tool_messages] == ["c1", "c2", "c3"]  # … results go back in model order
    assert [m.content for m in tool_messages] == ["ended c1", "ended c2", "ended c3"]


async def test_parallelism_is_bounded() -> None:
    running = 0
    peak = 0
    two_in = asyncio.Event()

    @tool
    async def counted(i: int) -> str:
        """Counts how many calls run at once."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == 2:
            two_in.set()
        await two_in.wait()  # the first two meet here; later ones find it already set
        await asyncio.sleep(0)
        running -= 1
        return str(i)

    calls = [("counted", {"i": i}, f"c{i}") for i in range(4)]
    model = fc_model(Reply.tool_calls(*calls), Reply.text("ok"))
    result = await Agent(model=model, tools=[counted], max_parallel_tools=2, tool_timeout=30).run("go")
    assert result.text == "ok"
    assert peak == 2  # 4 calls, never more than 2 at a time (and 2 did run together)


async def test_duplicate_tool_names_are_kept_apart_by_call_id() -> None:
    model = fc_model(
        Reply.tool_calls(("add", {"a": 1, "b": 1}, "x"), ("add", {"a": 2, "b": 2}, "y")), Reply.text("2, 4")
    )
    events = await collect(Agent(model=model, tools=[add]), "two sums")
    obs = {e.id: e.observation for e in events if isinstance(e, ToolCallFinished)}
    assert obs == {"x": "2", "y": "4"}


async def test_unknown_tool_and_failing_tool_become_observations() -> None:
    model = fc_model(Reply.tool_calls(("nope", {}, "a"), ("broken", {"x": "1"}, "b")), Reply.text("sorry"))
    events = await collect(Agent(model=model, tools=[broken]), "go")
    obs = {e.id: e for e in events if isinstance(e, ToolCallFinished)}
    assert obs["a"].observation == "there is not a tool named nope"
    assert obs["b"].observation == "tool invoke error: disk on fire (1)"
    assert obs["b"].meta.error == "disk on fire (1)"
    assert events[-1].result.text == "sorry"  # type: ignore[attr-defined]


async def test_unparseable_arguments_ask_the_model_to_resend() -> None:
    model = fc_model(
        Reply.tool_calls(("add", '{"a": 1, "b": ')),
        Reply.tool_calls(("add", {"a": 1, "b": 2})),
        Reply.text("3"),
    )
    events = await collect(Agent(model=model, tools=[add]), "1+2")
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert "not valid JSON" in finished[0].observation and "JSON object" in finished[0].observation
    assert finished[1].observation == "3"
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert started[0].arguments == '{"a": 1, "b": '  # the raw text, for the log


async def test_tool_timeout_is_an_observation_and_the_run_goes_on() -> None:
    never = asyncio.Event()  # never set: only the timeout ends the call
    cancelled = asyncio.Event()

    @tool
    async def stuck() -> str:
        """Waits forever."""
        try:
            await never.wait()
        finally:
            cancelled.set()
        return "unreachable"

    model = fc_model(Reply.tool_calls(("stuck", {})), Reply.text("too slow"))
    result_events = await collect(Agent(model=model, tools=[stuck], tool_timeout=0.05), "go")
    assert cancelled.is_set()  # the tool was cut off, not waited for
    obs = next(e for e in result_events if isinstance(e, ToolCallFinished)).observation
    assert obs.startswith("tool invoke error:") and "timed out" in obs


async def test_long_observation_is_truncated_with_a_note() -> None:
    @tool
    def dump() -> str:
        """A lot of text."""
        return "word " * 5000

    model = fc_model(Reply.tool_calls(("dump", {})), Reply.text("ok"))
    await Agent(model=model, tools=[dump], observation_token_limit=100).run("go")
    sent = next(m for m in model.requests[1].messages if isinstance(m, ToolMessage)).content
    assert len(sent) < 1000 and "[truncated:" in sent


async def test_tool_cache_hit_skips_the_second_invocation() -> None:
    runs = []

    @tool(cache_ttl=600)
    def lookup(key: str) -> str:
        """Look a key up."""
        runs.append(key)
        return f"value of {key}"

    model = fc_model(
        Reply.tool_calls(("lookup", {"key": "k"})),
        Reply.tool_calls(("lookup", {"key": "k"})),
        Reply.text("ok"),
    )
    events = await collect(Agent(model=model, tools=[lookup]), "go")
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert runs == ["k"]
    assert [f.meta.cached for f in finished] == [False, True]
    assert finished[1].observation == "value of k"


async def test_last_round_withholds_tools_and_answers() -> None:
    model = fc_model(Reply.tool_calls(("add", {"a": 1, "b": 1})), Reply.text("final"))
    result = await Agent(model=model, tools=[add], max_iterations=1).run("go")
    assert result.text == "final"
    assert [len(r.tools) for r in model.requests] == [1, 0]


async def test_max_iteration_error_when_the_model_ignores_the_empty_tool_list() -> None:
    model = fc_model(Reply.tool_calls(("add", {"a": 1, "b": 1})), Reply.tool_calls(("add", {"a": 1, "b": 2})))
    with pytest.raises(AgentMaxIterationError) as err:
        await Agent(model=model, tools=[add], max_iterations=1).run("go")
    assert str(err.value) == (
        "Agent exceeded the maximum iteration limit of 1. "
        "The agent was unable to complete the task within the allowed number of iterations."
    )


async def test_max_iterations_zero_means_one_call_without_tools() -> None:
    model = fc_model(Reply.text("direct"))
    assert (await Agent(model=model, tools=[add], max_iterations=0).run("go")).text == "direct"
    assert model.requests[0].tools == []


async def test_iteration_cap_is_99_plus_one() -> None:
    replies = [Reply.tool_calls(("add", {"a": i, "b": 0})) for i in range(99)] + [Reply.text("end")]
    model = fc_model(*replies)
    result = await Agent(model=model, tools=[add], max_iterations=500).run("count")
    assert result.rounds == 100 and model.requests[-1].tools == []


async def test_a_repeated_identical_call_is_not_run_again_and_the_model_must_answer() -> None:
    runs = []

    @tool
    def count(n: int) -> int:
        """Count."""
        runs.append(n)
        return n

    same = Reply.tool_calls(("count", {"n": 1}))
    model = fc_model(same, same, same, Reply.text("it is 1"))
    events = await collect(Agent(model=model, tools=[count]), "loop")
    assert runs == [1, 1]  # the third identical call did not run
    third = [e for e in events if isinstance(e, ToolCallFinished)][2]
    assert "3 times in a row" in third.observation and third.meta.error == "repeated call"
    assert model.requests[3].tools == []  # the next round offered no tools
    assert events[-1].result.text == "it is 1"  # type: ignore[attr-defined]


async def test_calling_a_tool_again_after_the_repeat_warning_stops_the_run() -> None:
    same = Reply.tool_calls(("add", {"a": 1, "b": 1}))
    model = fc_model(same, same, same, same)
    with pytest.raises(AgentRepeatedToolCallError, match="'add' 3 times"):
        await Agent(model=model, tools=[add]).run("loop")


async def test_a_repeated_failing_call_ends_the_run_with_a_short_honest_answer() -> None:
    same = Reply.tool_calls(("broken", {"x": "how many eggs is that"}))
    model = fc_model(same, same, same, Reply.text("You have called broken 3 times in a row"))
    events = await collect(Agent(model=model, tools=[broken]), "I have 3 boxes of 48 eggs. How many eggs?")
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.text == "I could not compute that."
    assert len(model.requests) == 3  # no round spent on copying the guard's note
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["I could not compute that."]


async def test_repeat_guard_can_be_disabled() -> None:
    same = Reply.tool_calls(("add", {"a": 1, "b": 1}))
    model = fc_model(same, same, same, Reply.text("fine"))
    assert (await Agent(model=model, tools=[add], repeated_call_limit=None).run("loop")).text == "fine"


async def test_non_streaming_tool_calls_arrive_whole() -> None:
    model = fc_model(Reply.tool_calls(("add", {"a": 4, "b": 4})), Reply.text("8"), features=["tool-call"])
    events = await collect(Agent(model=model, tools=[add]), "4+4")
    assert next(e for e in events if isinstance(e, ToolCallFinished)).observation == "8"


async def test_files_reach_vision_models_first_and_others_not_at_all() -> None:
    image = ImagePart("https://example.com/cat.png")
    vision = fc_model(Reply.text("a cat"), features=[*FC, "vision"])
    await Agent(model=vision).run("what is this?", files=[image])
    user = vision.requests[0].messages[-1]
    assert isinstance(user, UserMessage) and user.content[0] == image and user.text == "what is this?"

    blind = fc_model(Reply.text("?"))
    await Agent(model=blind).run("what is this?", files=[image])
    assert blind.requests[0].messages[-1].content == "what is this?"


async def test_tool_files_are_collected_on_the_result() -> None:
    @tool
    def draw() -> ImageMessage:
        """Draw a picture."""
        return ImageMessage("https://example.com/p.png", "image/png")

    model = fc_model(Reply.tool_calls(("draw", {})), Reply.text("here"))
    result = await Agent(model=model, tools=[draw]).run("draw")
    assert [f.url for f in result.files] == ["https://example.com/p.png"]  # type: ignore[union-attr]
    obs = next(m for m in model.requests[1].messages if isinstance(m, ToolMessage)).content
    assert obs.startswith("image has been created and sent to user already")


async def test_stopping_the_stream_cancels_running_tools() -> None:
    cancelled = asyncio.Event()

    @tool
    async def hang(n: int) -> str:
        """Never returns."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "x"

    model = fc_model(Reply.tool_calls(("hang", {"n": 1}, "a"), ("hang", {"n": 2}, "b")), Reply.text("x"))
    stream = Agent(model=model, tools=[hang]).stream("go")
    async for event in stream:
        if isinstance(event, ToolCallStarted):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.wait_for(cancelled.wait(), 1)


async def test_arguments_sent_back_are_the_models_json() -> None:
    model = fc_model(Reply.tool_calls(("add", {"a": 1, "b": 2})), Reply.text("3"))
    await Agent(model=model, tools=[add]).run("go")
    call = next(m for m in model.requests[1].messages if isinstance(m, AssistantMessage)).tool_calls[0]
    assert json.loads(call.arguments) == {"a": 1, "b": 2}


async def test_a_model_error_ends_the_run_with_that_error() -> None:
    from loopwright.model import ModelError

    model = fc_model(Reply.tool_calls(("add", {"a": 1, "b": 1})), Reply.error(ModelError("rate limited")))
    events: list[object] = []
    with pytest.raises(ModelError, match="rate limited"):
        async for event in Agent(model=model, tools=[add]).stream("go"):
            events.append(event)
    assert [e.type for e in events][-1] == "round_started"  # type: ignore[attr-defined]


async def test_toolsets_contribute_their_tools_and_are_asked_each_run() -> None:
    class Numbers:
        def __init__(self) -> None:
            self.asked = 0

        async def get_tools(self) -> list[object]:
            self.asked += 1
            return [add]

    numbers = Numbers()
    model = fc_model(Reply.tool_calls(("add", {"a": 1, "b": 2})), Reply.text("3"), Reply.text("again"))
    agent = Agent(model=model, tools=[numbers])  # type: ignore[list-item]
    assert (await agent.run("1+2")).text == "3"
    await agent.run("again")
    assert numbers.asked == 2
    assert [t.name for t in model.requests[0].tools] == ["add"]


def test_not_a_tool_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="not a tool or toolset"):
        Agent(model=fc_model(Reply.text("x")), tools=["add"])  # type: ignore[list-item]


async def test_tool_choice_applies_to_the_first_round_only() -> None:
    model = fc_model(Reply.tool_calls(("add", {"a": 1, "b": 2})), Reply.text("3"))
    await Agent(model=model, tools=[add], tool_choice="required", model_params={"temperature": 0}).run("go")
    assert model.requests[0].params == {"temperature": 0, "tool_choice": "required"}
    assert model.requests[1].params == {"temperature": 0}


async def test_tool_choice_is_not_sent_without_tools() -> None:
    model = fc_model(Reply.text("hi"))
    await Agent(model=model, tool_choice="required").run("go")
    assert "tool_choice" not in model.requests[0].params
