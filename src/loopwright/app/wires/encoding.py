"""What every wire's encoder shares: the journal keeps Dify's item of each event, numbered as Dify's
encoder numbers it (so a stream re-attached over Dify's Service API replays any wire's run), while the
frame sent is the wire's own. A quiet stream gets an SSE comment (``: ping``), which every SSE client
skips (Dify's ``event: ping`` is an event with no data, which other wires' clients would try to read)."""

from __future__ import annotations

from loopwright.app.dify.encoder import DifyEncoder, Encoded
from loopwright.app.dify.events import AgentMessage, WireEvent

__all__ = ["COMMENT_PING", "WireEncoder"]

COMMENT_PING = Encoded(None, None, ": ping\n\n")


class WireEncoder(DifyEncoder):
    """The base of another wire's encoder: subclasses say the frames of an event (``""`` for an event
    their wire does not show)."""

    __slots__ = ()

    @property
    def ping(self) -> Encoded:
        return COMMENT_PING

    def encode(self, event: WireEvent) -> Encoded:
        self.seq += 1
        item = event.answer if type(event) is AgentMessage else event.payload()
        return Encoded(event, item, self.frames(event))

    def frames(self, event: WireEvent) -> str:
        raise NotImplementedError
