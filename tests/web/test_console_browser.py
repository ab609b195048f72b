"""The console in a real browser (Debian's Chromium through Playwright) against a real
``loopwright serve`` on 127.0.0.1 with an admin token: create an app, make a key and chat with it on the
chat page; import a Dify DSL file and see its warnings; upload a document to a knowledge base and see it
indexed and found. Screenshots go to tests/web/screenshots/ (LOOPWRIGHT_SCREENSHOTS moves them)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.web.browser import (
    DESKTOP,
    PHONE,
    Server,
    Watch,
    focused_name,
    need_browser,
    screenshot_path,
    send,
    serious_violations,
    serve_tool_api,
    start_server,
    stop_server,
    tab_to,
)

pytestmark = pytest.mark.timeout(180)

TOKEN = "console-browser-test-token"
TOKEN_SLOT = "loopwright.console.token"
DSL = Path(__file__).resolve().parents[1] / "app" / "fixtures" / "dify-agent-app.yml"
HANDBOOK = (
    "# Leave\n\nEvery employee gets 25 vacation days per year.\n\n"
    "# Pets\n\nDogs are welcome in the office on Fridays.\n"
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path, str]]:
    need_browser()
    folder = tmp_path_factory.mktemp("console")
    # The server reads its admin token from loopwright.toml in its working directory.
    (folder / "loopwright.toml").write_text(f'admin_token = "{TOKEN}"\n', encoding="utf-8")
    script = folder / "helper.json"
    script.write_text(
        json.dumps({"replies": ["Hello from the app made in the console."], "features": ["tool-call"]}),
        encoding="utf-8",
    )
    tool_api, tool_server = serve_tool_api()  # an OpenAPI spec on 127.0.0.1 (allowed for tools)
    try:
        server = start_server(folder, folder / "console.db")
        try:
            yield server, script, tool_api.url
        finally:
            stop_server(server)
    finally:
        tool_api.release.set()
        tool_server.shutdown()
        tool_server.server_close()


class Console:
    """A fresh, watched browser context on the console (it fails the test on a console error or a
    request off 127.0.0.1: tests/web/conftest.py)."""

    def __init__(self, watch: Watch, server: Server) -> None:
        self.server = server
        self.watch = watch
        self.context = watch.context
        self.page = watch.page()

    def sign_in(self) -> Any:
        page = self.page
        page.goto(f"{self.server.url}/console")
        page.get_by_label("Admin token").fill(TOKEN)
        page.get_by_role("button", name="Open the console").click()
        page.get_by_role("link", name="New app").wait_for()
        assert page.locator("link[rel=icon]").count() == 1  # no request for /favicon.ico
        return page


@pytest.fixture
def console(watched: Any, world: Any) -> Console:
    return Console(watched(viewport=DESKTOP, accept_downloads=True), world[0])


def test_a_wrong_token_is_refused_plainly(console: Console) -> None:
    console.watch.allow(r"status of 401 \(Unauthorized\)")  # the refused token, on purpose
    page = console.page
    page.goto(f"{console.server.url}/console")
    page.get_by_label("Admin token").fill("not the token")
    page.get_by_role("button", name="Open the console").click()
    page.get_by_role("alert").filter(has_text="admin token is not valid").wait_for()
    assert page.evaluate(f"sessionStorage.getItem('{TOKEN_SLOT}')") is None


def test_create_an_app_make_a_key_and_chat_with_it(console: Console, world: Any) -> None:
    _, script, _ = world
    page = console.sign_in()
    page.get_by_role("link", name="New app").click()
    form = page.get_by_role("form", name="App settings")
    form.get_by_label("Name", exact=True).fill("Console helper")
    form.get_by_label("Model spec").fill(f"scripted:{script}")
    form.get_by_role("button", name="Test connection").click()
    page.get_by_role("status", name="Connection test").filter(has_text="Connected").wait_for()
    form.get_by_label("Instruction").fill("You help {{customer}} politely.")
    page.get_by_text("has no field in the form").wait_for()
    form.get_by_role("button", name="Add a field for it").click()
    assert form.get_by_label("Variable", exact=True).input_value() == "customer"
    form.locator("label.check", has_text="calculator").locator("input").check()
    form.get_by_label("Opening statement").fill("Hello! I was set up in the console.")
    form.get_by_label("Suggested questions (one per line)").fill("What can you do?")
    page.screenshot(path=str(screenshot_path("console-new-app")), full_page=True)
    form.get_by_role("button", name="Create app").click()

    # The new app opens on its keys: make one and open the chat page with it.
    page.get_by_role("heading", name="Console helper").wait_for()
    page.get_by_role("button", name="New key").click()
    key = page.locator(".new-key code.secret").inner_text()
    assert key.startswith("app-")
    page.screenshot(path=str(screenshot_path("console-app-keys")))
    with console.context.expect_page() as opened:
        page.get_by_role("link", name="Open the chat page").click()
    chat = opened.value
    chat.set_default_timeout(20_000)
    chat.get_by_label("Message").wait_for()
    assert "#key=" not in chat.url
    # The admin token stays with the console: the chat page's tab has no copy of it.
    assert chat.evaluate(f"sessionStorage.getItem('{TOKEN_SLOT}')") is None
    chat.get_by_text("I was set up in the console").wait_for()
    chat.get_by_label("customer").fill("Ada")  # the input form the console made
    send(chat, "Hi there")
    chat.locator(".exchange.status-done").wait_for()
    assert "Hello from the app made in the console." in chat.locator(".exchange .answer").inner_text()
    chat.close()

    # Its log: the conversation, the message and the prompts the model received.
    page.get_by_role("link", name="Logs").click()
    page.get_by_role("table", name="Conversations").get_by_role("button").first.click()
    messages = page.get_by_role("list", name="Messages")
    messages.locator("p.answer", has_text="Hello from the app made in the console.").wait_for()
    messages.get_by_role("button", name="Prompts the model received").click()
    prompts = page.get_by_label("Prompts")
    prompts.locator(".prompt-message.system", has_text="You help Ada politely.").wait_for()
    assert "calculator" in prompts.inner_text()
    usage = page.get_by_label("Usage")
    usage.filter(has_text="1 message").wait_for()
    assert "1 messages" not in usage.inner_text()
    page.screenshot(path=str(screenshot_path("console-app-logs")), full_page=True)

    # A change is a new version; the versions tab lists both.
    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Opening statement").fill("Hello again.")
    page.get_by_role("button", name="Save as a new version").click()
    page.get_by_role("status").filter(has_text="Saved as version 2.").wait_for()
    page.get_by_role("link", name="Versions").click()
    rows = page.get_by_role("table", name="Versions").locator("tbody tr")
    rows.nth(1).wait_for()
    assert rows.count() == 2

    # Revoking the key ends the chat page's access.
    page.get_by_role("link", name="Keys and chat").click()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("table", name="Keys").get_by_role("button", name="Revoke").click()
    page.get_by_text("No keys yet").wait_for()


def test_labels_counts_and_the_save_bar(console: Console) -> None:
    page = console.sign_in()
    page.set_viewport_size({"width": 1280, "height": 900})
    page.get_by_role("link", name="New app").click()
    form = page.get_by_role("form", name="App settings")
    # Built-in tools by their titles (with the name beside), never a raw name as the title.
    form.locator(".tool-title").first.wait_for()  # the list of tools has loaded
    titles = form.locator(".tool-title").all_inner_texts()
    assert len(titles) >= 3 and all("_" not in t and t[:1].isupper() for t in titles), titles
    calculator = form.locator("label.check", has_text="Calculator")
    assert calculator.locator("code.tool-name").inner_text() == "calculator"
    # The sticky save bar never covers a field of the input form that has the focus.
    for _ in range(4):
        form.get_by_role("button", name="Add a field", exact=True).click()
    form.get_by_label("Variable", exact=True).last.focus()
    covered = page.evaluate(
        """() => {
            const input = document.activeElement.getBoundingClientRect();
            const bar = document.querySelector('.save-bar').getBoundingClientRect();
            return input.bottom > bar.top && input.top < bar.bottom;
        }"""
    )
    assert not covered, "the save bar covers the focused field"
    for i in range(4):
        form.get_by_label("Variable", exact=True).nth(i).fill(f"field_{i}")
    form.get_by_label("Name", exact=True).fill("Counted")
    form.get_by_role("button", name="Create app").click()
    page.get_by_role("heading", name="Counted").wait_for()
    page.get_by_text("0 keys").wait_for()  # not "0 key(s)"
    page.get_by_role("button", name="New key").click()
    page.locator(".new-key code.secret").wait_for()
    page.get_by_text("1 key ·").wait_for()
    # Saving says so, and names the version it made.
    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Opening statement").fill("Hello again.")
    page.get_by_role("button", name="Save as a new version").click()
    page.get_by_role("status").filter(has_text="Saved as version 2.").wait_for()


def test_import_a_dify_export_see_its_warnings_export_and_delete(console: Console) -> None:
    page = console.sign_in()
    page.get_by_role("link", name="New app").click()
    page.get_by_role("tab", name="Import a file").click()
    page.get_by_label("File", exact=True).set_input_files(str(DSL))
    page.get_by_role("button", name="Read dify-agent-app.yml").click()
    preview = page.get_by_label("Import preview")
    preview.get_by_text("Not everything could be imported").wait_for()
    assert preview.locator("ul.warnings li").count() >= 1
    page.screenshot(path=str(screenshot_path("console-import-warnings")))
    page.get_by_role("button", name="Import as a new app").click()
    page.get_by_role("link", name="Versions").wait_for()
    with page.expect_download() as download:
        page.get_by_role("button", name="Export YAML").click()
    exported = Path(download.value.path()).read_text(encoding="utf-8")
    assert "model:" in exported and "instruction:" in exported
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete").first.click()
    page.get_by_role("heading", name="Apps").wait_for()


def test_upload_a_document_see_it_indexed_and_found(console: Console, tmp_path: Path) -> None:
    page = console.sign_in()
    page.get_by_role("link", name="Knowledge").click()
    form = page.get_by_role("form", name="New knowledge base")
    form.get_by_label("Name").fill("Handbook")
    form.get_by_role("button", name="Create").click()
    page.get_by_role("heading", name="Handbook").wait_for()
    handbook = tmp_path / "handbook.md"
    handbook.write_text(HANDBOOK, encoding="utf-8")
    page.get_by_label("Upload documents").set_input_files(str(handbook))
    page.get_by_label("Upload of handbook.md").get_by_text("sent").wait_for()
    documents = page.get_by_role("table", name="Documents")
    documents.locator(".status.completed").wait_for()  # polled until the indexing finished
    assert "handbook.md" in documents.inner_text()
    page.get_by_placeholder("What would a user ask?").fill("vacation days")
    page.get_by_role("button", name="Search").click()
    hits = page.get_by_role("list", name="Hits")
    hits.get_by_text("25 vacation days").wait_for()
    page.screenshot(path=str(screenshot_path("console-knowledge")), full_page=True)


def test_import_an_openapi_spec_and_offer_another_app_as_a_tool(console: Console, world: Any) -> None:
    _, _, tool_api_url = world
    page = console.sign_in()
    for name in ("Weather desk", "Front desk"):
        page.get_by_role("link", name="New app").click()
        form = page.get_by_role("form", name="App settings")
        form.get_by_label("Name", exact=True).fill(name)
        form.get_by_role("button", name="Create app").click()
        page.get_by_role("heading", name=name).wait_for()
        page.get_by_role("link", name="Apps", exact=True).click()

    page.get_by_role("link", name="Weather desk").click()
    page.get_by_label("Spec (http(s) URL, or a file path on the server)").fill(f"{tool_api_url}/openapi.json")
    page.get_by_role("button", name="Check the spec").click()
    operations = page.get_by_role("table", name="Operations")
    operations.get_by_text("get_weather").wait_for()
    assert "make_chart" in operations.inner_text()
    page.get_by_role("button", name="Add to the app").click()
    page.get_by_text("Added as version 2").wait_for()
    form = page.get_by_role("form", name="App settings")
    # the form is filled again from the saved version a moment after the notice: wait for it
    expect(form.get_by_label("Other toolsets", exact=False)).to_have_value(re.compile(r"openapi\.json"))

    # The front desk calls the weather desk as a tool.
    page.get_by_role("link", name="Apps", exact=True).click()
    page.get_by_role("link", name="Front desk").click()
    form = page.get_by_role("form", name="App settings")
    form.locator("label.check", has_text="Weather desk").locator("input").check()
    form.get_by_role("button", name="Save as a new version").click()
    page.get_by_role("status").filter(has_text="Saved as version 2.").wait_for()
    page.get_by_role("link", name="Versions").click()
    page.get_by_role("button", name="Show").first.click()
    assert '"type": "app"' in page.locator("pre.code-block").inner_text()


def test_the_console_on_a_phone_in_the_dark(watched: Any, world: Any) -> None:
    server = world[0]
    watch = watched(viewport=PHONE, color_scheme="dark")
    page = watch.page()
    page.goto(f"{server.url}/console")
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Open the console").click()
    page.get_by_role("link", name="New app").click()
    page.get_by_role("form", name="App settings").wait_for()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], "the console scrolls sideways on a phone"
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(22, 23, 26)"  # the dark theme's --bg
    page.screenshot(path=str(screenshot_path("console-phone-dark")))


def test_no_serious_accessibility_problems(console: Console, world: Any) -> None:
    """axe-core (WCAG 2.1 AA and best practices): no serious or critical violation on the console's
    main pages — sign-in, apps, a new app's form, an app's keys, versions and logs, knowledge — light
    and dark."""
    _, script, _ = world
    page = console.page
    page.goto(f"{console.server.url}/console")
    page.get_by_label("Admin token").wait_for()
    problems = {"sign-in": serious_violations(page)}
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Open the console").click()
    page.get_by_role("link", name="New app").wait_for()
    problems["apps"] = serious_violations(page)
    page.get_by_role("link", name="New app").click()
    form = page.get_by_role("form", name="App settings")
    form.locator(".tool-title").first.wait_for()
    form.get_by_role("button", name="Add a field", exact=True).click()
    problems["new app"] = serious_violations(page)
    form.get_by_label("Name", exact=True).fill("Checked")
    form.get_by_label("Model spec").fill(f"scripted:{script}")
    form.get_by_role("button", name="Create app").click()
    page.get_by_role("heading", name="Checked").wait_for()
    page.get_by_role("button", name="New key").click()
    page.locator(".new-key code.secret").wait_for()
    problems["keys"] = serious_violations(page)
    for tab in ("Settings", "Versions", "Logs"):
        page.get_by_role("link", name=tab).click()
        page.get_by_role("link", name=tab).and_(page.locator("[aria-current=page]")).wait_for()
        page.wait_for_load_state("networkidle")
        problems[tab.lower()] = serious_violations(page)
    page.get_by_role("link", name="Knowledge").click()
    page.get_by_role("form", name="New knowledge base").wait_for()
    problems["knowledge"] = serious_violations(page)
    page.emulate_media(color_scheme="dark")
    problems["knowledge, dark"] = serious_violations(page)
    page.get_by_role("link", name="Apps", exact=True).click()
    page.get_by_role("link", name="Checked").wait_for()
    problems["apps, dark"] = serious_violations(page)
    assert {k: v for k, v in problems.items() if v} == {}


def test_sign_in_and_make_an_app_by_keyboard_alone(console: Console) -> None:
    page = console.page
    page.goto(f"{console.server.url}/console")
    page.get_by_label("Admin token").wait_for()
    if focused_name(page) != "Admin token":
        tab_to(page, "Admin token")
    page.keyboard.type(TOKEN)
    page.keyboard.press("Enter")
    page.get_by_role("link", name="New app").wait_for()
    tab_to(page, "New app")
    page.keyboard.press("Enter")
    page.get_by_role("form", name="App settings").locator(".tool-title").first.wait_for()
    tab_to(page, "Name")
    page.keyboard.type("Typed")
    tab_to(page, "Calculator calculator")  # a built-in tool's checkbox (its label: title, then name)
    page.keyboard.press("Space")
    tab_to(page, "Create app")
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Typed").wait_for()
    tab_to(page, "New key")
    page.keyboard.press("Enter")
    page.locator(".new-key code.secret").wait_for()
