"""The console shows what an app can do beyond its settings, in a real browser against a real
``loopwright serve``: the other wires' endpoints with copy buttons and examples, what the app and an
end user spent on a day (budgets), what the app remembers of an end user (view, edit, delete), and a
logged conversation turned into an eval case to copy or download."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.web.browser import (
    DESKTOP,
    ChatApp,
    Server,
    chromium,
    create_apps,
    need_browser,
    screenshot_path,
    serious_violations,
    start_server,
    stop_server,
)

pytestmark = pytest.mark.timeout(180)

TOKEN = "console-capabilities-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


def remembered(server: Server, app: ChatApp, end_user_id: str) -> dict[str, Any]:
    """The end user's memory once its observation is written (behind the run's rows)."""
    deadline = time.monotonic() + 20
    url = f"{server.url}/console/api/apps/{app.id}/end-users/{end_user_id}/memory"
    while True:
        memory: dict[str, Any] = httpx.get(url, headers=ADMIN).json()
        if memory.get("observations") or time.monotonic() > deadline:
            return memory
        time.sleep(0.1)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, ChatApp, str]]:
    need_browser()
    folder = tmp_path_factory.mktemp("console-capabilities")
    (folder / "loopwright.toml").write_text(f'admin_token = "{TOKEN}"\n', encoding="utf-8")
    db_path = folder / "console.db"
    spec = {
        "keeper": {
            "script": {"replies": ["Your favourite colour is teal, noted."], "features": FC},
            "memory": {"long_term": True},
            "budget": {"app_daily_tokens": 1_000_000, "end_user_daily_tokens": 100_000},
        }
    }
    apps = asyncio.run(create_apps(f"sqlite+aiosqlite:///{db_path}", spec, folder))
    server = start_server(folder, db_path)
    try:
        app = apps["keeper"]
        body = {
            "query": "My favourite colour is teal.",
            "inputs": {},
            "user": "alice",
            "response_mode": "blocking",
        }
        r = httpx.post(
            f"{server.url}/v1/chat-messages",
            json=body,
            headers={"Authorization": f"Bearer {app.key}"},
            timeout=60,
        )
        assert r.status_code == 200, r.text
        logs = httpx.get(f"{server.url}/console/api/apps/{app.id}/conversations", headers=ADMIN).json()
        end_user_id = logs["data"][0]["end_user_id"]
        assert remembered(server, app, end_user_id)["observations"], "the observation was never written"
        yield server, app, end_user_id
    finally:
        stop_server(server)


@pytest.fixture(scope="module")
def browser(world: Any) -> Iterator[Any]:
    yield from chromium()


def sign_in(page: Any, server: Server) -> None:
    page.goto(f"{server.url}/console")
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Open the console").click()
    page.get_by_role("link", name="New app").wait_for()


def test_the_other_wires_are_listed_with_copy_buttons(world: Any, watched: Any) -> None:
    server, app, _ = world
    watch = watched(viewport=DESKTOP, permissions=["clipboard-read", "clipboard-write"])
    page = watch.page()
    sign_in(page, server)
    page.goto(f"{server.url}/console#/apps/{app.id}/keys")
    wires = page.get_by_role("list", name="Wires")
    wires.wait_for()
    urls = wires.locator(".wire-url").all_inner_texts()
    assert urls == [
        f"{server.url}/v1",
        f"{server.url}/v1",
        f"{server.url}/v1/responses",
        f"{server.url}/a2a/{app.id}/.well-known/agent-card.json",
        f"{server.url}/mcp",
        f"{server.url}/ag-ui",
    ]
    page.get_by_role("button", name="Copy the A2A agent card URL").click()
    page.get_by_role("status").filter(has_text="Copied.").first.wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == urls[3]
    # the card is where the console says, for the app's key
    card = httpx.get(urls[3], headers={"Authorization": f"Bearer {app.key}"}).json()
    assert card["name"] == "keeper"
    wires.locator("summary", has_text="Example").nth(1).click()
    assert f'base_url="{server.url}/v1"' in wires.locator("pre").nth(1).inner_text()
    assert serious_violations(page) == []
    page.screenshot(path=str(screenshot_path("console-wires")))


def test_usage_and_an_end_users_memory_can_be_seen_edited_and_deleted(world: Any, watched: Any) -> None:
    server, app, end_user_id = world
    page = watched(viewport=DESKTOP).page()
    sign_in(page, server)
    page.goto(f"{server.url}/console#/apps/{app.id}/usage")
    spent = page.get_by_role("table", name="Spending per end user")
    spent.locator("tr", has_text="alice").wait_for()
    spending = page.get_by_label("The app's spending")
    assert "1 run" in spending.inner_text() and "of 1,000,000 tokens" in spending.inner_text()
    bar = page.get_by_role("progressbar", name="alice: tokens spent of the day's cap")
    assert bar.get_attribute("max") == "100000"  # budget.end_user_daily_tokens
    assert 0 < float(bar.get_attribute("value") or 0) <= 100_000
    assert serious_violations(page) == []
    spent.get_by_role("button", name="Memory").click()
    observations = page.get_by_role("list", name="Observations")
    observations.locator("li", has_text="teal").wait_for()
    box = page.get_by_label("Working memory")
    box.fill("Likes teal. Speaks French.")
    page.get_by_role("button", name="Save working memory").click()
    page.get_by_role("status").filter(has_text="Working memory saved.").wait_for()
    assert serious_violations(page) == []
    page.screenshot(path=str(screenshot_path("console-memory")))
    stored = remembered(server, app, end_user_id)
    assert stored["working_memory"] == "Likes teal. Speaks French."
    observations.get_by_role("button", name="Delete").first.click()
    page.get_by_text("None.").wait_for()
    url = f"{server.url}/console/api/apps/{app.id}/end-users/{end_user_id}/memory"
    assert httpx.get(url, headers=ADMIN).json()["observations"] == []

    # another day: nothing counted
    page.get_by_label("Day (UTC)").fill("2020-01-01")
    page.get_by_text("Nothing counted on 2020-01-01").wait_for()


def test_a_logged_conversation_becomes_an_eval_case(world: Any, watched: Any) -> None:
    server, app, _ = world
    page = watched(viewport=DESKTOP, accept_downloads=True).page()
    sign_in(page, server)
    page.goto(f"{server.url}/console#/apps/{app.id}/logs")
    page.get_by_role("table", name="Conversations").get_by_role("button").first.click()
    page.get_by_role("button", name="Add to eval set").click()
    case = page.get_by_label("Eval case (YAML, editable)")
    case.wait_for()
    text = case.input_value()
    assert "My favourite colour is teal." in text
    case.fill(text + "# checked by hand\n")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download").click()
    saved = download.value.path().read_text(encoding="utf-8")
    assert saved.endswith("# checked by hand\n") and "teal" in saved
    assert serious_violations(page) == []


@pytest.mark.parametrize(
    ("locale", "words"),
    [
        (
            "zh-CN",
            {
                "lang": "zh-Hans",
                "token": "管理员令牌",
                "open": "打开控制台",
                "apps": "应用",
                "new": "新建应用",
                "tab": "密钥与聊天",
                "bad": "管理员令牌无效",
                "kb": "知识库",
                "logs": "日志",
                "usage": "用量（最近 30 天）",
            },
        ),
        (
            "ja-JP",
            {
                "lang": "ja",
                "token": "管理者トークン",
                "open": "コンソールを開く",
                "apps": "アプリ",
                "new": "新しいアプリ",
                "tab": "キーとチャット",
                "bad": "管理者トークンが無効です",
                "kb": "ナレッジベース",
                "logs": "ログ",
                "usage": "使用量（過去 30 日）",
            },
        ),
    ],
)
def test_the_console_speaks_the_browsers_language(
    world: Any, watched: Any, locale: str, words: dict[str, str]
) -> None:
    server, app, _ = world
    watch = watched(viewport=DESKTOP, locale=locale)
    watch.allow(r"status of 401")  # the wrong token, on purpose: the server refuses it
    page = watch.page()
    page.goto(f"{server.url}/console")
    assert page.evaluate("document.documentElement.lang") == words["lang"]
    # a wrong token: the refusal in the page's language
    page.get_by_label(words["token"]).fill("not-the-token")
    page.get_by_role("button", name=words["open"]).click()
    assert words["bad"] in page.get_by_role("alert").inner_text()
    page.get_by_label(words["token"]).fill(TOKEN)
    page.get_by_role("button", name=words["open"]).click()
    page.get_by_role("link", name=words["new"]).wait_for()
    assert page.get_by_role("heading", level=1).inner_text() == words["apps"]
    page.get_by_role("link", name="keeper").click()
    page.get_by_role("link", name=words["logs"]).click()
    page.get_by_role("heading", level=2, name=words["usage"]).wait_for()
    page.get_by_role("link", name=words["tab"]).click()
    assert serious_violations(page) == []
    page.screenshot(path=str(screenshot_path(f"console-{locale}")))
    page.get_by_role("navigation").get_by_role("link", name=words["kb"][:2]).click()
    page.get_by_role("heading", level=1, name=words["kb"]).wait_for()
    assert serious_violations(page) == []
