"""The prompt log's model wrapper: every way the agent calls a model is noted, and the model behind it
is called as the agent meant (a ReAct round as data, a round with the run's time)."""

from __future__ import annotations

from loopwright.app.run.prompt_log import CURRENT_MESSAGE, PromptLog
from loopwright.model.entities import UserMessage
from loopwright.testing import ScriptedModel
from tests.agent.test_loop import TimedModel


async def test_a_round_with_the_run_time_is_noted_and_reaches_the_model_with_it() -> None:
    log = PromptLog()
    timed = TimedModel(["ok"])
    token = CURRENT_MESSAGE.set("message-1")
    try:
        wrapped = log.wrap(timed)
        chunks = [c async for c in wrapped.stream_timed([UserMessage("hi")], elapsed=2.5)]  # type: ignore[attr-defined]
        assert "".join(c.text for c in chunks) == "ok" and timed.elapsed == [2.5]
        # a model without a run budget is called through ``stream``, noted all the same
        plain = log.wrap(ScriptedModel(["fine"]))
        chunks = [c async for c in plain.stream_timed([UserMessage("hello")], elapsed=1.0)]  # type: ignore[attr-defined]
        assert "".join(c.text for c in chunks) == "fine"
    finally:
        CURRENT_MESSAGE.reset(token)
    calls = log.calls("message-1") or []
    assert [str(c.messages[0].content) for c in calls] == ["hi", "hello"]
