"""Whether and where runs are traced, from the standard ``OTEL_*`` variables, decided without importing
OpenTelemetry: on when an OTLP endpoint is set; message contents only when asked for."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from loopwright.errors import UserInputError

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
CAPTURE_VAR = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def tracing_enabled(env: Mapping[str, str] = os.environ) -> bool:
    """An OTLP endpoint is set in the environment."""
    return any(env.get(name) for name in ENDPOINT_VARS)


def capture_enabled(env: Mapping[str, str] = os.environ) -> bool:
    """Spans record message contents (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``)."""
    return env.get(CAPTURE_VAR, "").lower() == "true"


def otlp_provider(env: Mapping[str, str] = os.environ) -> TracerProvider:
    """The SDK's tracer provider exporting over OTLP/HTTP in batches (a background thread), configured
    by the standard ``OTEL_*`` variables (``pip install 'loopwright[otel]'``); its service name is
    ``OTEL_SERVICE_NAME`` (default ``loopwright``)."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:  # a clear error naming the extra, not a bare ModuleNotFoundError
        raise UserInputError(
            f"exporting traces (OTEL_EXPORTER_OTLP_ENDPOINT is set) needs the OpenTelemetry SDK ({exc}): "
            "pip install 'loopwright[otel]'"
        ) from None

    provider = SdkTracerProvider(
        resource=Resource.create({"service.name": env.get("OTEL_SERVICE_NAME", "loopwright")})
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider
