"""The hostile corpus (tests/web/hostile.py) on the pages that show model and tool output besides the
chat page, in Chromium: the console's logs (the conversations list, a conversation's messages, the
agent log with a tool's input and output, the prompts the model received, the eval case made of the
conversation) from a real ``loopwright serve``, and an eval run's HTML report (``loopwright eval
--html``). No script runs, no dialog opens, none of the corpus's elements is kept, and no request
leaves 127.0.0.1 (each context is watched: tests/web/browser.py ``Watch`` aborts and reports any)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from loopwright.evals.html import report_html
from loopwright.evals.results import CaseResult, Check, Report, ToolCall, TurnTrace
from tests.web.browser import (
    DESKTOP,
    ChatApp,
    Server,
    create_apps,
    need_browser,
    start_server,
    stop_server,
)
from tests.web.hostile import ANSWER, HOSTILE, KEPT

pytestmark = pytest.mark.timeout(180)

TOKEN = "hostile-console-token"
USER = HOSTILE[1]  # the end user's id is the client's to choose: shown in the conversations list
QUERY = "Show me this: " + HOSTILE[0] + HOSTILE[2]
TOOL_CODE = "print(" + repr(ANSWER) + ")"  # the tool's input, and (run in the sandbox) its output


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, ChatApp]]:
    need_browser()
    folder = tmp_path_factory.mktemp("hostile-console")
    (folder / "loopwright.toml").write_text(f'admin_token = "{TOKEN}"\n', encoding="utf-8")
    db_path = folder / "console.db"
    replies = [{"tool_calls": [["simple_code", {"language": "python3", "code": TOOL_CODE}]]}, ANSWER]
    spec = {
        "hostile": {
            "script": {"replies": replies, "features": ["tool-call", "stream-tool-call"]},
            "tools": [{"name": "simple_code"}],
        }
    }
    apps = asyncio.run(create_apps(f"sqlite+aiosqlite:///{db_path}", spec, folder))
    server = start_server(folder, db_path)
    try:
        app = apps["hostile"]
        body = {"query": QUERY, "inputs": {}, "user": USER, "response_mode": "blocking"}
        r = httpx.post(
            f"{server.url}/v1/chat-messages",
            json=body,
            headers={"Authorization": f"Bearer {app.key}"},
            timeout=60,
        )
        assert r.status_code == 200 and "The end." in r.json()["answer"], r.text
        yield server, app
    finally:
        stop_server(server)


def _nothing_ran(page: Any, dialogs: list[str], shown: Any) -> None:
    page.mouse.click(5, 5)
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.__pwned") is None
    assert dialogs == []
    assert shown.locator(KEPT).count() == 0
    for i in range(shown.locator("a").count()):
        href = shown.locator("a").nth(i).get_attribute("href") or ""
        assert not href.lower().startswith(("javascript:", "data:")), href


def test_the_consoles_logs_run_no_script_and_reach_no_outside_host(
    world: tuple[Server, ChatApp], watched: Any
) -> None:
    server, app = world
    page = watched(viewport=DESKTOP).page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{server.url}/console")
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Open the console").click()
    page.get_by_role("link", name="New app").wait_for()
    page.goto(f"{server.url}/console#/apps/{app.id}/logs")
    conversations = page.get_by_role("table", name="Conversations")
    conversations.get_by_role("button").first.click()
    message = page.locator(".log-message").first
    message.get_by_text("The end.").first.wait_for()
    message.locator("details.agent-log summary").click()
    tool_output = message.locator(".tool-call pre").nth(1)
    tool_output.wait_for()
    message.get_by_role("button", name="Prompts the model received").click()
    page.get_by_label("Prompts").wait_for()
    page.get_by_role("button", name="Add to eval set").click()
    case = page.get_by_label("Eval case (YAML, editable)")
    case.wait_for()
    # each piece was shown, as text
    assert HOSTILE[0] in message.locator(".query").inner_text()
    assert HOSTILE[3] in message.locator(".answer").inner_text()
    assert "<script>window.__pwned = " in message.locator(".tool-call pre").first.inner_text()  # its input
    if "[exit status" not in tool_output.inner_text():  # the sandbox ran it here
        assert HOSTILE[7] in tool_output.inner_text()
    assert USER in conversations.inner_text()
    assert "The end." in case.input_value()
    _nothing_ran(page, dialogs, page.locator("main"))


def test_an_eval_report_runs_no_script_and_reaches_no_outside_host(watched: Any) -> None:
    turn = TurnTrace(
        query=QUERY,
        answer=ANSWER,
        tool_calls=[ToolCall(name=HOSTILE[4], args={"code": HOSTILE[6]}, output=ANSWER, error=HOSTILE[8])],
        error=HOSTILE[9],
    )
    failing = CaseResult(
        name=HOSTILE[10],
        passed=False,
        checks=[Check(name=HOSTILE[11], passed=False, detail=HOSTILE[12])],
        turns=[turn],
        expected=[{"turn": 1, "answer": HOSTILE[13], "tools": [HOSTILE[14]]}],
    )
    report = Report(set=HOSTILE[15], app=HOSTILE[1], model=HOSTILE[2], cases=[failing])
    html = report_html(report)
    page = watched(viewport=DESKTOP).page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.set_content(html)
    body = page.locator("body")
    assert all(piece in body.inner_text() for piece in (HOSTILE[0], HOSTILE[10], HOSTILE[12], HOSTILE[15]))
    assert HOSTILE[6] in body.inner_text()  # the tool's arguments, shown as JSON
    # the report's own <style> is its one element of the kind: the corpus's are text
    assert page.locator("head style").count() == 1
    _nothing_ran(page, dialogs, body)
