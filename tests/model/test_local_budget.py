"""The embedded model's round budget, thread count and shown text (no model needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.model import local
from loopwright.model._local_budget import (
    MIN_ROUND_TOKENS,
    OUT_OF_TIME,
    Pace,
    RoundPlan,
    out_of_time_answer,
    plan_round,
)


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
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cores: int, load: float, threads: int
) -> None:
    monkeypatch.setattr(local.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(local, "_PROC_LOADAVG", tmp_path / "none")  # no /proc: the load average
    monkeypatch.setattr(local.os, "getloadavg", lambda: (load, load, load))
    local.default_threads.cache_clear()
    try:
        assert local.default_threads() == threads
    finally:
        local.default_threads.cache_clear()


@pytest.mark.parametrize(
    ("running", "own", "threads"), [(1, ["R"], 2), (2, ["R"], 1), (3, ["R"], 1), (2, ["R", "R", "S"], 2)]
)
def test_threads_are_the_cores_no_other_process_runs_on_now(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, running: int, own: list[str], threads: int
) -> None:
    """The tasks running now less this process's own running threads count, not the minute's
    average: the load average of 1.5 left behind by the run just ended does not make an idle
    machine's next run take one thread, nor does this process's own start-up work."""
    loadavg = tmp_path / "loadavg"
    loadavg.write_text(f"1.50 1.20 0.90 {running}/300 4242\n")
    tasks = tmp_path / "task"
    for i, state in enumerate(own):
        (tasks / str(100 + i)).mkdir(parents=True)
        (tasks / str(100 + i) / "stat").write_text(f"{100 + i} (python (x)) {state} 1 2 3\n")
    monkeypatch.setattr(local.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(local, "_PROC_LOADAVG", loadavg)
    monkeypatch.setattr(local, "_PROC_OWN_TASKS", tasks)
    monkeypatch.setattr(local.os, "getloadavg", lambda: (1.5, 1.2, 0.9))
    local.default_threads.cache_clear()
    try:
        assert local.default_threads() == threads
    finally:
        local.default_threads.cache_clear()


def test_a_process_passing_by_is_not_a_neighbour(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another task running at the first reading but gone at a later one (a shell, a process
    ending) leaves the cores idle; one running at every reading keeps one busy."""
    monkeypatch.setattr(local.time, "sleep", lambda seconds: None)
    passing = iter([1, 1, 0, 1, 1])
    monkeypatch.setattr(local, "_others_running", lambda: next(passing))
    assert local._busy_cores() == 0
    monkeypatch.setattr(local, "_others_running", lambda: 1)
    assert local._busy_cores() == 1


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


def test_a_run_budget_shares_its_time_between_rounds_at_the_measured_speed() -> None:
    pace = Pace(tokens_per_second=20.0)  # a short answer (40 tokens) takes 2 s, a tool call 1.6 s
    assert plan_round(pace, round_seconds=12.0, run_left=None, tools=True) == RoundPlan(12.0)
    assert plan_round(pace, round_seconds=12.0, run_left=29.0, tools=True) == RoundPlan(12.0)
    assert plan_round(pace, round_seconds=12.0, run_left=8.0, tools=True) == RoundPlan(6.0)  # 2 s kept
    assert plan_round(pace, round_seconds=12.0, run_left=3.0, tools=True) == RoundPlan(3.0, answer_only=True)
    assert plan_round(pace, round_seconds=12.0, run_left=3.0, tools=False) == RoundPlan(3.0, answer_only=True)
    assert plan_round(pace, round_seconds=None, run_left=0.5, tools=False).out_of_time
    # a slower machine: the same time left holds fewer tokens, and the round must answer sooner
    slow = Pace(tokens_per_second=4.0)  # an answer takes 10 s, a tool call 8 s
    assert plan_round(slow, round_seconds=12.0, run_left=17.0, tools=True).answer_only
    assert plan_round(slow, round_seconds=12.0, run_left=4.0, tools=True).out_of_time


def test_the_out_of_time_answer_is_short_and_honest() -> None:
    assert out_of_time_answer(None) == OUT_OF_TIME
    assert out_of_time_answer("144") == "I ran out of time; the last result was: 144"
    long = out_of_time_answer("x " * 500)
    assert len(long) < 200 and long.endswith("…")


def test_a_choice_that_would_overrun_the_run_scores_nothing_more() -> None:
    from types import SimpleNamespace

    from loopwright.model._local_choice import choose_by_question

    idle = SimpleNamespace(n_tokens=0)  # the run's time is spent before the first option: no decode
    contexts = [("calculator", "Questions for the calculator:\n"), ("none", "Questions that need no tool:\n")]
    assert choose_by_question(idle, contexts, "What is 2 + 2?", in_time=lambda: False) == "none"
