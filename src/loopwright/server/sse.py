"""Server-Sent Events: a run's encoded events written to a streaming response.

Each event is encoded once, in the run's task (``app.dify.encoder``: its SSE frame and its journal
item together); this module only writes frames. :func:`stream_to` gives a run's events to a streaming
response through an :class:`SseSink`: while the connection takes writes without waiting, the run writes
to it from its own task (see ``app.run.runs``). :func:`replay_to` writes a followed stream's stored
events (``AppRuntime.follow``) as the frames they were first sent as.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence

from starlette.types import Send

from loopwright.app.dify.encoder import PING_FRAME, DifyEncoder, Encoded
from loopwright.app.dify.events import EventHead
from loopwright.app.run.journal import Replayed
from loopwright.app.run.runs import Run


class SseSink:
    """A streaming response as the reader of a run: frames sent with the server's ``send``;
    ``writable`` (when the server can say) tells whether a send now would write at once."""

    __slots__ = ("_send", "_writable", "direct")

    def __init__(self, send: Send, writable: Callable[[], bool] | None) -> None:
        self._send = send
        self._writable = writable
        self.direct = writable is not None

    def ready(self) -> bool:
        return self._writable is not None and self._writable()

    async def write(self, events: Sequence[Encoded]) -> None:
        text = events[0].frame if len(events) == 1 else "".join([e.frame for e in events])
        if not text:  # events this wire does not show (app.wires)
            return
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
    encoder = DifyEncoder()
    try:
        async for batch in events:
            text = "".join([encoder.replayed(head, e.seq, e.item) for e in batch]) if batch else PING_FRAME
            await send({"type": "http.response.body", "body": text.encode(), "more_body": True})
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
