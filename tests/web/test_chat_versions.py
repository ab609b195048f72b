"""Answer versions on the chat page, in a real browser against a real ``loopwright serve``: Regenerate
makes a second version of an answer with a "1 / 2" switcher between them, and editing a sent question
makes a new branch of the conversation, which the switcher leaves and comes back to (also after a
reload, from the history)."""

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
    wait_focused,
)

pytestmark = pytest.mark.timeout(180)

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, ChatApp]]]:
    need_browser()
    specs = {
        "regenerating": {
            "script": {"replies": ["Paris is in France.", "It has 2 million people.", "About 2.1 million."]},
        },
        "editing": {
            "script": {"replies": ["Tea is from China.", "Green, mostly.", "Coffee is from Ethiopia."]},
        },
    }
    for spec in specs.values():
        spec["script"]["features"] = FC
    with serving_apps(tmp_path_factory.mktemp("web-versions"), specs) as served:
        yield served


def answers(page: Any) -> list[str]:
    return [a.strip() for a in page.locator(".exchange .answer").all_inner_texts()]


def wait_done(page: Any, n: int) -> None:
    page.locator(".exchange.status-done").nth(n - 1).wait_for()
    page.wait_for_function("n => document.querySelectorAll('.exchange.status-done').length === n", arg=n)


def test_regenerate_then_switch_between_the_two_answers(world: Any, watched: Any) -> None:
    server, apps = world
    page = watched(viewport=DESKTOP, color_scheme="light").page()
    page.goto(apps["regenerating"].link(server.url))
    send(page, "Where is Paris?")
    wait_done(page, 1)
    send(page, "How many people live there?")
    wait_done(page, 2)
    page.locator(".exchange").nth(1).get_by_role("button", name="Regenerate").click()
    switcher = page.locator(".exchange").nth(1).locator(".version-switcher")
    switcher.get_by_text("2 / 2").wait_for()
    assert answers(page) == ["Paris is in France.", "About 2.1 million."]
    assert page.locator(".exchange").count() == 2  # the new version took the old one's place
    assert page.locator(".exchange").nth(0).locator(".version-switcher").count() == 0
    assert serious_violations(page) == []
    page.screenshot(path=str(screenshot_path("chat-answer-versions")))

    switcher.get_by_role("button", name="Previous version").click()
    switcher.get_by_text("1 / 2").wait_for()
    page.locator(".exchange .answer", has_text="It has 2 million people.").wait_for()
    assert answers(page) == ["Paris is in France.", "It has 2 million people."]
    assert switcher.get_by_role("button", name="Previous version").is_disabled()
    switcher.get_by_role("button", name="Next version").click()
    page.locator(".exchange .answer", has_text="About 2.1 million.").wait_for()

    # after a reload the history shows the newest version, with its switcher
    page.reload()
    page.locator(".exchange .version-switcher").get_by_text("2 / 2").wait_for()
    assert answers(page) == ["Paris is in France.", "About 2.1 million."]


def test_edit_a_question_then_switch_back_to_the_first_branch(world: Any, watched: Any) -> None:
    server, apps = world
    page = watched(viewport=DESKTOP, color_scheme="light").page()
    page.goto(apps["editing"].link(server.url))
    send(page, "Where is tea from?")
    wait_done(page, 1)
    send(page, "Which colour?")
    wait_done(page, 2)

    # edit the first question: a new branch with only the edited question and its answer
    first = page.locator(".exchange").nth(0)
    first.get_by_role("button", name="Edit").click()
    editor = first.get_by_label("Edit the question")
    assert editor.input_value() == "Where is tea from?"
    # Esc leaves the editor, back on its button; Enter opens it again (keyboard alone)
    editor.press("Escape")
    editor.wait_for(state="detached")
    wait_focused(page, "Edit")
    page.keyboard.press("Enter")
    editor.wait_for()
    assert serious_violations(page) == []
    editor.fill("Where is coffee from?")
    editor.press("Enter")
    page.locator(".exchange .version-switcher").get_by_text("2 / 2").wait_for()
    assert page.locator(".user-bubble").all_inner_texts() == ["Where is coffee from?"]
    assert answers(page) == ["Coffee is from Ethiopia."]

    # back to the first branch: both of its messages come back
    page.get_by_role("button", name="Previous version").click()
    page.locator(".exchange .answer", has_text="Green, mostly.").wait_for()
    assert page.locator(".user-bubble").all_inner_texts() == ["Where is tea from?", "Which colour?"]
    assert page.locator(".exchange").nth(0).locator(".version-switcher").inner_text().split() == [
        "‹",
        "1",
        "/",
        "2",
        "›",
    ]
    # and forward again
    page.get_by_role("button", name="Next version").click()
    page.locator(".exchange .answer", has_text="Coffee is from Ethiopia.").wait_for()
    assert page.locator(".exchange").count() == 1
