"""The tool calls an agent ran in a round, read from Dify's encoding of the round (``tool`` names joined
with ``;``, ``tool_input`` and ``observation`` as JSON objects keyed per call) — the same reading for a
live ``agent_thought`` event and for a stored thought row, so every wire that shows the agent's tool
calls (OpenAI's, AG-UI, A2A) shows the same calls.

The agent ran these calls: a wire shows them as something that happened, never as calls for the
client to run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loopwright.app.dify.events import AgentThought, WireEvent
from loopwright.store import codec
from loopwright.store.models import MessageAgentThought

__all__ = ["ToolRun", "finished_tool_runs", "stored_tool_runs", "tool_runs"]


@dataclass(frozen=True, slots=True)
class ToolRun:
    """One tool call the agent ran: its id (unique in the message), name, arguments (JSON text) and
    output (the observation the agent saw)."""

    id: str
    name: str
    arguments: str
    output: str


def tool_runs(
    round_id: str, tool: str | None, tool_input: str | None, observation: str | None
) -> list[ToolRun]:
    """The calls of one round (``round_id`` is the thought's id)."""
    names = codec.split_tool_names(tool)
    keys = codec.unique_tool_keys(names)
    inputs = codec.decode_history_inputs(tool, tool_input)
    outputs = codec.decode_history_observations(tool, observation)
    return [
        ToolRun(f"{round_id}-{i}", name, codec.dump_json(inputs.get(key, {})), outputs.get(key, ""))
        for i, (name, key) in enumerate(zip(names, keys, strict=True))
    ]


def finished_tool_runs(event: WireEvent) -> list[ToolRun]:
    """The calls of a round whose tools have answered (its ``agent_thought`` with an observation);
    nothing for any other event (a round that starts, or announces its calls before running them)."""
    if type(event) is not AgentThought or not event.tool or not event.observation:
        return []
    return tool_runs(event.id, event.tool, event.tool_input, event.observation)


def stored_tool_runs(thoughts: Sequence[MessageAgentThought]) -> list[ToolRun]:
    """The calls of a stored message's rounds, in order."""
    return [r for t in thoughts for r in tool_runs(t.id, t.tool, t.tool_input, t.observation)]
