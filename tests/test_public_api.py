"""The names the docs promise are exported, and nothing is exported by accident."""

from __future__ import annotations

import loopwright
import loopwright.testing
from loopwright.agent.react_parser import Action, ReactParser


def test_top_level_names() -> None:
    assert set(loopwright.__all__) >= {"Agent", "tool", "AgentResult", "AgentMaxIterationError"}
    for name in loopwright.__all__:
        assert getattr(loopwright, name) is not None


def test_testing_names() -> None:
    assert {"ScriptedModel", "Reply"} <= set(loopwright.testing.__all__)
    reply = loopwright.testing.Reply.tool_calls(("add", {"a": 1}))
    assert reply.calls == (("add", {"a": 1}),)


def test_parser_names() -> None:
    parser = ReactParser(mode="robust")
    out = parser.feed('{"action": "a", "action_input": "b"}') + parser.flush()
    assert Action(name="a", input="b") in out
