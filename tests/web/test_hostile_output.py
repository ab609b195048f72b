"""Hostile model output in the chat page, in Chromium: script tags, event handlers, ``javascript:`` and
``data:`` links, SVG with scripts, CSS injection, markdown images pointing at outside hosts — rendered
by the chat page from a real ``loopwright serve``. No script runs, no dialog opens, and no request
reaches the network for a host other than 127.0.0.1 (every request past the page's CSP is routed
through the test, which records it and aborts any to another host)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.web.browser import Server, chromium, need_browser, send, serving_apps
from tests.web.hostile import ANSWER, KEPT, OUTSIDE

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Any]]:
    need_browser()
    spec = {"hostile": {"script": {"replies": [ANSWER], "features": ["tool-call"]}}}
    with serving_apps(tmp_path_factory.mktemp("hostile"), spec) as (server, apps):
        yield server, apps["hostile"]


def test_hostile_answers_run_no_script_and_reach_no_outside_host(world: tuple[Server, Any]) -> None:
    server, app = world
    for browser in chromium():
        _render_and_check(browser, server, app)


def _only_loopback(route: Any, left: list[str]) -> None:
    if urlparse(route.request.url).hostname == "127.0.0.1":
        route.continue_()
    else:
        left.append(route.request.url)
        route.abort()


def _render_and_check(browser: Any, server: Server, app: Any) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    requests: list[str] = []
    dialogs: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    left: list[str] = []  # what reached the network stack (past the page's CSP): aborted, recorded
    context.route("**/*", lambda route: _only_loopback(route, left))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(app.link(server.url))
    send(page, "show me everything")
    page.locator(".exchange.status-done").wait_for()
    answer = page.locator(".exchange .answer")
    answer.get_by_text("The end.").wait_for()
    page.mouse.click(5, 5)
    links = answer.locator("a")
    for i in range(links.count()):  # a click on any link the answer kept runs nothing either
        href = links.nth(i).get_attribute("href") or ""
        assert not href.lower().startswith(("javascript:", "data:")), href
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.__pwned") is None
    assert dialogs == []
    assert answer.locator(KEPT).count() == 0
    assert left == [], f"requests would have left 127.0.0.1: {left}"
    # the outside images the answer asked for were refused by the page's CSP (img-src 'self')
    assert all(urlparse(u).hostname in ("127.0.0.1", OUTSIDE) for u in requests)
    assert any(urlparse(u).hostname == "127.0.0.1" for u in requests)
    context.close()
