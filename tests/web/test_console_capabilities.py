"""The console shows what an app can do beyond its settings, in a real browser against a real
``loopwright serve``: the other wires' endpoints with copy buttons and examples, what the app and an
end user spent on a day (budgets), what the app remembers of an end user (view, edit, delete), and a
logged conversation turned into an eval case to copy or download."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web.browser import (
    DESKTOP,
    ChatApp,
    Server,
    create_apps,
    create_dataset,
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
        },
        "drafter": {"script": {"replies": [f"Draft {n}." for n in range(1, 9)]}},
    }
    db_url = f"sqlite+aiosqlite:///{db_path}"
    apps = asyncio.run(create_apps(db_url, spec, folder))
    asyncio.run(create_dataset(db_url, "handbook", {"leave.md": "Leave is booked two weeks ahead."}))
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


CATALOGUE = Path(__file__).resolve().parents[2] / "web" / "src" / "console" / "i18n.ts"


def console_catalogue() -> dict[str, dict[str, str]]:
    """The console's catalogue (web/src/console/i18n.ts), language → key → text, read from its source."""
    source = CATALOGUE.read_text(encoding="utf-8")
    out: dict[str, dict[str, str]] = {}
    for lang, head in (
        ("en", "const EN = {"),
        ("zh", "const ZH: Record<Key, string> = {"),
        ("ja", "const JA: Record<Key, string> = {"),
    ):
        start = source.index(head)
        block = source[start : source.index("\n};", start)]
        out[lang] = {k: json.loads(v) for k, v in re.findall(r'^  (\w+): ("(?:[^"\\]|\\.)*"),$', block, re.M)}
    assert out["en"] and out["en"].keys() == out["zh"].keys() == out["ja"].keys()
    return out


def english_left(texts: dict[str, dict[str, str]], lang: str) -> list[re.Pattern[str]]:
    """What of the catalogue's English must not show on a page in ``lang``: each English text's fixed
    pieces (around its {placeholders}), for the texts ``lang`` says otherwise, less the pieces that
    ``lang``'s own texts use (names such as URL, API, MCP)."""
    theirs = "\n".join(texts[lang].values())
    pieces: set[str] = set()
    for key, english in texts["en"].items():
        if texts[lang][key] == english:
            continue
        for piece in re.split(r"\{\w+\}", english):
            piece = piece.strip(" .,:;·()“”\"'…—-")
            if len(re.findall(r"[A-Za-z]", piece)) >= 3 and piece not in theirs:
                pieces.add(piece)
    return [
        re.compile(rf"(?<![A-Za-z]){re.escape(p)}(?![A-Za-z])") for p in sorted(pieces, key=len, reverse=True)
    ]


# The page's own words: its text and the names, titles and placeholders of its elements, less what
# users and the server wrote (messages, code and code-like fields, names of things), which may be in
# any language.
SHOWN_WORDS = """() => {
  const page = document.body.cloneNode(true);
  const data = "code, pre, textarea, .thought, .hit-text, .observation-text, .wire h3, .tool-title, h1";
  page.querySelectorAll(data).forEach((e) => e.remove());
  page.querySelectorAll(".query, .answer, .log-message .error-text").forEach((e) =>
    e.childNodes.forEach((n) => { if (n.nodeType === Node.TEXT_NODE) n.textContent = ""; }));
  page.querySelectorAll("details:not([open]) > :not(summary)").forEach((e) => e.remove());
  const names = [...document.querySelectorAll(".wire h3")].map((e) => e.textContent ?? "").filter(Boolean);
  const attributes = [...document.querySelectorAll("[aria-label], [title], [placeholder]")]
    .filter((e) => !e.closest("code, pre, .checks, .mono"))
    .flatMap((e) => ["aria-label", "title", "placeholder"].map((a) => e.getAttribute(a) ?? ""))
    .map((value) => names.reduce((v, name) => v.split(name).join(""), value));
  document.body.appendChild(page);
  page.hidden = false;
  const text = page.innerText;
  page.remove();
  return [text, ...attributes].join("\\n");
}"""


def leftovers(page: Any, english: list[re.Pattern[str]]) -> list[str]:
    """The catalogue's English on the page (there should be none in another language)."""
    shown = page.evaluate(SHOWN_WORDS)
    return sorted({p.pattern for p in english if p.search(shown)})


