"""Math, diagrams, charts, highlighted languages and handoffs on the chat page, in a real browser against a
real ``loopwright serve``: KaTeX (as MathML), a Mermaid diagram and an ECharts chart drawn as images, a
language highlighted once its chunk has loaded, hostile diagram and chart sources that do nothing, and an
app that hands the conversation to another (the line at the handoff, the answering app's badge). Every
page fails its test on a console error (a CSP refusal included) or a request leaving 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote
from xml.etree import ElementTree

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
    start_server,
    stop_server,
)

pytestmark = pytest.mark.timeout(240)

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]
CHART = {
    "title": {"text": "Visits", "link": "javascript:alert(1)"},
    "xAxis": {"type": "category", "data": ["Mon", "Tue", "Wed"]},
    "yAxis": {"type": "value"},
    "series": [{"type": "bar", "data": [3, 7, 5]}],
}
RICH = "\n\n".join(
    [
        "Pythagoras: $a^2 + b^2 = c^2$, and \\(e^{i\\pi} = -1\\).",
        "$$\n\\int_0^1 x^2\\,dx = \\frac{1}{3}\n$$",
        "```mermaid\ngraph TD\n  Ask[Ask a question] --> Answer[Get an answer]\n```",
        "```echarts\n" + json.dumps(CHART) + "\n```",
        "```rust\nfn main() { let answer = 42; }\n```",
    ]
)
HOSTILE = "\n\n".join(
    [
        '```mermaid\ngraph TD\n  A["<img src=x onerror=alert(1)><script>alert(2)</script>"] --> B\n'
        '  click A "javascript:alert(3)"\n  click B callback\n```',
        "```echarts\n"
        + json.dumps(
            {
                "title": {"text": "<img src=x onerror=alert(4)>", "link": "javascript:alert(5)"},
                "tooltip": {"formatter": "<img src=x onerror=alert(6)>"},
                "graphic": [{"type": "image", "style": {"image": "javascript:alert(7)"}}],
                "xAxis": {"type": "category", "data": ["<script>alert(8)</script>"]},
                "yAxis": {},
                "series": [{"type": "line", "data": [1]}],
            }
        )
        + "\n```",
        "```echarts\n{series: [{type: 'bar', data: (function(){ alert(9) })()}]}\n```",
        "$\\href{javascript:alert(10)}{click}$",
    ]
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, ChatApp]]]:
    need_browser()
    folder = tmp_path_factory.mktemp("web-rendering")
    db_path = folder / "web.db"
    db_url = f"sqlite+aiosqlite:///{db_path}"
    apps = asyncio.run(
        create_apps(
            db_url,
            {
                "rich": {"script": {"replies": [RICH], "features": FC}},
                "hostile": {"script": {"replies": [HOSTILE], "features": FC}},
                "Billing": {"script": {"replies": ["Your invoice is paid."], "features": FC}},
            },
            folder,
        )
    )
    billing = apps["Billing"].id
    handing = {"tool_calls": [[f"handoff_to_{billing}", {"reason": "an invoice question"}]]}
    apps |= asyncio.run(
        create_apps(
            db_url,
            {
                "front": {
                    "script": {"replies": [handing], "features": FC},
                    "handoffs": [{"app": billing, "description": "questions about invoices"}],
                }
            },
            folder,
        )
    )
    server = start_server(folder, db_path)
    try:
        yield server, apps
    finally:
        stop_server(server)


def ask(page: Any, server: Server, app: ChatApp, text: str) -> None:
    page.goto(app.link(server.url))
    send(page, text)
    page.locator(".exchange.status-done").wait_for()


def test_math_a_diagram_a_chart_and_a_language_loaded_on_demand(world: Any, watched: Any) -> None:
    server, apps = world
    watch = watched(viewport=DESKTOP, color_scheme="light")
    page = watch.page()
    loaded: list[str] = []
    page.on("request", lambda r: loaded.append(r.url))
    page.goto(apps["rich"].link(server.url))
    page.get_by_label("Message").wait_for()
    first = list(loaded)
    assert not any(name in url for url in first for name in ("katex", "echarts", "renderer", "rust"))

    ask(page, server, apps["rich"], "Show me everything")
    answer = page.locator(".answer")
    answer.locator("math").first.wait_for()
    assert answer.locator("math").count() == 3
    assert answer.locator("math[display=block]").count() == 1
    mermaid = answer.locator("figure.diagram-mermaid img")
    chart = answer.locator("figure.diagram-echarts img")
    mermaid.wait_for()
    chart.wait_for()
    for img in (mermaid, chart):
        assert img.get_attribute("src").startswith("data:image/svg+xml")
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=img.element_handle())
    assert "Get an answer" in re.sub("<[^>]+>", "", unquote(mermaid.get_attribute("src")))
    assert "Wed" in unquote(chart.get_attribute("src"))
    assert chart.get_attribute("alt") == "Chart" and mermaid.get_attribute("alt") == "Diagram"
    answer.locator("pre.code .hljs-keyword", has_text="fn").wait_for()
    # the heavy renderers came as chunks of their own, after the first load, from this server
    later = loaded[len(first) :]
    assert any("katex" in url for url in later) and any("echarts" in url for url in later)
    assert any(url.endswith("/chat-renderer") for url in later)
    assert serious_violations(page) == []
    page.screenshot(path=str(screenshot_path("chat-math-diagram-chart")), full_page=True)


def test_hostile_diagram_chart_and_math_sources_do_nothing(world: Any, watched: Any) -> None:
    server, apps = world
    watch = watched(viewport=DESKTOP)
    # Mermaid decodes a label's entities through an element of its frame's document: the frame's CSP
    # (script-src 'self', /chat-renderer) refuses the label's onerror handler, and says so.
    watch.allow(r"^Executing inline event handler violates the following Content Security Policy")
    page = watch.page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.add_init_script("window.__alerts = []; window.alert = (m) => window.__alerts.push(String(m));")
    ask(page, server, apps["hostile"], "Draw these")
    answer = page.locator(".answer")
    mermaid = answer.locator("figure.diagram-mermaid img")
    mermaid.wait_for()
    answer.locator("figure.diagram-echarts img").wait_for()
    # the block that is not JSON stays code, with the reason it was not drawn
    answer.locator(".diagram-error").wait_for()
    assert "alert(9)" in answer.locator("pre.code", has_text="alert(9)").inner_text()
    # whatever the sources said, the answer has no script, handler, link or frame of theirs
    assert answer.locator("script, iframe, a, [onerror], [onclick], svg image").count() == 0
    attributes = page.evaluate(
        "() => [...document.querySelectorAll('.answer *')].flatMap(e => [...e.attributes].map(a => a.value))"
    )
    assert not any(value.startswith("javascript:") for value in attributes)
    # the drawn images hold no script, handler or javascript: link either (and could not run one)
    for img in answer.locator("figure.diagram img").all():
        svg = ElementTree.fromstring(unquote(img.get_attribute("src")).split(",", 1)[1])
        for element in svg.iter():
            assert element.tag.rsplit("}", 1)[-1] not in ("script", "img", "foreignObject", "iframe")
            for name, value in element.attrib.items():
                assert not name.rsplit("}", 1)[-1].startswith("on"), (element.tag, name)
                assert "javascript:" not in value, (element.tag, name, value)
    mermaid.click()
    page.locator("figure.diagram-echarts img").click()
    assert page.evaluate("window.__alerts") == [] and dialogs == []
    assert serious_violations(page) == []


def test_a_handoff_shows_its_line_and_who_answers(world: Any, watched: Any) -> None:
    server, apps = world
    watch = watched(viewport=DESKTOP)
    page = watch.page()
    ask(page, server, apps["front"], "My invoice?")
    exchange = page.locator(".exchange").last
    assert exchange.locator(".agent-badge").inner_text() == "Answered by Billing"
    assert exchange.locator(".answer").inner_text() == "Your invoice is paid."
    exchange.locator(".steps > summary").click()
    line = exchange.locator(".handoff-line")
    assert "Billing answers from here on" in line.inner_text() and "an invoice question" in line.inner_text()
    assert exchange.locator(".round .thought", has_text="answers from here on").count() == 0
    assert serious_violations(page) == []

    # after a reload, from the history: the same line and badge
    page.reload()
    exchange = page.locator(".exchange").last
    exchange.locator(".agent-badge").wait_for()
    assert exchange.locator(".agent-badge").inner_text() == "Answered by Billing"
    exchange.locator(".steps > summary").click()
    assert "Billing answers from here on" in exchange.locator(".handoff-line").inner_text()
    page.screenshot(path=str(screenshot_path("chat-handoff")))
