"""Observation of agent runs: OpenTelemetry spans and Prometheus metrics, as agent callbacks, and the
switches that turn them on.

What the server and the apps need is here; the parts live in ``_x.py`` modules, one job each:
``_spans`` (``OtelCallback``, and ``span_observer`` giving one to each app's agent), ``_run_metrics``
(``RunMetricsCallback``, ``run_metrics_observer``), ``_registry`` (the Prometheus collectors and their
exposition), ``_observers`` (what an app-agent observer is given), ``_switch`` (the ``OTEL_*``
variables). OpenTelemetry and prometheus_client are imported on first use of a name that needs them,
so a server with both off imports neither.
"""

import importlib
import typing

from loopwright.observe._switch import capture_enabled, otlp_provider, tracing_enabled

if typing.TYPE_CHECKING:
    from loopwright.observe._registry import (
        OPEN_STREAMS,
        REGISTRY,
        REQUEST_SECONDS,
        WRITE_QUEUE,
        exposition,
        forget_process_at_exit,
    )
    from loopwright.observe._run_metrics import RunMetricsCallback, run_metrics_observer
    from loopwright.observe._spans import OtelCallback, span_observer

__all__ = [
    "OPEN_STREAMS",
    "REGISTRY",
    "REQUEST_SECONDS",
    "WRITE_QUEUE",
    "OtelCallback",
    "RunMetricsCallback",
    "capture_enabled",
    "exposition",
    "forget_process_at_exit",
    "otlp_provider",
    "run_metrics_observer",
    "span_observer",
    "tracing_enabled",
]

_LAZY = {
    "OtelCallback": "_spans",
    "RunMetricsCallback": "_run_metrics",
    "run_metrics_observer": "_run_metrics",
    "span_observer": "_spans",
    "OPEN_STREAMS": "_registry",
    "REGISTRY": "_registry",
    "REQUEST_SECONDS": "_registry",
    "WRITE_QUEUE": "_registry",
    "exposition": "_registry",
    "forget_process_at_exit": "_registry",
}


def __getattr__(name: str) -> object:
    """A name of ``_LAZY``, imported on first use and kept."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
