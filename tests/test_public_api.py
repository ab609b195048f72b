"""The names the docs promise are exported, and nothing is exported by accident."""

from __future__ import annotations

from types import ModuleType

import loopwright
import loopwright.testing
from loopwright.agent.react_parser import Action, ReactParser


def public_names(module: ModuleType) -> list[str]:
    """What a module offers: every public name that is not a module itself (as httpx checks)."""
    return sorted(
        name
        for name, value in vars(module).items()
        if (not name.startswith("_") or name == "__version__") and not isinstance(value, ModuleType)
    )


def test_top_level_names() -> None:
    assert sorted(loopwright.__all__) == public_names(loopwright)
    assert sorted(loopwright.__all__) == [
        "Agent",
        "AgentCallback",
        "AgentError",
        "AgentEvent",
        "AgentMaxIterationError",
        "AgentRepeatedToolCallError",
        "AgentResult",
        "LoopwrightError",
        "Tool",
        "ToolContext",
        "__version__",
        "tool",
    ]


def test_testing_names() -> None:
    assert sorted(loopwright.testing.__all__) == public_names(loopwright.testing)
    assert sorted(loopwright.testing.__all__) == [
        "ModelRequest",
        "Reply",
        "ScriptExhaustedError",
        "ScriptedModel",
    ]
    reply = loopwright.testing.Reply.tool_calls(("add", {"a": 1}))
    assert reply.calls == (("add", {"a": 1}),)


def test_parser_names() -> None:
    parser = ReactParser(mode="robust")
    out = parser.feed('{"action": "a", "action_input": "b"}') + parser.flush()
    assert Action(name="a", input="b") in out


def test_observe_names() -> None:
    """``loopwright.observe`` loads its names on first use (OpenTelemetry and prometheus_client only
    then): each resolves, and nothing public is left out of ``__all__``."""
    import loopwright.observe as observe

    assert sorted(observe.__all__) == [
        "OPEN_STREAMS",
        "OtelCallback",
        "REGISTRY",
        "REQUEST_SECONDS",
        "RunMetricsCallback",
        "WRITE_QUEUE",
        "capture_enabled",
        "exposition",
        "forget_process_at_exit",
        "otlp_provider",
        "run_metrics_observer",
        "span_observer",
        "tracing_enabled",
    ]
    for name in observe.__all__:
        assert getattr(observe, name) is not None
    assert sorted(observe.__all__) == public_names(observe)
