"""Prometheus GET /metrics: off by default, behind a bearer token, and what a run records."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr

from loopwright.config import Settings
from loopwright.observe import REGISTRY
from loopwright.server.app import create_app
from loopwright.store.db import Database
from tests.server.conftest import NewApp, ServiceApp, parse_sse

TOKEN = "metrics-secret"
REPLIES: list[Any] = [
    {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}]]},
    "It is 5.",
]


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def chat(client: httpx.AsyncClient, app: ServiceApp, user: str) -> list[dict[str, Any]]:
    body = {"inputs": {}, "query": "2+3?", "user": user, "response_mode": "streaming"}
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 200, r.text
    return parse_sse(r.text)


async def test_metrics_are_off_without_a_token(client: httpx.AsyncClient) -> None:
    r = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 404


async def test_runs_tools_tokens_and_requests_are_recorded(db: Database, new_app: NewApp) -> None:
    server = create_app(db, Settings(metrics_token=SecretStr(TOKEN)))
    app = await new_app(REPLIES, strategy="function-calling")
    failing = await new_app([], name="empty")  # its script has no reply: the run errors
    labels = {"app": app.id, "strategy": "function-calling"}
    before = {
        "ok": value("loopwright_runs_total", **labels, outcome="normal"),
        "tool": value("loopwright_tool_call_duration_seconds_count", tool="calculator"),
        "chat": value(
            "loopwright_http_request_duration_seconds_count",
            method="POST",
            route="/v1/chat-messages",
            status="200",
        ),
    }
    transport = httpx.ASGITransport(app=server)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        await chat(client, app, "user-secret-id")
        events = await chat(client, failing, "someone")
        assert events[-1]["event"] == "error"

        assert (await client.get("/metrics")).status_code == 401
        wrong = await client.get("/metrics", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        r = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text

    assert value("loopwright_runs_total", **labels, outcome="normal") == before["ok"] + 1
    assert value("loopwright_runs_total", app=failing.id, strategy="function-calling", outcome="error") == 1
    assert value("loopwright_live_runs", app=app.id) == 0
    assert value("loopwright_run_duration_seconds_count", **labels) >= 1
    assert value("loopwright_run_time_to_first_token_seconds_count", **labels) >= 1
    assert value("loopwright_tool_call_duration_seconds_count", tool="calculator") == before["tool"] + 1
    tokens = re.findall(
        r'^loopwright_tokens_total\{kind="prompt",model="scripted:[^"]+"\} (\S+)$', text, re.M
    )
    assert max(float(t) for t in tokens) > 0  # the app that answered (the failing one stays at 0)
    chats = value(
        "loopwright_http_request_duration_seconds_count",
        method="POST",
        route="/v1/chat-messages",
        status="200",
    )
    assert chats == before["chat"] + 2
    assert "user-secret-id" not in text and "someone" not in text  # no user is ever a label
    assert 'route="/v1/chat-messages"' in text
    assert value("loopwright_open_streams") == 0 and "loopwright_open_streams " in text  # both streams ended
    assert "loopwright_write_queue_depth " in text


MULTIPROCESS_WORKER = """
import sys
from loopwright.agent import AgentResult
from loopwright.model import Usage
from loopwright.observe import RunMetricsCallback, exposition, forget_process_at_exit
runs = RunMetricsCallback("app-1", "react", "scripted:m")
runs.on_agent_start("q")
runs.on_agent_finish(AgentResult("", [], Usage(), "stop", 1, []))  # one run ended normally
runs.on_agent_start("q")  # and one still running when the process exits
forget_process_at_exit()  # as the server's metrics install() does
if sys.argv[1] == "scrape":
    sys.stdout.write(exposition().decode())
"""


def test_multiprocess_mode_sums_every_workers_values(tmp_path: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for role in ("count", "count", "scrape"):  # three worker processes; the last one answers /metrics
        done = subprocess.run(
            [sys.executable, "-c", MULTIPROCESS_WORKER, role],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    lines = done.stdout.splitlines()
    assert 'loopwright_runs_total{app="app-1",outcome="normal",strategy="react"} 3.0' in lines
    # Live runs are summed over live processes only: the first two have exited.
    assert 'loopwright_live_runs{app="app-1"} 1.0' in lines


def test_tokens_by_app_and_budget_stops_by_cap() -> None:
    from loopwright.agent import AgentResult, BudgetExceededError
    from loopwright.agent.metrics import RunMetrics
    from loopwright.model import Usage
    from loopwright.observe import REGISTRY, RunMetricsCallback

    def sample(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    callback = RunMetricsCallback("app-budgets", "function-calling", "scripted:b")
    before = sample("loopwright_app_tokens_total", app="app-budgets", kind="prompt")
    metrics = RunMetrics(1.0, 0.5, None, 1, 0, 0, 0, 7, 3, Decimal(0), "USD", {})
    callback.on_agent_start("q")
    callback.on_agent_finish(AgentResult("a", [], Usage(), "stop", 1, [], metrics=metrics))
    assert sample("loopwright_app_tokens_total", app="app-budgets", kind="prompt") == before + 7
    callback.on_agent_start("q")
    callback.on_agent_error(BudgetExceededError("budget.run_tokens", 10))
    assert sample("loopwright_budget_stops_total", app="app-budgets", cap="budget.run_tokens") == 1
