"""How much one round of the embedded model may take, from its measured speed.

A small model that loses its way writes until ``max_tokens`` — at a few tokens a second on a busy
machine, minutes. Each round therefore gets a budget: at most ``ROUND_SECONDS`` of generation at the
speed measured when the model loaded (a short probe) and kept up to date by every round since (a
moving average, so a machine that became busy lowers it), never fewer than ``MIN_ROUND_TOKENS``
(a tool call and an answer fit well within that); and the round's generation stops at
``ROUND_SECONDS`` of wall clock whatever the count, ending with finish reason ``"length"`` (a reply cut
there is incomplete: on a quiet machine the budget is far above what a reply needs).
"""

from __future__ import annotations

import threading
import time
from typing import Any

ROUND_SECONDS = 12.0
MIN_ROUND_TOKENS = 64
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

    def record(self, tokens: int, seconds: float) -> None:
        """A round generated ``tokens`` in ``seconds`` (rounds too short to measure are ignored)."""
        if tokens < 4 or seconds <= 0:
            return
        with self._lock:
            self.tokens_per_second += _SMOOTHING * (tokens / seconds - self.tokens_per_second)
