"""The Prometheus collectors, in loopwright's own registry, and their exposition: this process's values,
or every worker's with ``PROMETHEUS_MULTIPROC_DIR`` set (prometheus_client's multiprocess mode).

Labels are bounded: app ids, strategies, tool names and model specs come from the app configurations;
routes are templates, never raw paths; no user or conversation id is ever a label.
"""

from __future__ import annotations

import atexit
import os

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

# Seconds: from a fast tool call to a long agent run.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

# The collectors live in this registry (not the global one), once per process: a second server in the
# same process (tests) adds to the same series.
REGISTRY = CollectorRegistry(auto_describe=True)

REQUEST_SECONDS = Histogram(
    "loopwright_http_request_duration_seconds",
    "HTTP request time, to the end of the response (a stream's whole length).",
    ["method", "route", "status"],
    buckets=_BUCKETS,
    registry=REGISTRY,
)
RUN_SECONDS = Histogram(
    "loopwright_run_duration_seconds",
    "Agent run time, start to answer.",
    ["app", "strategy"],
    buckets=_BUCKETS,
    registry=REGISTRY,
)
RUN_TTFT_SECONDS = Histogram(
    "loopwright_run_time_to_first_token_seconds",
    "From the start of a run to its first streamed text.",
    ["app", "strategy"],
    buckets=_BUCKETS,
    registry=REGISTRY,
)
RUNS = Counter(
    "loopwright_runs", "Agent runs by how they ended.", ["app", "strategy", "outcome"], registry=REGISTRY
)
LIVE_RUNS = Gauge(
    "loopwright_live_runs", "Agent runs in progress.", ["app"], multiprocess_mode="livesum", registry=REGISTRY
)
OPEN_STREAMS = Gauge(
    "loopwright_open_streams",
    "SSE responses being streamed.",
    multiprocess_mode="livesum",
    registry=REGISTRY,
)
WRITE_QUEUE = Gauge(
    "loopwright_write_queue_depth",
    "Database writes queued behind the runs (write-behind), as of the last request's end.",
    multiprocess_mode="livesum",
    registry=REGISTRY,
)
TOOL_SECONDS = Histogram(
    "loopwright_tool_call_duration_seconds", "Tool call time.", ["tool"], buckets=_BUCKETS, registry=REGISTRY
)
TOOL_ERRORS = Counter("loopwright_tool_call_errors", "Failed tool calls.", ["tool"], registry=REGISTRY)
TOKENS = Counter(
    "loopwright_tokens", "Model tokens by kind (prompt, completion).", ["model", "kind"], registry=REGISTRY
)
PRICE = Counter(
    "loopwright_price", "Model price, in the currency's units.", ["model", "currency"], registry=REGISTRY
)
APP_TOKENS = Counter(
    "loopwright_app_tokens",
    "Model tokens by app and kind (prompt, completion).",
    ["app", "kind"],
    registry=REGISTRY,
)
BUDGET_STOPS = Counter(
    "loopwright_budget_stops",
    "Runs stopped by a cap of their app's budget, by the cap (budget.run_tokens, …).",
    ["app", "cap"],
    registry=REGISTRY,
)


def exposition() -> bytes:
    """The metrics in Prometheus' text format: this process's, or every worker's in multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
    return generate_latest(REGISTRY)


def forget_process_at_exit() -> None:
    """In multiprocess mode, drop this process's live gauges when it exits (a worker that crashes
    leaves them until the directory is cleared at the next start)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        atexit.register(multiprocess.mark_process_dead, os.getpid())
