"""Guardrail against a model stuck calling the same tool with the same arguments (reference §8.3)."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable

from loopwright.agent.errors import AgentRepeatedToolCallError
from loopwright.agent.events import ToolCallRecord

REPEATED_TOOL_CALL_LIMIT = 3


class RepeatGuard:
    """Raises when the last ``limit`` tool calls of a run (in the model's order, across rounds) are
    identical in name and arguments."""

    def __init__(self, limit: int = REPEATED_TOOL_CALL_LIMIT) -> None:
        if limit < 2:
            raise ValueError("the repeated-call limit must be at least 2")
        self.limit = limit
        self._recent: deque[tuple[str, str]] = deque(maxlen=limit)

    def check(self, calls: Iterable[ToolCallRecord]) -> None:
        for call in calls:
            args = call.arguments
            canonical = args if isinstance(args, str) else json.dumps(args, sort_keys=True, ensure_ascii=False)
            self._recent.append((call.name, canonical))
            if len(self._recent) == self.limit and len(set(self._recent)) == 1:
                raise AgentRepeatedToolCallError(call.name, self.limit)
