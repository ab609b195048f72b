"""OpenTelemetry spans of agent runs (GenAI semantic conventions), with the SDK's in-memory exporter
and once over OTLP/HTTP to a receiver on 127.0.0.1 that decodes the protobuf."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from loopwright import Agent, tool
from loopwright.observe import OtelCallback
from loopwright.testing import Reply, ScriptedModel

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def broken(x: str) -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def script() -> ScriptedModel:
    return ScriptedModel(
        [
            Reply.tool_calls(("add", {"a": 2, "b": 3}), ("broken", {"x": "y"}), text="Adding."),
            Reply.text("5"),
        ],
        features=FC,
        name="gpt-test",
    )


def by_name(finished: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name.startswith(prefix)]


async def test_a_run_is_an_invoke_agent_span_with_chat_and_tool_children(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    otel = OtelCallback(model="gpt-test", provider="openai", agent_name="calc", tracer_provider=provider)
    result = await Agent(model=script(), tools=[add, broken], callbacks=[otel]).run("2+3?")
    finished = exporter.get_finished_spans()

    (run,) = by_name(finished, "invoke_agent")
    assert run.name == "invoke_agent calc" and run.parent is None
    assert run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.provider.name"] == "openai"
    assert run.attributes["gen_ai.request.model"] == "gpt-test"
    assert run.attributes["gen_ai.usage.input_tokens"] == result.usage.prompt_tokens
    assert run.attributes["gen_ai.usage.output_tokens"] == result.usage.completion_tokens

    chats = by_name(finished, "chat")
    assert [c.name for c in chats] == ["chat gpt-test", "chat gpt-test"]
    tools = by_name(finished, "execute_tool")
    assert sorted(t.name for t in tools) == ["execute_tool add", "execute_tool broken"]
    for child in [*chats, *tools]:
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
    assert sum(int(c.attributes["gen_ai.usage.input_tokens"]) for c in chats) == result.usage.prompt_tokens  # type: ignore[index]

    ok = next(t for t in tools if t.name == "execute_tool add")
    failed = next(t for t in tools if t.name == "execute_tool broken")
    assert ok.attributes is not None and ok.attributes["gen_ai.tool.name"] == "add"
    assert ok.attributes["gen_ai.tool.call.id"] and ok.status.status_code is StatusCode.UNSET
    assert failed.status.status_code is StatusCode.ERROR and "disk on fire" in (
        failed.status.description or ""
    )
    # Contents are off by default: no query, text, arguments or results on any span.
    for span in finished:
        assert not [
            k for k in (span.attributes or {}) if "messages" in k or "arguments" in k or "result" in k
        ]


async def test_contents_are_recorded_only_when_asked(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    otel = OtelCallback(model="gpt-test", capture_content=True, tracer_provider=provider)
    await Agent(model=script(), tools=[add, broken], callbacks=[otel]).run("2+3?")
    finished = exporter.get_finished_spans()
    (run,) = by_name(finished, "invoke_agent")
    assert run.attributes is not None and "2+3?" in str(run.attributes["gen_ai.input.messages"])
    assert '"5"' in str(run.attributes["gen_ai.output.messages"])
    add_span = next(t for t in finished if t.name == "execute_tool add")
    assert add_span.attributes is not None
    assert add_span.attributes["gen_ai.tool.call.result"] == "5"
    assert '"a": 2' in str(add_span.attributes["gen_ai.tool.call.arguments"])


async def test_a_failing_run_ends_its_span_with_the_error(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    model = ScriptedModel([Reply.tool_calls(("add", {"a": 1, "b": 1}))] * 2, features=FC)
    agent = Agent(
        model=model, tools=[add], max_iterations=1, callbacks=[OtelCallback(tracer_provider=provider)]
    )
    with pytest.raises(Exception, match="maximum iteration"):
        await agent.run("go")
    (run,) = by_name(exporter.get_finished_spans(), "invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes is not None and run.attributes["error.type"] == "AgentMaxIterationError"


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: keeps each decoded export request."""

    received: list[ExportTraceServiceRequest] = []
    got = threading.Event()

    def do_POST(self) -> None:  # noqa: N802 - the http.server protocol
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        type(self).received.append(request)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        type(self).got.set()

    def log_message(self, *args: object) -> None:
        return None


async def test_spans_export_over_otlp_http() -> None:
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{server.server_port}/v1/traces")
    provider.add_span_processor(BatchSpanProcessor(exporter))  # exports from its own thread
    try:
        otel = OtelCallback(model="gpt-test", provider="openai", tracer_provider=provider)
        await Agent(model=script(), tools=[add, broken], callbacks=[otel]).run("2+3?")
        assert provider.force_flush(10_000)
        assert _Receiver.got.is_set()
    finally:
        provider.shutdown()
        server.shutdown()
        server.server_close()
        thread.join()
    names = [
        span.name
        for request in _Receiver.received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    assert sorted(names) == sorted(
        ["invoke_agent", "chat gpt-test", "chat gpt-test", "execute_tool add", "execute_tool broken"]
    )


async def test_a_plan_is_a_span_with_its_steps_as_events(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    otel = OtelCallback(model="gpt-test", provider="openai", tracer_provider=provider)
    steps = [
        {"id": "s1", "task": "add", "tool": "add", "arguments": {"a": 1, "b": 2}},
        {"id": "s2", "task": "break", "tool": "broken", "arguments": {"x": "y"}},
    ]
    model = ScriptedModel(
        [Reply.tool_calls(("make_plan", {"steps": steps})), Reply.text("3")], features=FC, name="gpt-test"
    )
    agent = Agent(model=model, tools=[add, broken], strategy="plan", max_replans=0, callbacks=[otel])
    await agent.run("go")
    finished = exporter.get_finished_spans()
    (run,) = by_name(finished, "invoke_agent")
    (plan,) = by_name(finished, "plan")
    assert plan.parent is not None and plan.parent.span_id == run.context.span_id
    assert plan.attributes is not None and plan.attributes["loopwright.plan.steps"] == 2
    ended = [(e.attributes or {}).get("step.status") for e in plan.events if e.name == "step_finished"]
    assert sorted(ended) == ["done", "failed"]  # type: ignore[type-var]
    assert len(by_name(finished, "chat")) == 2  # the plan and the answer: step rounds call no model
    assert len(by_name(finished, "execute_tool")) == 2
