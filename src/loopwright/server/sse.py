"""Server-Sent Events: Dify's wire events rendered as frames, and a run's events written to a response.

:class:`FrameEncoder` is the one place that renders a wire event as an SSE frame (``data: {json}``, as
Dify writes it: compact JSON — no space after ``,`` or ``:`` — with ``ensure_ascii=False``), preceded
by the event's number (``id: N``, 1 for a run's first event; pings have none): a client that lost the
connection re-attaches after the last number it saw (``GET /v1/chat-messages/{task_id}/events``,
``app.run.journal``). An ``error`` event's code, status and message come from the error table
(``server.errors``).
``agent_message`` events — nearly every event of a stream — are rendered from a JSON prefix made once
per message: dumping each one whole cost more than everything else the server does for it.

:func:`stream_to` gives a run's events to a streaming response through an :class:`SseSink`: while the
connection takes writes without waiting, the run writes to it from its own task (see ``app.run.runs``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from json.encoder import encode_basestring

from starlette.types import Send

from loopwright.app.dify.events import AgentMessage, ErrorEvent, EventHead, WireEvent
from loopwright.app.run.journal import Replayed
from loopwright.app.run.runs import Ping, Run
from loopwright.server.errors import error_fields

PING_FRAME = "event: ping\n\n"
_DELTA_TAIL = len('""}\n\n')


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def frame(payload: object) -> str:
    """One SSE data frame."""
    return f"data: {_dumps(payload)}\n\n"


class FrameEncoder:
    """Renders the wire events of a stream (one encoder per response), numbering them from 1 in the
    order they are rendered: the order in which the run recorded them (``app.run.runs``)."""

    __slots__ = ("_head", "_prefix", "seq")

    def __init__(self) -> None:
        self._head: EventHead | None = None
        self._prefix = ""
        self.seq = 0  # the number of the last event rendered

    def _delta_prefix(self, head: EventHead) -> str:
        if head is not self._head:
            self._head = head
            # json.dumps of the payload with "answer" last, cut before the answer's value
            self._prefix = frame(AgentMessage(head, "").payload())[:-_DELTA_TAIL]
        return self._prefix

    def encode(self, event: WireEvent | Ping) -> str:
        if type(event) is AgentMessage:
            prefix = self._prefix if event.head is self._head else self._delta_prefix(event.head)
            self.seq = seq = self.seq + 1
            return f"id: {seq}\n{prefix}{encode_basestring(event.answer)}}}\n\n"
        if isinstance(event, Ping):
            return PING_FRAME
        self.seq = seq = self.seq + 1
        if isinstance(event, ErrorEvent):
            code, status, message = error_fields(event.error)
            return f"id: {seq}\n{frame(event.payload_with(code, status, message))}"
        return f"id: {seq}\n{frame(event.payload())}"

    def replayed(self, head: EventHead, event: Replayed) -> str:
        """A stored event (``app.run.journal``) as the frame it was first sent as."""
        item = event.item
        if isinstance(item, str):
            return f"id: {event.seq}\n{self._delta_prefix(head)}{encode_basestring(item)}}}\n\n"
        return f"id: {event.seq}\n{frame(item)}"


class SseSink:
    """A streaming response as the reader of a run: frames sent with the server's ``send``;
    ``writable`` (when the server can say) tells whether a send now would write at once."""

    __slots__ = ("_encode", "_send", "_writable", "direct")

    def __init__(self, send: Send, writable: Callable[[], bool] | None) -> None:
        self._send = send
        self._writable = writable
        self._encode = FrameEncoder().encode
        self.direct = writable is not None

    def ready(self) -> bool:
        return self._writable is not None and self._writable()

    async def write(self, events: Sequence[WireEvent | Ping]) -> None:
        encode = self._encode
        text = encode(events[0]) if len(events) == 1 else "".join([encode(e) for e in events])
        await self._send({"type": "http.response.body", "body": text.encode(), "more_body": True})


async def stream_to(run: Run, send: Send, writable: Callable[[], bool] | None) -> None:
    """Send the run's events as SSE frames until it ends (the caller sends the response's start and
    end). Cancelling this (a client that went away) leaves the run going."""
    await run.pump(SseSink(send, writable))


async def replay_to(
    head: EventHead, events: AsyncIterator[list[Replayed]], send: Send, _writable: Callable[[], bool] | None
) -> None:
    """Send a followed stream's events (``AppRuntime.follow``) as SSE frames until it ends; an empty
    batch (a quiet stream) is a ping."""
    encoder = FrameEncoder()
    try:
        async for batch in events:
            text = "".join([encoder.replayed(head, e) for e in batch]) if batch else PING_FRAME
            await send({"type": "http.response.body", "body": text.encode(), "more_body": True})
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
