"""Prometheus metrics of the server, over HTTP: off unless ``metrics_token``
(``LOOPWRIGHT_METRICS_TOKEN``) is set, then served at ``GET /metrics`` to a caller that sends
``Authorization: Bearer <token>``.

Where the figures come from (``loopwright.observe``): a callback per app agent
(``AppRuntime.agent_observers``) for runs, tools, tokens and price, and, here, an ASGI middleware for
request latency by route template (``/v1/messages/{message_id}/agent-log``, never a raw path).

With several worker processes set ``PROMETHEUS_MULTIPROC_DIR`` to an empty directory before starting
the server (prometheus_client's multiprocess mode): every worker writes its values there and
``/metrics`` sums them, whichever worker answers.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Iterable

from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopwright.app.run.runtime import AppRuntime
from loopwright.observe import (
    OPEN_STREAMS,
    REQUEST_SECONDS,
    WRITE_QUEUE,
    exposition,
    forget_process_at_exit,
    run_metrics_observer,
)


class RequestMetrics:
    """ASGI middleware: each HTTP request's time by method, route template and status; the open SSE
    streams; and, as each request ends, the depth of the database's write-behind queue."""

    def __init__(self, app: ASGIApp, pending_writes: Callable[[], int]) -> None:
        self.app = app
        self.pending_writes = pending_writes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        streaming = False

        async def watch(message: Message) -> None:
            nonlocal status, streaming
            if message["type"] == "http.response.start":
                status = message["status"]
                streaming = _is_event_stream(message.get("headers", ()))
                if streaming:
                    OPEN_STREAMS.inc()
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if streaming:
                OPEN_STREAMS.dec()
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            REQUEST_SECONDS.labels(scope["method"], template, str(status)).observe(
                time.perf_counter() - started
            )
            WRITE_QUEUE.set(self.pending_writes())


def _is_event_stream(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    return any(k == b"content-type" and v.startswith(b"text/event-stream") for k, v in headers)


def install(app: FastAPI, runtime: AppRuntime, token: str) -> None:
    """Serve ``GET /metrics`` (bearer ``token``), time every request, and record every app's runs."""
    router = APIRouter()
    expected = f"Bearer {token}".encode()

    @router.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        sent = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(sent, expected):
            return Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return Response(exposition(), media_type=CONTENT_TYPE_LATEST)

    app.include_router(router)
    app.add_middleware(RequestMetrics, pending_writes=lambda: runtime.db.writer.pending)
    runtime.agent_observers.append(run_metrics_observer)
    forget_process_at_exit()
