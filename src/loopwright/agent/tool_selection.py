"""Offering a few of many tools each round: the selector protocol the loop asks, and what it tells it.

When an agent has a ``tool_selector``, the loop asks it before each round (except the last, which offers
no tools) which of the agent's tools to offer; the round's ``RoundStarted.offered`` says which were (and
the logging callback writes them). A selector that fails leaves the round with every tool: selection is
an optimisation, never a reason for a run to fail. Ranking lives below the agent (``tools.ranking``);
the agent only knows this protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from loopwright.model.entities import ToolSchema


@dataclass(frozen=True, slots=True)
class ToolChoiceRequest:
    """What a selector sees: the tools, the user's query, the conversation before it (its messages' text,
    oldest first) and the tools already used in the conversation (offered again whatever the ranking)."""

    tools: Sequence[ToolSchema]
    query: str
    conversation: Sequence[str]
    used: frozenset[str]
    round: int


class ToolSelector(Protocol):
    """Chooses the tools a round offers."""

    async def select(self, request: ToolChoiceRequest) -> Sequence[str] | None:
        """The names of the tools to offer, or None to offer all of them."""
        ...
