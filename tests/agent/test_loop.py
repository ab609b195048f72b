"""The agent loop: what a run reports when it ends."""

from __future__ import annotations

import pytest

from loopwright import Agent
from loopwright.testing import Reply, ScriptedModel

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


@pytest.mark.parametrize("features", [FC, []], ids=["function-calling", "react"])
@pytest.mark.parametrize(
    ("model_reason", "reported"),
    [(None, "stop"), ("length", "length"), ("content_filter", "content_filter"), ("eos", "stop")],
)
async def test_the_run_reports_the_model_finish_reason(
    features: list[str], model_reason: str | None, reported: str
) -> None:
    model = ScriptedModel([Reply.text("cut sho", finish_reason=model_reason)], features=features)
    result = await Agent(model=model).run("go")
    assert result.text == "cut sho"
    assert result.finish_reason == reported
