"""An SSE response whose body skips the middleware stack.

Every ``send`` of a response passes through each middleware's wrapper (Starlette's error and
exception middlewares, FastAPI's own, ours), and Starlette's streaming response adds a task group
per response. A stream sends one body chunk per event — thousands a second under load — and none of
those wrappers does anything with body chunks. So :class:`RawSend`, the outermost middleware of our
own, keeps the send it was given in the scope, and :class:`EventStream` sends its start through the
stack (middlewares still see that the response started) and its body chunks straight to that send.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

RAW_SEND = "loopwright.raw_send"


class RawSend:
    """Keeps this layer's ``send`` in the scope for :class:`EventStream`; add it last (outermost)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[RAW_SEND] = send
        await self.app(scope, receive, send)


class EventStream(Response):
    """``text/event-stream`` from an async iterator of SSE frames. A client that goes away gets no
    more bytes (the server drops sends on a closed connection) while the frames run to their end —
    the run behind them goes on regardless."""

    media_type = "text/event-stream"

    def __init__(self, frames: AsyncIterator[str], headers: Mapping[str, str] | None = None) -> None:
        super().__init__(headers=headers, media_type=self.media_type)
        # No length: the body is streamed (chunked).
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        self.frames = frames

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        body = scope.get(RAW_SEND, send)
        async for frame in self.frames:
            await body({"type": "http.response.body", "body": frame.encode(), "more_body": True})
        await body({"type": "http.response.body", "body": b"", "more_body": False})
