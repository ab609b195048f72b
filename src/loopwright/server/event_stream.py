"""An SSE response whose body skips the middleware stack, and may be written by the run itself.

Every ``send`` of a response passes through each middleware's wrapper (Starlette's error and
exception middlewares, FastAPI's own, ours), and Starlette's streaming response adds a task group
per response. A stream sends one body chunk per event — thousands a second under load — and none of
those wrappers does anything with body chunks. So :class:`ServiceAPI` keeps the server's own
``send`` in the scope, and :class:`EventStream` sends its start through the stack (middlewares still
see that the response started) and its body chunks straight to the server.

:func:`writable_now` tells whether such a send would write at once: only then may a run write to
its client from its own task (``app.run.runs``) without a slow reader holding it up.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

RAW_SEND = "loopwright.raw_send"

Body = Callable[[Send, Callable[[], bool] | None], Awaitable[None]]


class ServiceAPI(FastAPI):
    """FastAPI keeping the server's ``send`` of each HTTP request in its scope for :class:`EventStream`."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[RAW_SEND] = send
        await super().__call__(scope, receive, send)


def writable_now(send: Send) -> Callable[[], bool] | None:
    """For the server's own ``send``: a check that a body chunk sent now is written without waiting,
    or None when the server cannot say. ASGI has no such question; uvicorn's send waits only while
    its flow control has paused writing (the client has not read what was written), so with
    uvicorn the answer is that flag. Any other server gets None: its events go through the queue."""
    flow: Any = getattr(getattr(send, "__self__", None), "flow", None)
    if not isinstance(getattr(flow, "write_paused", None), bool):
        return None
    return lambda: not flow.write_paused


class EventStream(Response):
    """``text/event-stream`` whose body is written by ``body(send, writable)`` (``writable``: see
    :func:`writable_now`). A client that goes away gets no more bytes (the server drops sends on a
    closed connection) while the body runs to its end — the run behind it goes on regardless."""

    media_type = "text/event-stream"

    def __init__(self, body: Body, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(headers=headers, media_type=self.media_type)
        # No length: the body is streamed (chunked).
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        self.write_body = body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        raw = scope.get(RAW_SEND, send)
        await self.write_body(raw, writable_now(raw))
        await raw({"type": "http.response.body", "body": b"", "more_body": False})
