"""Handoffs between apps: the apps a message may move to, and the run of a message across them.

An app whose configuration lists ``handoffs: [{app: APP_ID, description, history}]`` offers its model
one ``handoff_to_<APP_ID>`` tool per entry (``build_agent``). When a message of such an app starts,
:func:`team_for` gathers the apps it can reach through handoffs, theirs included (a target's own
``handoffs`` let it hand back or on), each with its newest configuration's agent, built as the runtime
builds any app's; an app that is deleted, disabled (``status`` other than ``normal``) or without a
configuration is left out, and a handoff to it answers with a tool error. :meth:`HandoffTeam.stream`
runs the message through :func:`loopwright.agent.handoffs.stream_with_handoffs`: at most
``max_handoffs`` (the conversation's app's setting) hand-overs per message, each target seeing the
history its entry allows plus what was done in the message so far.

The message is stored under the conversation's app, with the app that answered in
``messages.answered_by``; the next message of the conversation starts with that app (when it can still
be reached), so a conversation handed to a specialist stays with it until it hands back. A message
that pauses for approvals in the app it was handed to goes on there when it is resumed.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from loopwright.agent import Agent
from loopwright.agent.events import AgentEvent
from loopwright.agent.handoffs import HandoffStarted, stream_with_handoffs
from loopwright.app.config import AppConfig, Handoff
from loopwright.app.lookup import AppLookup, ConfigVersion
from loopwright.model.entities import PromptMessage
from loopwright.store.db import Database
from loopwright.store.models import App

MAX_TEAM = 16  # apps one message may reach through handoffs, the conversation's own included


@dataclass(frozen=True, slots=True)
class HandoffTeam:
    """The apps one message may move between: their agents and names by app id, the app that answers
    first, the hand-overs allowed, and each handoff's entry by (source, target)."""

    agents: dict[str, Agent]
    names: dict[str, str]
    start: str
    max_handoffs: int
    entries: dict[tuple[str, str], Handoff]

    def stream(
        self, query: str, *, history: Sequence[PromptMessage], **options: Any
    ) -> AsyncGenerator[AgentEvent | HandoffStarted, None]:
        """The message's events across the team (``options`` as ``Agent.stream``'s)."""
        return stream_with_handoffs(
            self.agents,
            self.start,
            query,
            history=history,
            max_handoffs=self.max_handoffs,
            history_filter=self.history_for,
            **options,
        )

    def history_for(self, source: str, target: str, history: Sequence[PromptMessage]) -> list[PromptMessage]:
        """What of the conversation before this message ``target`` sees when ``source`` hands to it."""
        entry = self.entries.get((source, target))
        if entry is None or entry.history == "all":
            return list(history)
        if entry.history == "none" or entry.last_n == 0:
            return []
        return list(history[-entry.last_n :])


async def team_for(
    db: Database,
    lookup: AppLookup,
    app_id: str,
    config: AppConfig,
    agent: Agent,
    agent_for: Callable[[ConfigVersion, str], Awaitable[Agent]],
    last_answered_by: str | None = None,
) -> HandoffTeam:
    """The team of a message of ``app_id`` (running ``config`` on ``agent``); see the module's
    docstring. ``last_answered_by``: the app that answered the conversation's previous message."""
    agents = {app_id: agent}
    configs = {app_id: config}
    entries: dict[tuple[str, str], Handoff] = {}
    waiting = [app_id]
    while waiting:
        source = waiting.pop(0)
        for entry in configs[source].handoffs:
            entries[(source, entry.app)] = entry
            if entry.app in agents or len(agents) >= MAX_TEAM:
                continue
            version = await _available(lookup, entry.app)
            if version is None:
                continue
            agents[entry.app] = await agent_for(version, entry.app)
            configs[entry.app] = version.config
            waiting.append(entry.app)
    start = last_answered_by if last_answered_by in agents else app_id
    return HandoffTeam(agents, await _names(db, list(agents)), start, config.max_handoffs, entries)


async def agent_of(
    lookup: AppLookup, app_id: str, agent_for: Callable[[ConfigVersion, str], Awaitable[Agent]]
) -> Agent | None:
    """The agent of an app a message was handed to (a message that paused there goes on with it);
    None when the app can no longer take it."""
    version = await _available(lookup, app_id)
    return await agent_for(version, app_id) if version is not None else None


async def _available(lookup: AppLookup, app_id: str) -> ConfigVersion | None:
    """The newest configuration of an app a message may be handed to; None when it is deleted,
    disabled or has no configuration."""
    access = await lookup.access(app_id)
    if not access.exists or access.status != "normal":
        return None
    return await lookup.latest_config(app_id)


async def _names(db: Database, app_ids: list[str]) -> dict[str, str]:
    async with db.sessionmaker() as session:
        rows = await session.execute(select(App.id, App.name).where(App.id.in_(app_ids)))
        return {row.id: row.name for row in rows}
