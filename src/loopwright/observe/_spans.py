"""OpenTelemetry spans of agent runs, as a callback: after the GenAI semantic conventions.

``invoke_agent`` per run, with a ``chat`` span per model call and an ``execute_tool`` span per tool
call as its children, and a ``plan`` span per plan of strategy ``"plan"`` (from the plan to the next
plan or the run's end; each step's start and end are its span events); ``gen_ai.*`` attributes
(operation, provider, request model, usage tokens, tool name and call id). Message contents (the
query, the model's text, tool arguments and results) are left out unless ``capture_content=True``.
Only ``opentelemetry-api`` is needed here: spans go to whatever tracer provider the application
configured (none: nothing is recorded).

One ``OtelCallback`` may serve many runs at once: each run's spans live in a context variable of the
task that consumes the run (callbacks are called from that task), and a run started inside another
(an app called as a tool) keeps its own and restores its parent's when it ends.
"""

from __future__ import annotations

import contextvars
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from loopwright.agent import (
    Agent,
    AgentCallback,
    AgentResult,
    PlanCreated,
    PlanStepFinished,
    PlanStepStarted,
    RoundFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from loopwright.observe._observers import AppModel

MAX_CONTENT = 4000  # characters of a captured content attribute


@dataclass(slots=True)
class _RunSpans:
    run: Span
    context: Any  # the OpenTelemetry context with ``run`` as the current span
    parent: _RunSpans | None
    chat: Span | None = None
    chat_ended: int | None = None  # nanoseconds: the reply was read; the span ends with its usage
    text: list[str] = field(default_factory=list)  # the model's text (captured contents only)
    tools: dict[str, Span] = field(default_factory=dict)
    plan: Span | None = None  # strategy "plan": the plan being carried out


_CURRENT: contextvars.ContextVar[_RunSpans | None] = contextvars.ContextVar(
    "loopwright_run_spans", default=None
)


class OtelCallback(AgentCallback):
    """Spans of every run of an agent. ``model`` (the request model) and ``provider`` (``openai``,
    ``local``, …) are the agent's; ``agent_name`` names the ``invoke_agent`` span."""

    def __init__(
        self,
        *,
        model: str = "",
        provider: str = "",
        agent_name: str = "",
        capture_content: bool = False,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self.tracer: Tracer = trace.get_tracer("loopwright", tracer_provider=tracer_provider)
        self.model = model
        self.provider = provider
        self.agent_name = agent_name
        self.capture = capture_content
        self._base: dict[str, Any] = {"gen_ai.provider.name": provider, "gen_ai.system": provider}
        if model:
            self._base["gen_ai.request.model"] = model

    # --- the run ---------------------------------------------------------------------------------

    def on_agent_start(self, query: str) -> None:
        attributes = {**self._base, "gen_ai.operation.name": "invoke_agent"}
        if self.agent_name:
            attributes["gen_ai.agent.name"] = self.agent_name
        if self.capture:
            attributes["gen_ai.input.messages"] = _content([{"role": "user", "content": query}])
        name = f"invoke_agent {self.agent_name}" if self.agent_name else "invoke_agent"
        span = self.tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attributes)
        _CURRENT.set(_RunSpans(span, trace.set_span_in_context(span), _CURRENT.get()))

    def on_agent_finish(self, result: AgentResult) -> None:
        run = _CURRENT.get()
        if run is None:
            return
        u = result.usage
        run.run.set_attribute("gen_ai.usage.input_tokens", u.prompt_tokens)
        run.run.set_attribute("gen_ai.usage.output_tokens", u.completion_tokens)
        run.run.set_attribute("gen_ai.response.finish_reasons", [result.finish_reason])
        if self.capture:
            run.run.set_attribute(
                "gen_ai.output.messages", _content([{"role": "assistant", "content": result.text}])
            )
        self._close(run, None)

    def on_agent_error(self, error: BaseException) -> None:
        run = _CURRENT.get()
        if run is not None:
            self._close(run, error)

    def on_agent_stop(self) -> None:
        run = _CURRENT.get()
        if run is not None:
            run.run.set_attribute("loopwright.run.stopped", True)
            self._close(run, None)

    # --- model calls -----------------------------------------------------------------------------

    def on_llm_start(self, round: int) -> None:
        run = _CURRENT.get()
        if run is None:
            return
        name = f"chat {self.model}" if self.model else "chat"
        attributes = {**self._base, "gen_ai.operation.name": "chat", "loopwright.round": round}
        run.chat = self.tracer.start_span(
            name, context=run.context, kind=SpanKind.CLIENT, attributes=attributes
        )
        run.chat_ended = None
        run.text.clear()

    def on_llm_chunk(self, event: TextDelta) -> None:
        if self.capture:
            run = _CURRENT.get()
            if run is not None:
                run.text.append(event.text)

    def on_llm_end(self, round: int) -> None:
        run = _CURRENT.get()
        if run is not None:
            run.chat_ended = time.time_ns()

    def on_round_end(self, event: RoundFinished) -> None:
        run = _CURRENT.get()
        if run is None or run.chat is None:
            return
        chat, run.chat = run.chat, None
        chat.set_attribute("gen_ai.usage.input_tokens", event.usage.prompt_tokens)
        chat.set_attribute("gen_ai.usage.output_tokens", event.usage.completion_tokens)
        if self.capture and run.text:
            chat.set_attribute(
                "gen_ai.output.messages", _content([{"role": "assistant", "content": "".join(run.text)}])
            )
        chat.end(end_time=run.chat_ended)

    # --- tool calls ------------------------------------------------------------------------------

    def on_tool_start(self, event: ToolCallStarted) -> None:
        run = _CURRENT.get()
        if run is None:
            return
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.name,
            "gen_ai.tool.call.id": event.id,
        }
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = _content(event.arguments)
        span = self.tracer.start_span(
            f"execute_tool {event.name}", context=run.context, kind=SpanKind.INTERNAL, attributes=attributes
        )
        run.tools[event.id] = span

    def on_tool_end(self, event: ToolCallFinished) -> None:
        self._end_tool(event, None)

    def on_tool_error(self, event: ToolCallFinished) -> None:
        self._end_tool(event, event.meta.error or "tool error")

    def _end_tool(self, event: ToolCallFinished, error: str | None) -> None:
        run = _CURRENT.get()
        span = run.tools.pop(event.id, None) if run is not None else None
        if span is None:
            return
        if self.capture:
            span.set_attribute("gen_ai.tool.call.result", _content(event.observation))
        if error is not None:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, error[:MAX_CONTENT]))
        span.end()

    # --- plans (strategy "plan") -----------------------------------------------------------------

    def on_plan(self, event: PlanCreated) -> None:
        run = _CURRENT.get()
        if run is None:
            return
        if run.plan is not None:
            run.plan.end()
        attributes: dict[str, Any] = {
            "loopwright.plan.revision": event.revision,
            "loopwright.plan.steps": len(event.steps),
            "loopwright.round": event.round,
        }
        if event.reason:
            attributes["loopwright.plan.reason"] = event.reason[:MAX_CONTENT]
        if self.capture:
            attributes["loopwright.plan.content"] = _content([s.to_dict() for s in event.steps])
        run.plan = self.tracer.start_span(
            "plan", context=run.context, kind=SpanKind.INTERNAL, attributes=attributes
        )

    def on_plan_step_start(self, event: PlanStepStarted) -> None:
        run = _CURRENT.get()
        if run is not None and run.plan is not None:
            attributes = {"step.id": event.step.id, "gen_ai.tool.name": event.step.tool}
            run.plan.add_event("step_started", attributes)

    def on_plan_step_end(self, event: PlanStepFinished) -> None:
        run = _CURRENT.get()
        if run is not None and run.plan is not None:
            run.plan.add_event("step_finished", {"step.id": event.step.id, "step.status": event.status})

    def _close(self, run: _RunSpans, error: BaseException | None) -> None:
        """End the run's open spans (a stopped or failed run may leave a model or tool call open)."""
        opened = [run.chat, run.plan]
        for span in [*run.tools.values(), *(s for s in opened if s is not None)]:
            span.end()
        if error is not None:
            run.run.set_attribute("error.type", type(error).__qualname__)
            run.run.set_status(Status(StatusCode.ERROR, str(error)[:MAX_CONTENT]))
        run.run.end()
        _CURRENT.set(run.parent)


def span_observer(
    *, capture_content: bool, tracer_provider: TracerProvider | None = None
) -> Callable[[str, AppModel, Agent], OtelCallback]:
    """An observer giving each app's agent its ``OtelCallback``: the run span named after the app, the
    provider from the app's model spec, spans to ``tracer_provider`` (default the global one)."""

    def observer(app_id: str, config: AppModel, agent: Agent) -> OtelCallback:
        provider, _, _ = config.model.partition(":")
        return OtelCallback(
            model=agent.model.name,
            provider=provider,
            agent_name=app_id,
            capture_content=capture_content,
            tracer_provider=tracer_provider,
        )

    return observer


def _content(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_CONTENT else text[:MAX_CONTENT] + "…"
