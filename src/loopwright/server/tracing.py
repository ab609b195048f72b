"""OpenTelemetry traces of the server: each run's spans (``loopwright.observe``) under the caller's
trace when the request carries a W3C ``traceparent`` header.

On when the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is
set (``observe.tracing_enabled``): the server then exports over OTLP/HTTP with the SDK
(``observe.otlp_provider``, ``pip install 'loopwright[otel]'``). Message contents are recorded only
with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``. Off, nothing here is imported.
"""

from __future__ import annotations

from fastapi import FastAPI
from opentelemetry import context, propagate
from opentelemetry.trace import TracerProvider
from starlette.types import ASGIApp, Receive, Scope, Send

from loopwright.app.run.runtime import AppRuntime
from loopwright.observe import capture_enabled, span_observer


class TraceContext:
    """ASGI middleware: a request's ``traceparent``/``tracestate`` become the current context while it
    is handled, so the run it starts (a task created meanwhile) continues the caller's trace."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"] if k in _HEADERS}
        if not carrier:
            await self.app(scope, receive, send)
            return
        token = context.attach(propagate.extract(carrier))
        try:
            await self.app(scope, receive, send)
        finally:
            context.detach(token)


_HEADERS = (b"traceparent", b"tracestate")


def install(
    app: FastAPI,
    runtime: AppRuntime,
    *,
    tracer_provider: TracerProvider | None = None,
    capture_content: bool | None = None,
) -> None:
    """Trace every app's runs (spans to ``tracer_provider``, default the global one) and continue
    incoming traces."""
    capture = capture_content if capture_content is not None else capture_enabled()
    runtime.agent_observers.append(span_observer(capture_content=capture, tracer_provider=tracer_provider))
    app.add_middleware(TraceContext)
