"""OpenTelemetry in the server: a run's spans continue the caller's trace from its traceparent."""

from __future__ import annotations

import subprocess
import sys

import httpx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loopwright.config import Settings
from loopwright.observe import capture_enabled, tracing_enabled
from loopwright.server import tracing
from loopwright.server.app import create_app
from loopwright.store.db import Database
from tests.server.conftest import NewApp, parse_sse

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


async def test_a_run_continues_the_callers_trace(db: Database, new_app: NewApp) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    server = create_app(db, Settings())
    tracing.install(server, server.state.loopwright, tracer_provider=provider)
    app = await new_app(
        [{"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}]]}, "It is 5."],
        strategy="function-calling",
    )
    body = {"inputs": {}, "query": "2+3?", "user": "alice", "response_mode": "streaming"}
    headers = {**app.headers, "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=server), base_url="http://test") as client:
        r = await client.post("/v1/chat-messages", json=body, headers=headers)
        assert r.status_code == 200 and parse_sse(r.text)[-1]["event"] == "message_end"
        untraced = await client.post(
            "/v1/chat-messages", json={**body, "query": "again"}, headers=app.headers
        )
        assert untraced.status_code == 200
    runtime = server.state.loopwright
    await runtime.settled()  # saved, and its database work done, before the test's loop closes
    await runtime.journal.settled()

    finished = exporter.get_finished_spans()
    runs = [s for s in finished if s.name.startswith("invoke_agent")]
    assert len(runs) == 2
    continued = next(s for s in runs if s.parent is not None)
    assert f"{continued.context.trace_id:032x}" == TRACE_ID
    assert continued.parent is not None and f"{continued.parent.span_id:016x}" == PARENT_ID
    assert continued.attributes is not None and continued.attributes["gen_ai.agent.name"] == app.id
    children = [
        s for s in finished if s.context.trace_id == continued.context.trace_id and s is not continued
    ]
    assert sorted(s.name.split()[0] for s in children) == ["chat", "chat", "execute_tool"]
    fresh = next(s for s in runs if s is not continued)
    assert fresh.parent is None and fresh.context.trace_id != continued.context.trace_id
    provider.shutdown()


def test_tracing_is_on_only_with_an_otlp_endpoint() -> None:
    assert not tracing_enabled({})
    assert tracing_enabled({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert tracing_enabled({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"})


def test_contents_are_captured_only_when_asked() -> None:
    assert not capture_enabled({})
    assert capture_enabled({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "TRUE"})
    assert not capture_enabled({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "1"})


def test_the_server_loads_no_span_or_metrics_code_while_both_are_off() -> None:
    """(OpenTelemetry's context API may be imported by a dependency, e.g. the MCP SDK; not by us.)"""
    code = (
        "import sys\n"
        "import loopwright.server.app\n"
        "from loopwright.observe import tracing_enabled\n"
        "tracing_enabled()\n"
        "names = ('loopwright.observe._spans', 'loopwright.observe._registry', 'prometheus_client')\n"
        "print(sorted(m for m in names if m in sys.modules))\n"
    )
    command = [sys.executable, "-c", code]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
