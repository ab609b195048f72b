"""Prometheus figures of agent runs, as a callback: runs by outcome, live runs, run time and time to
first token, tool call times and failures, tokens and price (the collectors of ``_registry``)."""

from __future__ import annotations

from loopwright.agent import Agent, AgentCallback, AgentResult, BudgetExceededError, ToolCallFinished
from loopwright.observe._observers import AppModel
from loopwright.observe._registry import (
    APP_TOKENS,
    BUDGET_STOPS,
    LIVE_RUNS,
    PRICE,
    RUN_SECONDS,
    RUN_TTFT_SECONDS,
    RUNS,
    TOKENS,
    TOOL_ERRORS,
    TOOL_SECONDS,
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
        self.app_prompt_tokens = APP_TOKENS.labels(app_id, "prompt")
        self.app_completion_tokens = APP_TOKENS.labels(app_id, "completion")
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
        self.app_prompt_tokens.inc(m.prompt_tokens)
        self.app_completion_tokens.inc(m.completion_tokens)
        if m.total_price:
            PRICE.labels(self.model, m.currency).inc(float(m.total_price))

    def on_agent_error(self, error: BaseException) -> None:
        self.live.dec()
        self.runs_error.inc()
        if isinstance(error, BudgetExceededError):
            BUDGET_STOPS.labels(self.app, error.cap).inc()

    def on_agent_stop(self) -> None:
        self.live.dec()
        self.runs_stopped.inc()

    def on_tool_end(self, event: ToolCallFinished) -> None:
        TOOL_SECONDS.labels(event.name).observe(event.meta.time_cost)

    def on_tool_error(self, event: ToolCallFinished) -> None:
        TOOL_SECONDS.labels(event.name).observe(event.meta.time_cost)
        TOOL_ERRORS.labels(event.name).inc()


def run_metrics_observer(app_id: str, config: AppModel, agent: Agent) -> RunMetricsCallback:
    """The metrics callback of one app's agent."""
    return RunMetricsCallback(app_id, agent.strategy_kind, config.model)
