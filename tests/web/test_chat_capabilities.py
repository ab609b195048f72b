"""The chat page shows what the agent does beyond rounds of tool calls, in a real browser against a real
``loopwright serve``: a plan (strategy "plan") as a checklist that ticks as its steps end, and an app
called as a tool with its progress as a live line under the call and its rounds nested under it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.web.browser import (
    DESKTOP,
    ChatApp,
    Server,
    create_apps,
    need_browser,
    screenshot_path,
    send,
    serious_violations,
    serve_tool_api,
    start_server,
    stop_server,
)

pytestmark = pytest.mark.timeout(180)

SUNNY = "It is sunny in Paris."
FC = ["tool-call", "multi-tool-call", "stream-tool-call"]
PLAN = {
    "steps": [
        {"id": "s1", "task": "add", "tool": "calculator", "arguments": {"expression": "2+3"}},
        {
            "id": "s2",
            "task": "look at the sky",
            "tool": "get_weather",
            "arguments": {"city": "Paris"},
            "after": ["s1"],
        },
    ]
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, ChatApp], Any]]:
    need_browser()
    folder = tmp_path_factory.mktemp("web-capabilities")
    tool_api, tool_server = serve_tool_api()  # its get_weather answers once the test releases it
    openapi = {
        "type": "openapi",
        "spec": f"{tool_api.url}/openapi.json",
        "server_url": tool_api.url,
        "allow_hosts": ["127.0.0.1"],
    }
    try:
        db_path = folder / "web.db"
        db_url = f"sqlite+aiosqlite:///{db_path}"
        first = {
            "planner": {
                "script": {"replies": [{"tool_calls": [["make_plan", PLAN]]}, "5, sunny."], "features": FC},
                "strategy": "plan",
                "tools": [{"name": "calculator"}],
                "toolsets": [openapi],
            },
            "capped": {
                "script": {"replies": ["A long and costly answer."], "features": FC},
                "budget": {"run_tokens": 1},
            },
            "forecaster": {
                "script": {
                    "replies": [{"tool_calls": [["get_weather", {"city": "Paris"}]]}, SUNNY],
                    "features": FC,
                },
                "toolsets": [openapi],
            },
        }
        apps = asyncio.run(create_apps(db_url, first, folder))
        caller = {
            "caller": {
                "script": {
                    "replies": [{"tool_calls": [["forecaster", {"query": "Weather?"}]]}, "Sunny, it says."],
                    "features": FC,
                },
                "toolsets": [{"type": "app", "app_id": apps["forecaster"].id, "name": "forecaster"}],
            }
        }
        apps |= asyncio.run(create_apps(db_url, caller, folder))
        server = start_server(folder, db_path)
    except BaseException:
        tool_server.shutdown()
        tool_server.server_close()
        raise
    try:
        yield server, apps, tool_api
    finally:
        tool_api.release.set()
        stop_server(server)
        tool_server.shutdown()
        tool_server.server_close()


def ask(page: Any, server: Server, app: ChatApp, text: str) -> None:
    page.goto(app.link(server.url))
    send(page, text)


def test_a_plan_ticks_and_a_called_app_shows_its_progress_and_rounds(world: Any, watched: Any) -> None:
    server, apps, tool_api = world
    watch = watched(viewport=DESKTOP, color_scheme="light")
    plan_page, call_page = watch.page(), watch.page()

    # the plan: s1 ends at once, s2 waits for the weather API — the checklist shows one tick of two
    ask(plan_page, server, apps["planner"], "Add 2 and 3, then look at the sky")
    items = plan_page.locator(".plan-item")
    plan_page.locator(".plan-item.done", has_text="add").wait_for()
    assert items.count() == 2
    assert plan_page.locator(".plan-item.pending", has_text="look at the sky").count() == 1
    assert "1 of 2 done" in plan_page.locator(".plan-head").inner_text()
    assert serious_violations(plan_page) == []

    # the called app: its rounds arrive as the call's progress, the latest one live under the call
    ask(call_page, server, apps["caller"], "Weather in Paris?")
    live = call_page.locator(".tool-wrap .tool-progress[role=status]")
    live.wait_for()
    call_page.locator(".tool-progress", has_text="calling get_weather").wait_for()
    assert call_page.locator(".tool-call.running", has_text="forecaster").count() == 1
    assert serious_violations(call_page) == []
    call_page.screenshot(path=str(screenshot_path("chat-called-app-running")))

    tool_api.release.set()
    # the plan ticks its last step (same thought row, sent again) and answers
    plan_page.locator(".exchange.status-done").wait_for()
    plan_page.locator(".steps > summary").click()  # the rounds fold away at the end
    plan_page.locator(".plan-item.done", has_text="look at the sky").wait_for()
    assert "2 of 2 done" in plan_page.locator(".plan-head").inner_text()
    plan_page.screenshot(path=str(screenshot_path("chat-plan-done")))

    # the call's result replaces the live line; its rounds stay, folded, under the call
    call_page.locator(".exchange.status-done").wait_for()
    assert call_page.locator(".tool-progress").count() == 0
    call_page.locator(".steps > summary").click()
    nested = call_page.locator(".sub-rounds")
    assert nested.get_attribute("open") is None
    nested.locator("summary").click()
    lines = nested.locator("li").all_inner_texts()
    assert "calling get_weather" in lines and any(line.startswith("get_weather: ") for line in lines)
    call = call_page.locator(".tool-call", has_text="forecaster")
    call.locator("summary").click()
    assert call.locator(".tool-output").inner_text() == SUNNY
    assert serious_violations(call_page) == []


def test_a_budgets_refusal_is_said_in_plain_words(world: Any, watched: Any) -> None:
    server, apps, _ = world
    watch = watched(viewport=DESKTOP, color_scheme="light")
    watch.allow(r"status of 429")  # the refusal, if it comes before the stream
    page = watch.page()
    ask(page, server, apps["capped"], "Tell me everything")
    page.get_by_role("alert").filter(has_text="spending limit").wait_for()
    assert "budget.run_tokens" not in page.locator(".agent-turn").inner_text()
    assert serious_violations(page) == []
