"""The chat page of a chat app and of a completion app (Dify's chat and text generator) in a real
browser (Debian's Chromium through Playwright) against a real ``loopwright serve`` on 127.0.0.1, the
apps on scripted models: a chat app answers with no agent rounds and no agent log; a completion app is
a form and one streamed answer, not a chat thread."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
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

FORM = [
    {
        "variable": "A",
        "label": "Database Type",
        "type": "select",
        "required": True,
        "options": ["MySQL", "PostgreSQL"],
    },
    {"variable": "default_input", "label": "Input", "type": "paragraph", "required": True},
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, ChatApp]]]:
    need_browser()
    specs: dict[str, dict[str, Any]] = {
        "helper": {"mode": "chat", "instruction": "Be kind.", "script": {"replies": ["Hello **there**."]}},
        "sql": {
            "mode": "completion",
            "instruction": "Write SQL for {{A}}: {{default_input}}",
            "user_input_form": FORM,
            "script": {"replies": ["```sql\nSELECT * FROM users;\n```", "SELECT 1;"]},
        },
        "orders": {
            "mode": "completion",
            "instruction": "Write SQL for {{A}}: {{default_input}}",
            "user_input_form": FORM,
            "script": {"replies": ["SELECT * FROM orders;"]},
        },
    }
    with serving_apps(tmp_path_factory.mktemp("chat-apps"), specs) as served:
        yield served


def test_a_chat_app_answers_without_agent_rounds(world: Any, watched: Any) -> None:
    server, apps = world
    view = watched(viewport=DESKTOP, color_scheme="light").page()
    view.goto(apps["helper"].link(server.url))
    send(view, "Hi")
    view.locator(".exchange.status-done").wait_for()
    assert view.locator(".exchange .answer strong").inner_text() == "there"
    assert view.locator(".exchange details.steps").count() == 0  # no "Worked · rounds" for a chat app
    assert view.get_by_role("button", name="Agent log").count() == 0
    view.screenshot(path=str(screenshot_path("chat-app-answer")))


def test_a_completion_app_is_a_form_and_one_answer(world: Any, watched: Any) -> None:
    server, apps = world
    view = watched(viewport=DESKTOP, color_scheme="light").page()
    view.goto(apps["sql"].link(server.url))
    view.get_by_role("button", name="Generate").wait_for()
    assert view.get_by_label("Message").count() == 0  # no chat thread, no composer
    assert view.locator(".conversation-list").count() == 0
    # the form is checked before anything is sent
    view.get_by_role("button", name="Generate").click()
    view.get_by_role("alert").filter(has_text="Database Type").wait_for()
    view.get_by_label("Database Type").select_option("PostgreSQL")
    view.get_by_label("Input").fill("all users")
    view.get_by_role("button", name="Generate").click()
    result = view.locator(".completion-result.status-done")
    result.wait_for()
    assert "SELECT * FROM users;" in result.locator("pre code").inner_text()
    assert serious_violations(view) == []
    view.screenshot(path=str(screenshot_path("completion-app-answer")))
    # a second run replaces the answer: one answer, not a thread
    view.get_by_role("button", name="Generate").click()
    view.locator(".completion-result.status-done .answer", has_text="SELECT 1;").wait_for()
    assert view.locator(".completion-result .answer").count() == 1


def test_a_completion_answer_can_be_copied_and_rated(world: Any, watched: Any) -> None:
    """The answer of a completion app has the chat page's Copy and like/dislike buttons; a rating is
    the message's feedback on the server (Dify's GET /v1/app/feedbacks)."""
    server, apps = world
    app = apps["orders"]
    view = watched(viewport=DESKTOP, permissions=["clipboard-read", "clipboard-write"]).page()
    view.goto(app.link(server.url))
    assert view.get_by_role("button", name="Copy").count() == 0  # nothing to copy before an answer
    view.get_by_label("Database Type").select_option("MySQL")
    view.get_by_label("Input").fill("every order")
    view.get_by_role("button", name="Generate").click()
    result = view.locator(".completion-result.status-done")
    result.wait_for()
    answer = result.locator(".answer").inner_text()
    result.get_by_role("button", name="Copy").click()
    result.get_by_role("button", name="Copied").wait_for()
    assert view.evaluate("navigator.clipboard.readText()").strip() == answer.strip()
    like = result.get_by_role("button", name="Like", exact=True)
    like.click()
    result.locator("button.like[aria-pressed=true]").wait_for()
    result.get_by_label("Feedback comment").fill("Just right.")
    result.get_by_role("button", name="Send").click()
    assert serious_violations(view) == []
    view.screenshot(path=str(screenshot_path("completion-app-feedback")))
    auth = {"Authorization": f"Bearer {app.key}"}
    feedbacks = httpx.get(f"{server.url}/v1/app/feedbacks", headers=auth).json()["data"]
    assert [(f["rating"], f["content"]) for f in feedbacks] == [("like", "Just right.")]
    result.get_by_role("button", name="Dislike", exact=True).click()
    result.locator("button.dislike[aria-pressed=true]").wait_for()
    assert result.locator("button.like[aria-pressed=true]").count() == 0
