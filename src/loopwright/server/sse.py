"""Server-Sent Events: a run's encoded events written to a streaming response.

Each event is encoded once, in the run's task (``app.dify.encoder``: its SSE frame and its journal
item together); this module only writes frames. :func:`stream_to` gives a run's events to a streaming
response through an :class:`SseSink`: while the connection takes writes without waiting, the run writes
to it from its own task (see ``app.run.runs``). :func:`replay_to` writes a followed stream's stored
events (``AppRuntime.follow``) as the frames they were first sent as.

Every Dify frame is encoded with its number (``id: N``), which a client needs to re-attach after
it. Dify sends no ``id:`` line, and some hand-written Dify parsers fail on one, so a stream leaves
it out unless the client can use it (:func:`wants_event_ids`, the ``sse_event_ids`` setting).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Sequence

from starlette.requests import Request
from starlette.types import Send

from loopwright.app.dify.encoder import PING_FRAME, DifyEncoder, Encoded
from loopwright.app.dify.events import EventHead
from loopwright.app.run.journal import Replayed
from loopwright.app.run.runs import Run
from loopwright.config import Settings

SSE_MEDIA_TYPE = "text/event-stream"
_ID_LINE = re.compile(r"^id: \d+\n", re.MULTILINE)


def wants_event_ids(request: Request, settings: Settings) -> bool:
    """Whether a new stream's frames carry their ``id:`` line: "auto" gives them to a client that
    can re-attach with them — the server keeps streams (``resumable_streams``) and the client says it
    reads SSE (its ``Accept`` names ``text/event-stream``, as the web app and ``EventSource``-style
    readers do; Dify's SDKs and ``curl`` do not, and read frames as Dify sends them)."""
    if settings.sse_event_ids != "auto":
        return settings.sse_event_ids == "always"
    return settings.resumable_streams and SSE_MEDIA_TYPE in request.headers.get("accept", "").lower()


def without_id(text: str) -> str:
    """Frames without the ``id: N`` lines the encoder put first (a frame's JSON is one line, so no
    other line starts so)."""
    return _ID_LINE.sub("", text)


class SseSink:
    """A streaming response as the reader of a run: frames sent with the server's ``send``;
    ``writable`` (when the server can say) tells whether a send now would write at once."""

    __slots__ = ("_ids", "_send", "_writable", "direct")

    def __init__(self, send: Send, writable: Callable[[], bool] | None, ids: bool = True) -> None:
        self._send = send
        self._writable = writable
        self._ids = ids
        self.direct = writable is not None

    def ready(self) -> bool:
        return self._writable is not None and self._writable()

    async def write(self, events: Sequence[Encoded]) -> None:
        text = events[0].frame if len(events) == 1 else "".join([e.frame for e in events])
        if not text:  # events this wire does not show (app.wires)
            return
        if not self._ids:
            text = without_id(text)
        await self._send({"type": "http.response.body", "body": text.encode(), "more_body": True})


async def stream_to(run: Run, send: Send, writable: Callable[[], bool] | None, *, ids: bool = True) -> None:
    """Send the run's events as SSE frames until it ends (the caller sends the response's start and
    end); ``ids``: with their ``id:`` lines. Cancelling this (a client that went away) leaves the run
    going."""
    await run.pump(SseSink(send, writable, ids))


async def replay_to(
    head: EventHead,
    events: AsyncIterator[list[Replayed]],
    send: Send,
    _writable: Callable[[], bool] | None,
    *,
    ids: bool = True,
) -> None:
    """Send a followed stream's events (``AppRuntime.follow``) as SSE frames until it ends; an empty
    batch (a quiet stream) is a ping. ``ids``: with their ``id:`` lines."""
    encoder = DifyEncoder()
    try:
        async for batch in events:
            text = "".join([encoder.replayed(head, e.seq, e.item) for e in batch]) if batch else PING_FRAME
            if not ids:
                text = without_id(text)
            await send({"type": "http.response.body", "body": text.encode(), "more_body": True})
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
