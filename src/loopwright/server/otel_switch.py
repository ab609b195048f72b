"""Whether the server traces with OpenTelemetry, decided without importing it (see server.tracing)."""

from __future__ import annotations

import os
from collections.abc import Mapping

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def tracing_enabled(env: Mapping[str, str] = os.environ) -> bool:
    """An OTLP endpoint is set in the environment."""
    return any(env.get(name) for name in ENDPOINT_VARS)
