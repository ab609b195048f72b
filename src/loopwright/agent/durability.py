"""The agent loop's hook for durable execution: where a run can be taken up again after a crash.

A run given a :class:`StepLog` (``Agent.stream(..., steps=...)``) hands it a snapshot of its state
(a :class:`~loopwright.agent.run_state.RunState` detached from the running one, the unit approvals use
too; ``to_dict`` makes it JSON data) at each step boundary:

- before each model call (the rounds before it are complete);
- after a model reply that asks for tools, before they run (the reply is not asked for again);
- after each tool call of a round but its last (the next round's boundary records the last);
- before a call of a tool that is not idempotent (``@tool(idempotent=False)``) starts.

Before a tool runs (the second and fourth) the run waits until the snapshot is recorded: no tool call
starts before the reply that asked for it is kept, nor a non-idempotent one before its start is. At the
others (``before_effects=False``: a model call or the round's next tool result follows, nothing the
world sees) the log may record it while the run goes on; the next boundary that waits waits for it
too. Either way a snapshot is recorded in the order given, and a step counts as finished once the
boundary after it is recorded: a crash before that runs it again.

A run taken up from a snapshot (``agent.resume_stream(Interruption([], snapshot), [])``) goes on
from there: a finished call is never run again; a call that was running is run again (at least once)
— unless its tool is not idempotent, when it gets :data:`INTERRUPTED_OBSERVATION` instead and the
model decides. The app's durable executor
(``app.run.durable``) records the snapshots as the steps of a DBOS workflow.
"""

from __future__ import annotations

from typing import Protocol

from loopwright.agent.run_state import RunState

INTERRUPTED_OBSERVATION = (
    "This tool call was interrupted (the server running it stopped) and its result is unknown. It was "
    "not run again because this tool is not idempotent: it may or may not have taken effect. Check "
    "before calling it again."
)


class StepLog(Protocol):
    """Where a durable run records its steps (see the module's docstring)."""

    async def step(self, snapshot: RunState, *, before_effects: bool = True) -> None:
        """A step boundary: ``snapshot`` is the run's state to go on from; return once it is kept (or,
        when no effect follows — ``before_effects`` false —, once it is on its way to be kept)."""
