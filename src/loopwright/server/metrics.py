"""Prometheus metrics of the server, with the official ``prometheus_client``: off unless
``metrics_token`` (``LOOPWRIGHT_METRICS_TOKEN``) is set, then served at ``GET /metrics`` to a caller
that sends ``Authorization: Bearer <token>``.

Where the figures come from: an :class:`~loopwright.agent.callbacks.AgentCallback` per app agent
(``AppRuntime.agent_observers``) for runs, tools, tokens and price, and an ASGI middleware for request
latency by route template. Labels are bounded: app ids, strategies, tool names and model specs come
from the app configurations; routes are templates (``/v1/messages/{message_id}/agent-log``), never
raw paths; no user or conversation id is ever a label.

With several worker processes set ``PROMETHEUS_MULTIPROC_DIR`` to an empty directory before starting
the server (prometheus_client's multiprocess mode): every worker writes its values there and
``/metrics`` sums them, whichever worker answers.
"""

from __future__ import annotations

import atexit
import hmac
import os
import time
from collections.abc import Callable, Iterable

from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopwright.agent import AgentCallback, AgentResult, ToolCallFinished
from loopwright.agent.agent import Agent
from loopwright.app.config import AppConfig
from loopwright.app.run.runtime import AppRuntime

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


class RunMetricsCallback(AgentCallback):
    """Records the runs of one app's agent (labels fixed when the agent is built)."""

    def __init__(self, app_id: str, strategy: str, model: str) -> None:
        self.app = app_id
        self.runs_ok = RUNS.labels(app_id, strategy, "normal")
        self.runs_error = RUNS.labels(app_id, strategy, "error")
        self.runs_stopped = RUNS.labels(app_id, strategy, "stopped")
        self.live = LIVE_RUNS.labels(app_id)
        self.seconds = RUN_SECONDS.labels(app_id, strategy)
        self.ttft = RUN_TTFT_SECONDS.labels(app_id, strategy)
        self.prompt_tokens = TOKENS.labels(model, "prompt")
        self.completion_tokens = TOKENS.labels(model, "completion")
        self.model = model

    def on_agent_start(self, query: str) -> None:
        self.live.inc()

    def on_agent_finish(self, result: AgentResult) -> None:
        self.live.dec()
        self.runs_ok.inc()
        m = result.metrics
        if m is None:
            return
        self.seconds.observe(m.total_time)
        if m.time_to_first_token is not None:
            self.ttft.observe(m.time_to_first_token)
        self.prompt_tokens.inc(m.prompt_tokens)
        self.completion_tokens.inc(m.completion_tokens)
        if m.total_price:
            PRICE.labels(self.model, m.currency).inc(float(m.total_price))

    def on_agent_error(self, error: BaseException) -> None:
        self.live.dec()
        self.runs_error.inc()

    def on_agent_stop(self) -> None:
        self.live.dec()
        self.runs_stopped.inc()

    def on_tool_end(self, event: ToolCallFinished) -> None:
        TOOL_SECONDS.labels(event.name).observe(event.meta.time_cost)

    def on_tool_error(self, event: ToolCallFinished) -> None:
        TOOL_SECONDS.labels(event.name).observe(event.meta.time_cost)
        TOOL_ERRORS.labels(event.name).inc()


def run_metrics_observer(app_id: str, config: AppConfig, agent: Agent) -> RunMetricsCallback:
    """``AppRuntime.agent_observers`` entry: the metrics callback of one app's agent."""
    return RunMetricsCallback(app_id, agent.strategy_kind, config.model)


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
