"""Step boundaries of a durable run (agent.durability): where the loop hands its state over, and a
run taken up from each of them — a finished call never runs again, a cut idempotent call runs again,
a cut non-idempotent call gets the "result unknown" observation."""

from __future__ import annotations

import json
from typing import Any

from loopwright import Agent, tool
from loopwright.agent import Finished, ToolCallFinished
from loopwright.agent.approvals import Interruption
from loopwright.agent.durability import INTERRUPTED_OBSERVATION
from loopwright.agent.run_state import RunState
from loopwright.testing import Reply, ScriptedModel

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


class Steps:
    """A step log that keeps every snapshot (a JSON round trip, as a database would)."""

    def __init__(self) -> None:
        self.snapshots: list[dict[str, Any]] = []

    async def step(self, snapshot: RunState, *, before_effects: bool = True) -> None:
        self.snapshots.append(json.loads(snapshot.to_json()))


def counted_agent(model: ScriptedModel, runs: dict[str, int]) -> Agent:
    @tool
    def lookup() -> int:
        """Look the value up."""
        runs["lookup"] += 1
        return 42

    @tool
    def wait() -> str:
        """Wait a while."""
        runs["wait"] += 1
        return "waited"

    @tool(idempotent=False)
    def charge(amount: int) -> str:
        """Charge an amount."""
        runs["charge"] += 1
        return f"charged {amount}"

    return Agent(model=model, tools=[lookup, wait, charge], max_parallel_tools=1)


SCRIPT = [
    Reply.tool_calls(("lookup", {}, "c1"), text="Looking."),
    Reply.tool_calls(("wait", {}, "c2"), ("charge", {"amount": 5}, "c3"), text="Both."),
    Reply.text("Done."),
]


async def test_the_boundaries_of_a_run() -> None:
    runs = {"lookup": 0, "wait": 0, "charge": 0}
    steps = Steps()
    agent = counted_agent(ScriptedModel(SCRIPT, features=FC), runs)
    events = [e async for e in agent.stream("go", steps=steps)]
    assert isinstance(events[-1], Finished) and events[-1].result.text == "Done."
    assert runs == {"lookup": 1, "wait": 1, "charge": 1}
    shape = [
        (s["round"], s["pending"] and [c["observation"] is not None for c in s["pending"]["calls"]])
        for s in steps.snapshots
    ]
    assert shape == [
        (0, None),  # before round 1's model call
        (1, [False]),  # round 1's reply, its call not run
        (1, None),  # before round 2's model call (round 1 and its call done)
        (2, [False, False]),  # round 2's reply
        (2, [True, False]),  # wait done
        (2, [True, False]),  # charge about to start (not idempotent): marked started
        (2, None),  # before round 3's model call
    ]
    assert [s["pending"]["started"] for s in steps.snapshots[3:6]] == [[], [], ["c3"]]
    assert agent.prepare().tools.engine.unsafe_names == {"charge"}


async def resume_from(snapshot: dict[str, Any], replies: list[Reply]) -> tuple[dict[str, int], list[Any]]:
    runs = {"lookup": 0, "wait": 0, "charge": 0}
    agent = counted_agent(ScriptedModel(replies, features=FC), runs)
    events = [
        e
        async for e in agent.resume_stream(Interruption([], RunState.from_dict(snapshot)), [], steps=Steps())
    ]
    return runs, events


async def test_a_run_taken_up_at_each_boundary_runs_each_finished_call_once() -> None:
    steps = Steps()
    agent = counted_agent(ScriptedModel(SCRIPT, features=FC), {"lookup": 0, "wait": 0, "charge": 0})
    [e async for e in agent.stream("go", steps=steps)]
    rest = {
        0: SCRIPT,
        1: SCRIPT[1:],
        2: SCRIPT[1:],
        3: SCRIPT[2:],
        4: SCRIPT[2:],
        5: SCRIPT[2:],
        6: SCRIPT[2:],
    }
    expected = {
        0: {"lookup": 1, "wait": 1, "charge": 1},
        1: {"lookup": 1, "wait": 1, "charge": 1},
        2: {"lookup": 0, "wait": 1, "charge": 1},
        3: {"lookup": 0, "wait": 1, "charge": 1},
        4: {"lookup": 0, "wait": 0, "charge": 1},
        5: {"lookup": 0, "wait": 0, "charge": 0},  # charge had started: not run again
        6: {"lookup": 0, "wait": 0, "charge": 0},
    }
    for k, snapshot in enumerate(steps.snapshots):
        runs, events = await resume_from(snapshot, list(rest[k]))
        assert runs == expected[k], k
        assert isinstance(events[-1], Finished) and events[-1].result.text == "Done.", k
    # the cut non-idempotent call: the model is told its result is unknown
    _, events = await resume_from(steps.snapshots[5], list(SCRIPT[2:]))
    charged = [e for e in events if isinstance(e, ToolCallFinished) and e.name == "charge"]
    assert [e.observation for e in charged] == [INTERRUPTED_OBSERVATION]
    assert [e.meta.error for e in charged] == ["interrupted"]