@pytest.mark.parametrize(("locale", "lang"), [("zh-CN", "zh"), ("ja-JP", "ja")])
def test_the_console_speaks_the_browsers_language(world: Any, watched: Any, locale: str, lang: str) -> None:
    """Every page of the console in the browser's language, with none of the catalogue's English left
    (its words, not a list made by hand): sign-in, apps, a new app, an app's settings, keys and
    wires, versions, logs with an open conversation and its agent log, usage and memory, the knowledge
    bases and one knowledge base."""
    server, app, _ = world
    texts = console_catalogue()
    words = texts[lang]
    english = english_left(texts, lang)
    watch = watched(viewport=DESKTOP, locale=locale)
    watch.allow(r"status of 401")  # the wrong token, on purpose: the server refuses it
    page = watch.page()
    page.goto(f"{server.url}/console")
    assert page.evaluate("document.documentElement.lang") == {"zh": "zh-Hans", "ja": "ja"}[lang]
    assert leftovers(page, english) == []
    # a wrong token: the refusal in the page's language
    page.get_by_label(words["admin_token"]).fill("not-the-token")
    page.get_by_role("button", name=words["open_console"]).click()
    assert words["err_unauthorized"][:6] in page.get_by_role("alert").inner_text()
    page.get_by_label(words["admin_token"]).fill(TOKEN)
    page.get_by_role("button", name=words["open_console"]).click()
    page.get_by_role("link", name=words["new_app"]).wait_for()
    page.get_by_role("link", name="keeper").wait_for()
    assert page.get_by_role("heading", level=1).inner_text() == words["apps"]
    seen = {"apps": leftovers(page, english)}

    def visit(name: str, route: str, ready: Any) -> None:
        page.goto(f"{server.url}/console#{route}")
        ready().wait_for()
        seen[name] = leftovers(page, english)
        assert serious_violations(page) == [], name

    visit("new app", "/apps/new", lambda: page.get_by_role("radiogroup", name=words["kind_title"]))
    assert page.get_by_role("radio", name=words["kind_completion"]).is_visible()
    visit(
        "settings",
        f"/apps/{app.id}/settings",
        lambda: page.get_by_role("group", name=words["builtin_tools"]).get_by_role("checkbox").first,
    )
    page.get_by_role("button", name=words["test_connection"]).click()
    page.get_by_role("status", name=words["connection_test"]).wait_for()
    seen["model test"] = leftovers(page, english)
    visit("keys", f"/apps/{app.id}/keys", lambda: page.get_by_role("list", name=words["wires"]))
    visit(
        "versions",
        f"/apps/{app.id}/versions",
        lambda: page.get_by_role("table", name=words["versions"]).get_by_role("row").nth(1),
    )
    visit(
        "logs",
        f"/apps/{app.id}/logs",
        lambda: page.get_by_role("table", name=words["col_conversations"]).get_by_role("button").first,
    )
    page.get_by_role("table", name=words["col_conversations"]).get_by_role("button").first.click()
    messages = page.get_by_role("list", name=words["col_messages"])
    messages.locator("summary", has_text=words["agent_log"]).first.click()
    messages.get_by_text(words["round_n"].replace("{n}", "1")).first.wait_for()
    page.get_by_role("button", name=words["prompts_button"]).first.click()
    page.get_by_label(words["prompts"]).first.wait_for()
    seen["conversation"] = leftovers(page, english)
    assert serious_violations(page) == []
    page.get_by_role("button", name=words["memory"]).click()
    page.get_by_label(words["working_memory"]).wait_for()
    seen["conversation memory"] = leftovers(page, english)
    visit("usage", f"/apps/{app.id}/usage", lambda: page.get_by_role("table", name=words["per_end_user"]))
    page.get_by_role("table", name=words["per_end_user"]).get_by_role("button", name=words["memory"]).click()
    page.get_by_role("heading", level=3, name=words["observations"]).wait_for()
    seen["usage memory"] = leftovers(page, english)
    page.screenshot(path=str(screenshot_path(f"console-usage-{locale}")))
    visit("knowledge", "/knowledge", lambda: page.get_by_role("link", name="handbook"))
    page.get_by_role("link", name="handbook").click()
    page.get_by_role("table", name=words["kb_documents"]).get_by_role("row").nth(1).wait_for()
    page.get_by_placeholder(words["query_placeholder"]).fill("leave")
    page.get_by_role("button", name=words["kb_search"], exact=True).click()
    page.get_by_role("list", name=words["hits"]).wait_for()
    seen["knowledge base"] = leftovers(page, english)
    assert serious_violations(page) == []
    page.screenshot(path=str(screenshot_path(f"console-{locale}")))
    assert {name: left for name, left in seen.items() if left} == {}


def test_a_conversations_log_marks_answer_versions(world: Any, watched: Any) -> None:
    """A regenerated answer and an edited question (Dify's parent_message_id, as the chat page sends
    them) show in the console's log as versions of their message, not as more messages."""
    server, _, _ = world
    drafter = next(
        a
        for a in httpx.get(f"{server.url}/console/api/apps", headers=ADMIN).json()["data"]
        if a["name"] == "drafter"
    )
    key = httpx.post(f"{server.url}/console/api/apps/{drafter['id']}/keys", headers=ADMIN).json()["token"]

    def send(query: str, **where: Any) -> dict[str, Any]:
        body = {"query": query, "inputs": {}, "user": "bob", "response_mode": "blocking", **where}
        r = httpx.post(
            f"{server.url}/v1/chat-messages",
            json=body,
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        )
        assert r.status_code == 200, r.text
        answer: dict[str, Any] = r.json()
        return answer

    first = send("Plan a trip.")
    conversation = {"conversation_id": first["conversation_id"]}
    send("And the budget?", **conversation)
    send("And the budget?", **conversation, parent_message_id=first["message_id"])  # Regenerate
    send("Plan a short trip.", **conversation, parent_message_id=None)  # the first question, edited

    page = watched(viewport=DESKTOP).page()
    sign_in(page, server)
    page.goto(f"{server.url}/console#/apps/{drafter['id']}/logs")
    page.get_by_role("table", name="Conversations").get_by_role("button", name="Plan a trip.").click()
    entries = page.get_by_role("list", name="Messages").locator("li.log-message")
    entries.nth(3).wait_for()
    marks = [
        e.locator(".versions-line").inner_text() if e.locator(".versions-line").count() else ""
        for e in entries.all()
    ]
    queries = [e.locator(".query").inner_text() for e in entries.all()]
    assert queries == [
        "User: Plan a trip.",
        "User: And the budget?",
        "User: And the budget?",
        "User: Plan a short trip.",
    ]
    assert [" ".join(m.split()) for m in marks] == [
        "version 1 of 2",
        "version 1 of 2",
        "version 2 of 2 regenerated",
        "version 2 of 2 edited question",
    ]
    assert serious_violations(page) == []
    page.screenshot(path=str(screenshot_path("console-log-versions")))
