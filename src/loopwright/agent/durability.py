"""The agent loop's hook for durable execution: where a run can be taken up again after a crash.

A run given a :class:`StepLog` (``Agent.stream(..., steps=...)``) hands it a snapshot of its state
(plain JSON data, the one approvals use: ``agent._snapshot``) at each step boundary and waits until it
is recorded before going on:

- before each model call (the rounds before it are complete);
- after a model reply that asks for tools, before they run (the reply is not asked for again);
- after each tool call of a round but its last (the next round's boundary records the last);
- before a call of a tool that is not idempotent (``@tool(idempotent=False)``) starts.

A run taken up from a snapshot goes on from there: a finished call is never run again; a call that was
running is run again (at least once) — unless its tool is not idempotent, when it gets
:data:`INTERRUPTED_OBSERVATION` instead and the model decides. The app's durable executor
(``app.durable``) records the snapshots as the steps of a DBOS workflow.
"""

from __future__ import annotations

from typing import Any, Protocol

INTERRUPTED_OBSERVATION = (
    "This tool call was interrupted (the server running it stopped) and its result is unknown. It was "
    "not run again because this tool is not idempotent: it may or may not have taken effect. Check "
    "before calling it again."
)


class StepLog(Protocol):
    """Where a durable run records its steps (see the module's docstring)."""

    async def step(self, snapshot: dict[str, Any]) -> None:
        """A step boundary: ``snapshot`` is the run's state to go on from; return once it is kept."""
