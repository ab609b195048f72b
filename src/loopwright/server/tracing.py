"""OpenTelemetry traces of the server: each run's spans (``agent.callbacks_otel``) under the caller's
trace when the request carries a W3C ``traceparent`` header.

On when the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is
set: the server then exports over OTLP/HTTP with the SDK (``pip install 'loopwright[otel]'``); its
service name is ``OTEL_SERVICE_NAME`` (default ``loopwright``). Message contents are recorded only with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``. Off, nothing here is imported.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from fastapi import FastAPI
from opentelemetry import context, propagate
from opentelemetry.trace import TracerProvider
from starlette.types import ASGIApp, Receive, Scope, Send

from loopwright.agent.agent import Agent
from loopwright.agent.callbacks_otel import OtelCallback
from loopwright.app.config import AppConfig
from loopwright.app.runtime import AppRuntime
from loopwright.config import ConfigError

CAPTURE_VAR = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def otlp_provider(env: Mapping[str, str] = os.environ) -> TracerProvider:
    """The SDK's tracer provider exporting over OTLP/HTTP in batches (a background thread), configured
    by the standard ``OTEL_*`` variables."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigError(
            f"exporting traces (OTEL_EXPORTER_OTLP_ENDPOINT is set) needs the OpenTelemetry SDK ({exc}): "
            "pip install 'loopwright[otel]'"
        ) from None

    provider = SdkTracerProvider(
        resource=Resource.create({"service.name": env.get("OTEL_SERVICE_NAME", "loopwright")})
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


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
    capture = (
        capture_content if capture_content is not None else os.environ.get(CAPTURE_VAR, "").lower() == "true"
    )

    def observer(app_id: str, config: AppConfig, agent: Agent) -> OtelCallback:
        provider, _, _ = config.model.partition(":")
        return OtelCallback(
            model=agent.model.name,
            provider=provider,
            agent_name=app_id,
            capture_content=capture,
            tracer_provider=tracer_provider,
        )

    runtime.agent_observers.append(observer)
    app.add_middleware(TraceContext)
