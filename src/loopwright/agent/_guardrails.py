"""Guardrail against a model stuck calling the same tool with the same arguments (reference §8.3)."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable

from loopwright.agent.events import ToolCallRecord

REPEATED_TOOL_CALL_LIMIT = 3


class RepeatGuard:
    """Notices when the last ``limit`` tool calls of a run (in the model's order, across rounds) are
    identical in name and arguments. Identical calls within one round count once: asking for the same
    thing several times at once is odd but finite; asking again every round is the loop to stop."""

    def __init__(self, limit: int = REPEATED_TOOL_CALL_LIMIT) -> None:
        if limit < 2:
            raise ValueError("the repeated-call limit must be at least 2")
        self.limit = limit
        self._recent: deque[tuple[str, str]] = deque(maxlen=limit)

    def repeated(self, calls: Iterable[ToolCallRecord]) -> str | None:
        """The name of the tool called ``limit`` times in a row with the same arguments, if any."""
        signatures = dict.fromkeys((c.name, _canonical(c)) for c in calls)
        for signature in signatures:
            self._recent.append(signature)
            if len(self._recent) == self.limit and len(set(self._recent)) == 1:
                return signature[0]
        return None

    def memory(self) -> list[tuple[str, str]]:
        """What it remembers, to carry over a pause (agent.approvals)."""
        return list(self._recent)

    def restore(self, memory: list[tuple[str, str]]) -> None:
        self._recent.extend(memory)


def repeated_call_note(name: str, times: int) -> str:
    return (
        f"You have called {name} {times} times in a row with the same arguments and got the same result. "
        "Do not call it again: give your final answer now from the observations you have."
    )


def _canonical(call: ToolCallRecord) -> str:
    if isinstance(call.arguments, str):
        return call.arguments
    if call.raw_arguments is not None:
        return call.raw_arguments  # a looping model repeats its own text; no need to re-encode
    return json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
