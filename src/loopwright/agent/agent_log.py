"""Dify-style agent logs (reference §8.1–8.2) derived from a run's events.

Each round is a ``round`` log with two kinds of children: one ``thought`` log (the model's text) and
one ``tool_call`` log per call. Logs start with status ``start`` and end ``success`` or ``error``;
feed events to :class:`AgentLogBuilder` as they arrive and it returns the logs each event created or
changed, so a UI can upsert them live.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from loopwright.agent.events import (
    AgentEvent,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)

LogType = Literal["round", "thought", "tool_call"]
LogStatus = Literal["start", "success", "error"]


@dataclass(slots=True)
class AgentLog:
    label: str
    log_type: LogType
    parent_id: str | None = None
    status: LogStatus = "start"
    data: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def finish(self, status: LogStatus = "success", **data: Any) -> None:
        self.status = status
        self.data.update(data)
        finished = time.time()
        self.metadata["finished_at"] = finished
        self.metadata["elapsed_time"] = finished - self.metadata["started_at"]


class AgentLogBuilder:
    """Turns agent events into agent logs. ``logs`` holds every log, in creation order."""

    def __init__(self, model_name: str = "model") -> None:
        self.model_name = model_name
        self.logs: list[AgentLog] = []
        self._round: AgentLog | None = None
        self._thought: AgentLog | None = None
        self._calls: dict[str, AgentLog] = {}
        self._text: list[str] = []

    def add(self, event: AgentEvent) -> list[AgentLog]:
        """Apply one event; return the logs it created or changed."""
        if isinstance(event, RoundStarted):
            self._round = self._new(f"ROUND {event.round}", "round", None)
            self._thought = self._new(f"{self.model_name} Thought", "thought", self._round.id)
            self._text = []
            return [self._round, self._thought]
        if isinstance(event, TextDelta):
            self._text.append(event.text)
            return []
        if isinstance(event, ToolCallStarted):
            log = self._new(f"CALL {event.name}", "tool_call", self._round.id if self._round else None)
            log.data = {"tool_call_id": event.id, "tool_name": event.name, "tool_args": event.arguments}
            self._calls[event.id] = log
            return [log]
        if isinstance(event, ToolCallFinished):
            log = self._calls.pop(event.id)
            failed = event.meta.error is not None
            log.error = event.meta.error
            log.finish(
                "error" if failed else "success",
                output=event.observation,
                files=len(event.files),
                meta=event.meta.to_dict(),
            )
            return [log]
        if isinstance(event, RoundFinished):
            return self._finish_round(event)
        return []

    def _finish_round(self, event: RoundFinished) -> list[AgentLog]:
        assert self._round is not None and self._thought is not None
        self._thought.finish(text="".join(self._text))
        usage = event.usage
        self._round.metadata.update(
            total_tokens=usage.total_tokens, total_price=str(usage.total_price), currency=usage.currency
        )
        self._round.finish(
            tool_calls=[{"name": c.name, "args": c.arguments, "output": c.observation} for c in event.calls],
            final_answer=event.answer,
        )
        return [self._thought, self._round]

    def _new(self, label: str, log_type: LogType, parent_id: str | None) -> AgentLog:
        log = AgentLog(label, log_type, parent_id, metadata={"started_at": time.time()})
        self.logs.append(log)
        return log
