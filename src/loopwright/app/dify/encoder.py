"""Dify's wire events encoded once: the journal's item and the SSE frame of each event, together.

A run's events are encoded in the run's own task as they happen (``app.run.runs``): the
:class:`Encoded` of an event carries the event itself (for readers that want typed events), its item
for the event journal (``app.run.journal``: an ``agent_message`` delta as its text, any other event as
Dify's payload, an ``error``'s code, status and message already chosen) and its frame — ``id: N`` then
``data: {json}``, as Dify writes it: compact JSON, no space after ``,`` or ``:``, ``ensure_ascii=False``.
Every payload is built once, for both. The numbers are the stream's: 1 for a run's first event, on from
the last stored one for a run that goes on; a client that lost the connection re-attaches after the
last number it saw. ``agent_message`` frames — nearly every event — are rendered from a JSON prefix
made once per message: dumping each one whole cost more than everything else done for it.

A new wire protocol is a sibling of this module (its own encoder) and a sink of the run.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

from loopwright.app.dify.events import AgentMessage, EventHead, WireEvent

__all__ = ["PING", "PING_FRAME", "DifyEncoder", "Encoded", "Item", "frame"]

PING_FRAME = "event: ping\n\n"
_DELTA_TAIL = len('""}\n\n')

Item = str | dict[str, Any]  # an agent_message delta's text, or another event's payload

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def frame(payload: object) -> str:
    """One SSE data frame."""
    return f"data: {_dumps(payload)}\n\n"


class Encoded:
    """One event of a run, encoded: the event (None for a ping), its journal item and its frame."""

    __slots__ = ("event", "frame", "item")

    def __init__(self, event: WireEvent | None, item: Item | None, frame: str) -> None:
        self.event = event
        self.item = item
        self.frame = frame


PING = Encoded(None, None, PING_FRAME)  # a reader sends Dify's ``event: ping`` after a silence


class DifyEncoder:
    """Encodes the events of one stream, numbering them on from ``seq`` (the last number used)."""

    __slots__ = ("_head", "_prefix", "seq")

    def __init__(self, seq: int = 0) -> None:
        self._head: EventHead | None = None
        self._prefix = ""
        self.seq = seq

    @property
    def ping(self) -> Encoded:
        """What a quiet stream gets (the registry's ticker queues it)."""
        return PING

    def _delta_prefix(self, head: EventHead) -> str:
        if head is not self._head:
            self._head = head
            # json.dumps of the payload with "answer" last, cut before the answer's value
            self._prefix = frame(AgentMessage(head, "").payload())[:-_DELTA_TAIL]
        return self._prefix

    def encode(self, event: WireEvent) -> Encoded:
        self.seq = seq = self.seq + 1
        if type(event) is AgentMessage:
            prefix = self._prefix if event.head is self._head else self._delta_prefix(event.head)
            text = event.answer
            return Encoded(event, text, f"id: {seq}\n{prefix}{encode_basestring(text)}}}\n\n")
        payload = event.payload()
        return Encoded(event, payload, f"id: {seq}\n{frame(payload)}")

    def replayed(self, head: EventHead, seq: int, item: Item) -> str:
        """A stored event (``app.run.journal``) as the frame it was first sent as."""
        if isinstance(item, str):
            return f"id: {seq}\n{self._delta_prefix(head)}{encode_basestring(item)}}}\n\n"
        return f"id: {seq}\n{frame(item)}"
