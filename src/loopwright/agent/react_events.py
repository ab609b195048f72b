"""What the ReAct parsers return: text fragments and :class:`Action` objects, in reply order.

Both parsers (``ReactParser``, the robust default, and ``DifyReactParser``, Dify 1.12.1's exact
output) have ``feed(delta) -> list[ParserEvent]`` and ``flush() -> list[ParserEvent]`` and merge
their output the same way, with :func:`merge_events`.
"""

from __future__ import annotations

from loopwright.agent._action_json import Action

__all__ = ["Action", "ParserEvent", "merge_events"]

ParserEvent = str | Action


def merge_events(events: list[ParserEvent]) -> list[ParserEvent]:
    """Joins consecutive strings and drops empty ones."""
    merged: list[ParserEvent] = []
    for ev in events:
        if type(ev) is str:
            if not ev:
                continue
            if merged and type(merged[-1]) is str:
                merged[-1] += ev
                continue
        merged.append(ev)
    return merged
