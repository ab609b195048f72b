"""How much one round of the embedded model may take, from its measured speed.

A small model that loses its way writes until ``max_tokens`` — at a few tokens a second on a busy
machine, minutes. Each round therefore gets a budget: at most ``ROUND_SECONDS`` of generation at the
speed measured when the model loaded (a short probe) and kept up to date by every round since (a
moving average, so a machine that became busy lowers it), never fewer than ``MIN_ROUND_TOKENS``
(a tool call and an answer fit well within that); and the round's generation stops at
``ROUND_SECONDS`` of wall clock whatever the count, ending with finish reason ``"length"`` (a reply cut
there is incomplete: on a quiet machine the budget is far above what a reply needs).

A whole run gets ``RUN_SECONDS`` (:func:`plan_round`): each round is told how long the run has taken
(``ReactTurn.elapsed``), and gets what is left, less the time a short answer takes at the measured
speed (``ANSWER_TOKENS``) while it may still call a tool. A round with too little left for a tool call
and the answer after it must answer; a round with too little left for an answer does not run the model:
the run ends with a short honest answer (:func:`out_of_time_answer`). The run's token budget is its
time at the measured speed: every round's tokens are bounded by its seconds.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any

ROUND_SECONDS = 12.0
RUN_SECONDS = 30.0
MIN_ROUND_TOKENS = 64
ANSWER_TOKENS = 40  # a short final answer: the fixed thought after an observation and the sentence
TOOL_CALL_TOKENS = 32  # the decision line and a one-line action
PROBE_TOKENS = 8
_SMOOTHING = 0.5  # weight of the newest round in the moving average


class Pace:
    """The model's generation speed in tokens per second, measured and then tracked."""

    def __init__(self, tokens_per_second: float) -> None:
        self._lock = threading.Lock()
        self.tokens_per_second = tokens_per_second

    @classmethod
    def probe(cls, llama: Any) -> Pace:
        """Time ``PROBE_TOKENS`` single-token decodes, as generation does them (then forget them)."""
        text = b" one two three four five six seven eight nine"
        tokens = llama.tokenize(text, add_bos=False)[:PROBE_TOKENS]
        started = time.perf_counter()
        for token in tokens:
            llama.eval([token])
        elapsed = time.perf_counter() - started
        llama.reset()
        return cls(len(tokens) / max(elapsed, 1e-6))

    def round_tokens(self, requested: int, seconds: float = ROUND_SECONDS) -> int:
        """The most tokens a round may generate: ``requested``, bounded by ``seconds`` of work."""
        with self._lock:
            fits = int(self.tokens_per_second * seconds)
        return max(1, min(requested, max(MIN_ROUND_TOKENS, fits)))

    def seconds_for(self, tokens: int) -> float:
        """How long ``tokens`` take to generate at the current speed."""
        with self._lock:
            return tokens / max(self.tokens_per_second, 1e-6)

    def record(self, tokens: int, seconds: float) -> None:
        """A round generated ``tokens`` in ``seconds`` (rounds too short to measure are ignored)."""
        if tokens < 4 or seconds <= 0:
            return
        with self._lock:
            self.tokens_per_second += _SMOOTHING * (tokens / seconds - self.tokens_per_second)


@dataclass(frozen=True, slots=True)
class RoundPlan:
    """What one round may do within its run's budget."""

    seconds: float | None  # the round's generation budget (None: only the token count bounds it)
    answer_only: bool = False  # too little left for a tool call and the answer after it
    out_of_time: bool = False  # too little left for an answer: the model is not run


def plan_round(pace: Pace, *, round_seconds: float | None, run_left: float | None, tools: bool) -> RoundPlan:
    """The round's budget: ``round_seconds`` at most, and within ``run_left`` (the run's seconds still
    unspent; None: no run budget). A round that may call a tool keeps the time of a short answer in
    reserve for the round after it."""
    if run_left is None:
        return RoundPlan(round_seconds)
    answer = pace.seconds_for(ANSWER_TOKENS)
    if run_left < answer / 2:  # not even half an answer's time: writing one would overrun the run
        return RoundPlan(0.0, answer_only=True, out_of_time=True)
    cap = math.inf if round_seconds is None else round_seconds
    if tools and run_left - answer >= pace.seconds_for(TOOL_CALL_TOKENS):
        return RoundPlan(min(cap, run_left - answer))
    return RoundPlan(min(cap, run_left), answer_only=True)


OUT_OF_TIME = "I could not answer that in time."
_RESULT_MAX_CHARS = 120


def out_of_time_answer(observation: str | None) -> str:
    """The answer of a run whose time is spent: honest, short, and with the last tool result when a
    tool had answered (the answer then is likely in it)."""
    if not observation:
        return OUT_OF_TIME
    result = " ".join(observation.split())
    if len(result) > _RESULT_MAX_CHARS:
        result = result[: _RESULT_MAX_CHARS - 1] + "…"
    return f"I ran out of time; the last result was: {result}"
