"""The embedded model's round budget, thread count and shown text (no model needed)."""

from __future__ import annotations

import pytest

from loopwright.model import local
from loopwright.model._local_budget import MIN_ROUND_TOKENS, Pace


def test_a_round_gets_the_tokens_its_seconds_allow_at_the_measured_speed() -> None:
    pace = Pace(tokens_per_second=20.0)
    assert pace.round_tokens(384, seconds=12.0) == 240
    assert pace.round_tokens(100, seconds=12.0) == 100  # never more than asked
    assert Pace(1.0).round_tokens(384, seconds=12.0) == MIN_ROUND_TOKENS  # a tool call still fits


def test_the_speed_follows_the_rounds() -> None:
    pace = Pace(tokens_per_second=40.0)
    pace.record(tokens=40, seconds=4.0)  # the machine became busy: 10 tokens/s
    assert 10.0 < pace.tokens_per_second < 40.0
    before = pace.tokens_per_second
    pace.record(tokens=2, seconds=10.0)  # too short to measure
    assert pace.tokens_per_second == before


@pytest.mark.parametrize(("cores", "load", "threads"), [(2, 0.1, 2), (2, 1.2, 1), (2, 6.0, 1), (16, 0.0, 8)])
def test_threads_are_the_idle_cores(
    monkeypatch: pytest.MonkeyPatch, cores: int, load: float, threads: int
) -> None:
    monkeypatch.setattr(local.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(local.os, "getloadavg", lambda: (load, load, load))
    local.default_threads.cache_clear()
    try:
        assert local.default_threads() == threads
    finally:
        local.default_threads.cache_clear()


def test_an_answering_round_shows_its_text_from_the_action_on() -> None:
    shown = local._Shown(hide_thought=True)
    parts = [
        "Thought: Tool needed: none. The observation 391 ",
        "answers the question.\n\nAct",
        "ion: {",
        '"a"}',
    ]
    out = [shown.take() for part in parts if shown.feed(part)]
    assert "".join(out) == 'Action: {"a"}'
    plain = local._Shown(hide_thought=False)
    assert plain.feed("Thought: x") and plain.take() == "Thought: x"
    cut = local._Shown(hide_thought=True)
    assert not cut.feed("Thought: Tool needed: none. The obs")  # cut short: the caller flushes it
    assert cut.held
