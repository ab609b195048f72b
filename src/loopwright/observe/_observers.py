"""What an observer of an app's agent is given. An observer is an ``AppRuntime.agent_observers``
entry: called with the app's id, its configuration and its built agent, it returns the callback that
observes that agent's runs (``_run_metrics.run_metrics_observer``, ``_spans.span_observer``)."""

from __future__ import annotations

from typing import Protocol


class AppModel(Protocol):
    """What an observer reads of an app's configuration: its model spec (``openai:gpt-4o``)."""

    @property
    def model(self) -> str: ...
