"""A question the agent asks (the ``ask_user`` tool) on the chat page, in a real browser (Debian's
Chromium through Playwright) against a real ``loopwright serve`` on 127.0.0.1, the apps on scripted
models: the run pauses, the page shows the question with an answer box (or its options as buttons),
the answer goes through the run's human-input form and the rest of the answer streams in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.web.browser import (
    DESKTOP,
    ChatApp,
    Server,
    need_browser,
    screenshot_path,
    send,
    serious_violations,
    serving_apps,
)

pytestmark = pytest.mark.timeout(180)

FC = ["tool-call", "stream-tool-call"]
ASK_CITY = {"tool_calls": [["ask_user", {"question": "Which city do you leave from?"}]]}
ASK_UNITS = {
    "tool_calls": [["ask_user", {"question": "Metric or imperial?", "options": ["metric", "imperial"]}]]
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, ChatApp]]]:
    need_browser()
    tools = [{"name": "ask_user"}]
    specs: dict[str, dict[str, Any]] = {
        "planner": {
            "tools": tools,
            "script": {"replies": [ASK_CITY, "From **Lyon**, then."], "features": FC},
        },
        "units": {"tools": tools, "script": {"replies": [ASK_UNITS, "Metric it is."], "features": FC}},
    }
    with serving_apps(tmp_path_factory.mktemp("ask-user"), specs) as served:
        yield served


def test_the_question_is_answered_on_the_page(world: Any, watched: Any) -> None:
    server, apps = world
    view = watched(viewport=DESKTOP, color_scheme="light").page()
    view.goto(apps["planner"].link(server.url))
    send(view, "Plan my trip.")
    question = view.get_by_role("form", name="The assistant asks you")
    question.wait_for()
    assert question.locator(".question-text").inner_text() == "Which city do you leave from?"
    assert view.locator(".exchange.status-paused").count() == 1
    assert serious_violations(view) == []
    view.screenshot(path=str(screenshot_path("ask-user-question")))
    question.get_by_label("Your answer").fill("Lyon")
    question.get_by_role("button", name="Answer").click()
    view.locator(".exchange.status-done").wait_for()
    assert view.locator(".exchange .answer strong").inner_text() == "Lyon"
    assert view.locator(".question").count() == 0
    # the answer is the tool call's output in the steps
    view.locator("details.steps > summary").click()
    view.locator("details.steps details > summary").first.click()
    assert "Lyon" in view.locator("details.steps").inner_text()


def test_options_are_buttons(world: Any, watched: Any) -> None:
    server, apps = world
    view = watched(viewport=DESKTOP, color_scheme="light").page()
    view.goto(apps["units"].link(server.url))
    send(view, "Convert 5 miles.")
    question = view.get_by_role("form", name="The assistant asks you")
    question.wait_for()
    assert question.get_by_label("Your answer").count() == 0
    question.get_by_role("button", name="imperial").wait_for()
    question.get_by_role("button", name="metric").click()
    view.locator(".exchange.status-done .answer", has_text="Metric it is.").wait_for()
    view.locator("details.steps > summary").click()
    view.locator("details.steps details > summary").first.click()
    assert "metric" in view.locator("details.steps").inner_text()
