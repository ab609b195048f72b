"""The chat page in a real browser (Debian's Chromium through Playwright) against a real
``loopwright serve`` on 127.0.0.1, its apps on scripted models: streamed answers, a round of two tool
calls while it runs and after, stop, reload, upload, feedback. Screenshots go to tests/web/screenshots/
(git-ignored; LOOPWRIGHT_SCREENSHOTS moves them)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.web.browser import (
    DESKTOP,
    PHONE,
    TRANSCRIPT,
    ChatApp,
    CuttableProxy,
    Server,
    Watch,
    create_apps,
    create_dataset,
    need_browser,
    png,
    screenshot_path,
    send,
    serious_violations,
    serve_tool_api,
    start_server,
    stop_server,
    tab_to,
    wait_focused,
)

pytestmark = pytest.mark.timeout(180)

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]
MARKDOWN_ANSWER = (
    "Hello! Here is **bold** text and some code:\n\n```python\nprint('hi')\n```\n\n"
    "| city | sky |\n|---|---|\n| Paris | sunny |\n\n"
    '<img src="x" onerror="window.__pwned = 1"><script>window.__pwned = 2</script>'
)
FOOTER = "Answers can be wrong. Check them."
STORY = " ".join(f"Sentence {i} of a long story." for i in range(1, 41)) + " The end."


def app_specs(tool_api_url: str, dataset_id: str = "") -> dict[str, dict[str, Any]]:
    openapi = {
        "type": "openapi",
        "spec": f"{tool_api_url}/openapi.json",
        "server_url": tool_api_url,
        "allow_hosts": ["127.0.0.1"],
    }
    retriever = f"dataset_{dataset_id.replace('-', '_')}"  # the knowledge toolset's tool for the dataset
    return {
        "assistant": {
            "script": {"replies": [MARKDOWN_ANSWER], "features": FC, "delay": 0.02},
            "opening_statement": "Hi, I am the **assistant**. Ask me anything.",
            "suggested_questions": ["What can you do?"],
        },
        "weather": {
            "script": {
                "replies": [
                    {"tool_calls": [["make_chart", {}], ["get_weather", {"city": "Paris"}]]},
                    "It is **sunny** in Paris. Here is the week's chart.",
                ],
                "features": FC,
            },
            "toolsets": [openapi],
        },
        "library": {
            "script": {
                "replies": [
                    {"tool_calls": [[retriever, {"query": "parking garage"}], ["get_report", {}]]},
                    "Parking is free in the garage [1]. The weather report is attached.",
                ],
                "features": FC,
            },
            "toolsets": [openapi, {"type": "knowledge", "datasets": [dataset_id]}],
        },
        "inspected": {  # for the accessibility check: a round with a tool, Markdown, a file
            "script": {
                "replies": [{"tool_calls": [["make_chart", {}]]}, MARKDOWN_ANSWER],
                "features": FC,
            },
            "toolsets": [openapi],
            "opening_statement": "Hi, I draw **charts**.",
            "suggested_questions": ["What can you do?"],
        },
        "stoppable": {"script": {"replies": [STORY], "features": FC, "delay": 0.05}},
        "greeter": {
            "script": {"replies": [STORY], "features": FC, "delay": 0.05},
            "opening_statement": "Welcome! I tell **long stories**.",
        },
        "reloadable": {
            "script": {"replies": ["Hello.", STORY], "features": FC, "delay": 0.05, "chunk_size": 16}
        },
        "droppable": {"script": {"replies": [STORY], "features": FC, "delay": 0.05, "chunk_size": 16}},
        "memory": {"script": {"replies": ["First answer.", "Second answer."], "features": FC}},
        "feedback": {"script": {"replies": ["A fine answer."], "features": FC}},
        "form": {
            "script": {"replies": ["Nice to meet you, Ann."], "features": FC},
            "instruction": "Greet {{name}}.",
            "user_input_form": [{"variable": "name", "label": "Your name", "required": True}],
        },
        "broken": {"script": {"replies": [{"error": "the provider is down"}], "features": FC}},
        "lists": {"script": {"replies": ["One.", "Two."], "features": FC}},
        "voice": {
            "script": {"replies": ["It is sunny and warm."], "features": FC},
            "speech_to_text": {"enabled": True, "model": "openai-compatible:whisper"},
            "text_to_speech": {"enabled": True, "model": "openai-compatible:tts"},
        },
        "showcase": {
            "script": {"replies": ["I see two squares."], "features": [*FC, "vision"]},
            "file_upload": {"enabled": True, "allowed_types": ["image"], "transfer_methods": ["local_file"]},
            "site": {
                "icon": "🦉",
                "icon_background": "#FFEAD5",
                "footer": "Answers can be wrong. Check them.",
            },
        },
        "named": {
            "script": {
                "replies": [
                    "First.",
                    '{"Language Type": "English", "Your Reasoning": "…", "Your Output": "Lighthouse tales"}',
                    "Second.",
                    '{"Language Type": "English", "Your Reasoning": "…", "Your Output": "Harbour songs"}',
                ],
                "features": FC,
            },
            "generate_conversation_names": True,
        },
        "keyboard": {"script": {"replies": ["First, by keyboard.", "Second, by keyboard."], "features": FC}},
        "suggest": {
            "script": {
                "replies": [
                    "Paris is the capital of France.",
                    '["How big is Paris?", "Which river runs through it?", "Best museum?"]',
                    "The Seine.",
                    "[]",
                ],
                "features": FC,
            },
            "suggested_questions_after_answer": True,
        },
        "vision": {
            "script": {"replies": ["I see a green square."], "features": [*FC, "vision"]},
            "file_upload": {"enabled": True, "allowed_types": ["image"], "transfer_methods": ["local_file"]},
        },
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, ChatApp], Any]]:
    need_browser()
    folder = tmp_path_factory.mktemp("web")
    tool_api, tool_server = serve_tool_api()
    try:
        db_path = folder / "web.db"
        db_url = f"sqlite+aiosqlite:///{db_path}"
        handbook = {"parking.md": "# Parking\n\nParking is free in the garage under the office."}
        dataset_id = asyncio.run(create_dataset(db_url, "handbook", handbook))
        apps = asyncio.run(create_apps(db_url, app_specs(tool_api.url, dataset_id), folder))
        # the speech routes' audio model: OpenAI's audio API, answered by the local tool API
        server = start_server(folder, db_path, {"OPENAI_BASE_URL": f"{tool_api.url}/v1"})
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


class Page:
    """A page of a fresh, watched browser context (it fails the test on a console error or a request
    off 127.0.0.1: tests/web/conftest.py)."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.context = watch.context
        self.page = watch.page()

    def open(self, server: Server, app: ChatApp) -> Any:
        self.page.goto(app.link(server.url))
        self.page.get_by_label("Message").wait_for()
        return self.page

    def send(self, text: str) -> None:
        send(self.page, text)


@pytest.fixture
def page(watched: Any) -> Page:
    return Page(watched(viewport=DESKTOP, color_scheme="light"))


def test_a_message_gets_a_streamed_markdown_answer(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["assistant"])
    assert "the key" not in view.url and "#key=" not in view.url  # the key left the address bar
    view.locator(".opening strong", has_text="assistant").wait_for()
    view.get_by_role("button", name="What can you do?").wait_for()
    page.send("Say hello, with code")
    answer = view.locator(".exchange .answer")
    answer.locator("strong", has_text="bold").wait_for()
    view.locator(".exchange.status-done").wait_for()
    assert view.locator("link[rel=icon]").count() == 1  # no request for /favicon.ico
    assert view.locator(".user-bubble").inner_text() == "Say hello, with code"
    assert answer.locator("pre code.hljs .hljs-built_in", has_text="print").count() == 1  # highlighted
    assert answer.locator("table td", has_text="Paris").count() == 1
    # The model's HTML did not become markup: no script ran, no handler was kept.
    assert view.evaluate("window.__pwned") is None
    assert answer.locator("script, img[onerror]").count() == 0
    # The new conversation is listed, named from the query.
    view.locator(".conversation-list .conversation", has_text="Say hello").wait_for()
    view.screenshot(path=str(screenshot_path("chat-desktop-answer")))


def test_a_round_of_two_tool_calls_while_it_runs_and_after(world: Any, page: Page) -> None:
    server, apps, tool_api = world
    view = page.open(server, apps["weather"])
    page.send("Weather in Paris, and a chart?")
    calls = view.locator(".tool-call")
    running = view.locator(".tool-call.running")
    # make_chart answers at once; get_weather waits for the test.
    view.locator(".tool-call:not(.running) .tool-state", has_text="done").wait_for()
    running.wait_for()
    assert calls.count() == 2
    assert running.count() == 1 and "get_weather" in running.inner_text()
    assert view.locator(".steps[open]").count() == 1  # the round is shown while it runs
    running.locator("summary").click()
    assert '"city": "Paris"' in running.locator(".tool-input").inner_text()
    view.screenshot(path=str(screenshot_path("chat-desktop-tools-running")))

    tool_api.release.set()
    view.locator(".exchange.status-done").wait_for()
    assert view.locator(".steps[open]").count() == 0  # the rounds fold away at the end
    summary = view.locator(".steps > summary").inner_text()
    assert "1 round" in summary and "2 tool calls" in summary
    view.locator(".answer strong", has_text="sunny").wait_for()
    chart = view.locator(".agent-turn .files img")
    chart.wait_for()
    view.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=chart.element_handle())
    assert chart.evaluate("img => [img.naturalWidth, img.naturalHeight]") == [120, 80]  # the tool's PNG
    view.locator(".steps > summary").click()  # unfold the round (the weather call is still open)
    weather = view.locator(".tool-call", has_text="get_weather")
    assert weather.get_attribute("open") is not None
    assert "sunny" in weather.locator(".tool-output").inner_text()
    view.screenshot(path=str(screenshot_path("chat-desktop-tools-done")))

    # The agent log, one click away: the round's two calls with their times, from the server.
    view.get_by_role("button", name="Agent log").click()
    log = view.get_by_role("dialog", name="Agent log")
    log.locator(".tool-call", has_text="get_weather").wait_for()
    assert log.locator(".tool-call").count() == 2
    assert log.locator(".log-meta dd").first.inner_text() == "success"
    assert log.locator(".log-meta dd").nth(1).inner_text() == "Function calling"  # not the raw id
    times = log.locator(".tool-call .tool-state").all_inner_texts()
    assert len(times) == 2 and all(re.search(r"· (< 1 ms|\d+ ms|\d+\.\d s)$", t) for t in times), times
    view.screenshot(path=str(screenshot_path("chat-desktop-agent-log")))
    view.keyboard.press("Escape")
    log.wait_for(state="detached")

    # The same conversation on a phone, light and dark (the same browser, so the same end user).
    view.set_viewport_size(PHONE)
    view.reload()  # reopens the conversation of this tab from the history
    view.locator(".answer strong", has_text="sunny").wait_for()
    view.locator(".agent-turn .files img").wait_for()
    assert view.locator(".sidebar").is_hidden()  # folded behind the menu button
    width = view.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], "the page scrolls sideways on a phone"
    view.screenshot(path=str(screenshot_path("chat-phone-light")))
    view.emulate_media(color_scheme="dark")
    view.get_by_role("button", name="Conversations").click()
    view.locator(".sidebar .conversation").first.wait_for()
    view.screenshot(path=str(screenshot_path("chat-phone-dark-menu")))
    view.get_by_role("button", name="Conversations").click()
    view.screenshot(path=str(screenshot_path("chat-phone-dark")))


def test_stop_mid_answer(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["stoppable"])
    page.send("Tell me a long story")
    view.locator(".exchange .answer", has_text="Sentence 2").wait_for()
    view.get_by_label("Message").press("Escape")
    view.locator(".exchange.status-stopped").wait_for()
    shown = view.locator(".exchange .answer").inner_text()
    assert "Sentence 2" in shown and "The end." not in shown
    view.get_by_role("button", name="Send").wait_for()  # ready for the next message
    assert view.locator(".exchange .usage").count() == 0  # no "0 tokens" for a round cut off
    view.screenshot(path=str(screenshot_path("chat-desktop-stopped")))

    # After a reload, the history shows the same partial answer, still marked as stopped.
    view.reload()
    view.locator(".user-bubble", has_text="Tell me a long story").wait_for()
    view.locator(".exchange.status-stopped").wait_for()
    again = view.locator(".exchange .answer").inner_text()
    assert "Sentence 2" in again and "The end." not in again
    assert view.locator(".exchange", has_text="Stopped.").count() == 1


def test_a_new_chat_keeps_its_place_while_the_first_answer_streams(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["greeter"])
    view.locator(".opening strong", has_text="long stories").wait_for()
    page.send("A story about a lighthouse")
    view.locator(".exchange.status-streaming .answer", has_text="Sentence 2").wait_for()
    # While it streams: the chat is listed (it may take the page a frame after the text), and the
    # opening statement stays where it was.
    view.locator(".conversation-list .conversation", has_text="A story about a ligh").wait_for()
    assert view.locator(".exchange.status-streaming").count() == 1
    assert view.locator(".opening", has_text="long stories").is_visible()
    view.get_by_label("Message").press("Escape")
    view.locator(".exchange.status-stopped").wait_for()
    view.locator(".conversation-list .conversation", has_text="A story about a ligh").wait_for()
    assert view.locator(".conversation-list .conversation").count() == 1
    assert view.locator(".opening", has_text="long stories").is_visible()


def test_a_link_whose_key_is_another_apps_is_refused(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.page
    view.goto(f"{server.url}/chat/{apps['feedback'].id}#key={apps['assistant'].key}")
    view.get_by_role("alert").filter(has_text="belongs to another app").wait_for()
    assert view.get_by_label("Message").count() == 0
    slot = f"loopwright.chat.key:{apps['feedback'].id}"
    assert view.evaluate(f"sessionStorage.getItem({slot!r})") is None  # not kept for that app
    assert "assistant" not in view.title()


def test_reload_shows_the_conversation_from_history(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["memory"])
    page.send("One")
    view.locator(".answer", has_text="First answer.").wait_for()
    view.locator(".exchange.status-done").wait_for()
    page.send("Two")
    view.locator(".answer", has_text="Second answer.").wait_for()
    view.locator(".exchange.status-done >> nth=1").wait_for()
    view.reload()
    view.locator(".answer", has_text="Second answer.").wait_for()
    assert view.locator(".user-bubble").all_inner_texts() == ["One", "Two"]
    assert view.locator(".answer").all_inner_texts() == ["First answer.", "Second answer."]


def test_reload_mid_answer_shows_the_answer_from_history(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["reloadable"])
    page.send("Hi")
    view.locator(".exchange.status-done .answer", has_text="Hello.").wait_for()
    page.send("Tell me the story again")
    view.locator(".exchange .answer", has_text="Sentence 3").wait_for()
    view.reload()
    view.locator(".user-bubble", has_text="Tell me the story again").wait_for()
    # The run goes on at the server; the page follows it (re-attached, or in the history) until it ends.
    view.locator(".exchange .answer", has_text="The end.").wait_for(timeout=60_000)
    view.wait_for_function("() => document.querySelectorAll('.exchange.status-done').length === 2")
    assert view.locator(".user-bubble").all_inner_texts() == ["Hi", "Tell me the story again"]
    assert view.locator(".answer").first.inner_text() == "Hello."
    assert view.locator(".answer").last.inner_text().count("Sentence 1 ") == 1


def test_a_network_drop_mid_answer(world: Any, page: Page) -> None:
    server, apps, _ = world
    proxy = CuttableProxy(server.url)  # the page talks to the server through it
    page.watch.allow("ERR_INCOMPLETE_CHUNKED_ENCODING")  # the cut stream, as the browser reports it
    try:
        view = page.page
        view.goto(apps["droppable"].link(proxy.url))
        page.send("Tell me the story once more")
        view.locator(".exchange .answer", has_text="Sentence 3").wait_for()
        proxy.cut()  # the stream's connection drops; the run goes on at the server
        view.locator(".exchange .answer", has_text="The end.").wait_for(timeout=60_000)
        view.locator(".exchange.status-done").wait_for(timeout=30_000)
        assert view.locator(".exchange").count() == 1
        assert view.locator(".exchange .answer").inner_text().count("Sentence 1 ") == 1  # nothing twice
    finally:
        proxy.close()


def test_upload_an_image(world: Any, page: Page, tmp_path: Path) -> None:
    server, apps, _ = world
    picture = tmp_path / "square.png"
    picture.write_bytes(png(64, 64, (46, 125, 50)))
    view = page.open(server, apps["vision"])
    view.locator("input[type=file]").set_input_files(str(picture))
    preview = view.locator(".attachment img")
    preview.wait_for()
    view.wait_for_function("() => !document.querySelector('.attachment.uploading')")
    assert view.locator(".attachment.ready").count() == 1
    page.send("What is in this picture?")
    view.locator(".answer", has_text="green square").wait_for()
    sent = view.locator(".user-turn .files img")
    sent.wait_for()
    view.screenshot(path=str(screenshot_path("chat-desktop-upload")))
    # The server has the picture as the message's own file.
    user = view.evaluate("localStorage.getItem('loopwright.chat.user:' + location.pathname.split('/')[2])")
    headers = {"Authorization": f"Bearer {apps['vision'].key}"}
    conversations = httpx.get(f"{server.url}/v1/conversations", params={"user": user}, headers=headers).json()
    messages = httpx.get(
        f"{server.url}/v1/messages",
        params={"user": user, "conversation_id": conversations["data"][0]["id"]},
        headers=headers,
    ).json()
    files = messages["data"][0]["message_files"]
    assert [(f["filename"], f["belongs_to"], f["type"]) for f in files] == [("square.png", "user", "image")]


def test_like_a_message_with_a_comment(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["feedback"])
    page.send("Answer me well")
    view.locator(".exchange.status-done").wait_for()
    view.get_by_role("button", name="Like", exact=True).click()
    view.locator("button.like[aria-pressed=true]").wait_for()
    view.get_by_label("Feedback comment").fill("Clear and short")
    view.get_by_role("button", name="Send", exact=True).first.click()
    headers = {"Authorization": f"Bearer {apps['feedback'].key}"}
    for _ in range(50):
        feedback = httpx.get(f"{server.url}/v1/app/feedbacks", headers=headers).json()["data"]
        if feedback and feedback[0]["content"]:
            break
        view.wait_for_timeout(100)
    assert [(f["rating"], f["content"]) for f in feedback] == [("like", "Clear and short")]
    view.reload()  # the rating is read back from the history
    view.locator("button.like[aria-pressed=true]").wait_for()


def api_get(server: Server, app: ChatApp, view: Any, path: str, **params: str) -> Any:
    """A GET of the Service API as the page's end user."""
    user = view.evaluate("localStorage.getItem('loopwright.chat.user:' + location.pathname.split('/')[2])")
    headers = {"Authorization": f"Bearer {app.key}"}
    return httpx.get(f"{server.url}/v1{path}", params={"user": user, **params}, headers=headers).json()


def test_the_input_form_comes_before_the_first_message(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["form"])
    page.send("Hello")
    view.get_by_role("alert").filter(has_text="Please fill in “Your name”.").wait_for()
    assert view.locator(".exchange").count() == 0  # nothing was sent
    view.get_by_label("Your name").fill("Ann")
    view.get_by_label("Message").press("Enter")  # the text was kept
    view.locator(".answer", has_text="Nice to meet you").wait_for()
    view.locator("fieldset.input-form[disabled]").wait_for()  # shown, fixed, for this conversation
    conversations = api_get(server, apps["form"], view, "/conversations")
    assert conversations["data"][0]["inputs"] == {"name": "Ann"}


def test_an_error_is_shown_in_plain_words(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["broken"])
    page.send("Anyone there?")
    error = view.locator(".exchange .error-text")
    error.wait_for()
    text = error.inner_text()
    assert "could not answer" in text and "the provider is down" in text
    assert "_error" not in text  # no error code as the message
    assert error.evaluate("e => getComputedStyle(e).color") == "rgb(198, 40, 40)"  # red
    view.get_by_role("button", name="Send").wait_for()


def test_conversations_are_renamed_and_deleted(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["lists"])
    view.on("dialog", lambda dialog: dialog.accept())  # the "Delete …?" confirmation
    page.send("First chat")
    view.locator(".answer", has_text="One.").wait_for()
    view.get_by_role("button", name="+ New chat").click()
    assert view.locator(".exchange").count() == 0
    page.send("Second chat")
    view.locator(".answer", has_text="Two.").wait_for()
    items = view.locator(".conversation-list .conversation")
    view.wait_for_function("() => document.querySelectorAll('.conversation-list .conversation').length === 2")
    view.get_by_role("button", name="Rename First chat").click()
    view.get_by_label("Conversation name").fill("Renamed")
    view.get_by_label("Conversation name").press("Enter")
    items.filter(has_text="Renamed").wait_for()
    view.get_by_role("button", name="Delete Second chat").click()
    view.wait_for_function("() => document.querySelectorAll('.conversation-list .conversation').length === 1")
    assert items.all_inner_texts() == ["Renamed"]
    assert view.locator(".exchange").count() == 0  # the open conversation was the deleted one
    names = [c["name"] for c in api_get(server, apps["lists"], view, "/conversations")["data"]]
    assert names == ["Renamed"]
    items.first.click()
    view.locator(".answer", has_text="One.").wait_for()


def test_follow_up_suggestions_after_an_answer(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["suggest"])
    page.send("What is the capital of France?")
    view.locator(".answer", has_text="Paris is the capital").wait_for()
    follow_up = view.locator(".follow-ups .chip", has_text="Which river runs through it?")
    follow_up.wait_for()
    assert view.locator(".follow-ups .chip").count() == 3
    follow_up.click()
    view.locator(".answer", has_text="The Seine.").wait_for()
    assert view.locator(".user-bubble").all_inner_texts()[-1] == "Which river runs through it?"


def test_citations_and_a_file_to_download(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["library"])
    page.send("Where can I park? And the weather report, please.")
    view.locator(".answer", has_text="Parking is free").wait_for()
    sources = view.locator(".citations")
    sources.locator("summary", has_text="Sources · 1").click()
    assert "parking.md" in sources.locator(".citation-head").inner_text()
    assert "score" in sources.locator(".citation-head").inner_text()
    assert "free in the garage" in sources.locator("blockquote").inner_text()
    report = view.locator(".agent-turn a.file-chip")
    report.wait_for()
    assert report.get_attribute("download")  # a download, not a page to open
    href = report.get_attribute("href")
    assert href is not None
    body = httpx.get(href if href.startswith("http") else f"{server.url}{href}")
    assert body.status_code == 200 and body.content.startswith(b"%PDF-1.4")
    view.screenshot(path=str(screenshot_path("chat-desktop-citations-file")))


def test_no_serious_accessibility_problems(world: Any, page: Page) -> None:
    """axe-core (WCAG 2.1 AA and best practices): no serious or critical violation on the chat page —
    a new chat, an answer with its rounds unfolded and its toolbar, the agent log, light and dark, and
    the phone layout with its menu open."""
    server, apps, _ = world
    view = page.open(server, apps["inspected"])
    view.locator(".opening").wait_for()
    problems = {"new chat": serious_violations(view)}
    page.send("A chart of the week?")
    view.locator(".exchange.status-done").wait_for()
    view.locator(".agent-turn .files img").wait_for()
    problems["answer"] = serious_violations(view)
    view.locator(".steps > summary").click()
    view.locator(".tool-call > summary").first.click()
    problems["rounds"] = serious_violations(view)
    view.emulate_media(color_scheme="dark")
    problems["rounds, dark"] = serious_violations(view)
    view.emulate_media(color_scheme="light")
    view.get_by_role("button", name="Agent log").click()
    view.get_by_role("dialog", name="Agent log").locator(".tool-call").first.wait_for()
    problems["agent log"] = serious_violations(view)
    view.keyboard.press("Escape")
    view.set_viewport_size(PHONE)
    view.get_by_role("button", name="Conversations").click()
    problems["phone menu"] = serious_violations(view)
    assert {k: v for k, v in problems.items() if v} == {}


def test_the_main_flows_by_keyboard_alone(world: Any, page: Page) -> None:
    """Send, read the agent log, rate, start a new chat and go back to the first one — with the keys
    only (Tab, Enter, Space, Esc)."""
    server, apps, _ = world
    view = page.open(server, apps["keyboard"])
    wait_focused(view, "Message")  # the box has the focus when the page opens
    view.keyboard.type("Hello by keyboard")
    view.keyboard.press("Enter")
    view.locator(".exchange.status-done .answer", has_text="First, by keyboard.").wait_for()
    tab_to(view, "Agent log")
    view.keyboard.press("Enter")
    log = view.get_by_role("dialog", name="Agent log")
    log.locator(".log-meta").wait_for()
    assert view.evaluate("document.activeElement.getAttribute('role')") == "dialog"  # the focus moved in
    for _ in range(6):  # Tab stays inside the dialog
        view.keyboard.press("Tab")
        assert view.evaluate("!!document.activeElement.closest('[role=dialog]')")
    view.keyboard.press("Escape")
    log.wait_for(state="detached")
    wait_focused(view, "Agent log")  # back where it was
    tab_to(view, "Like", backwards=True)
    view.keyboard.press("Space")
    view.locator("button.like[aria-pressed=true]").wait_for()
    tab_to(view, "+ New chat", backwards=True)
    view.keyboard.press("Enter")
    view.locator(".exchange").first.wait_for(state="detached")
    tab_to(view, "Message")
    view.keyboard.type("Another chat")
    view.keyboard.press("Enter")
    view.locator(".exchange.status-done .answer", has_text="Second, by keyboard.").wait_for()
    tab_to(view, "Hello by keyboard", backwards=True)  # the first chat in the list
    view.keyboard.press("Enter")
    view.locator(".answer", has_text="First, by keyboard.").wait_for()
    assert view.locator(".exchange").count() == 1


def test_speak_a_question_and_hear_the_answer(world: Any, page: Page) -> None:
    server, apps, tool_api = world
    view = page.open(server, apps["voice"])
    view.get_by_role("button", name="Speak").click()  # the fake microphone plays a tone
    view.get_by_role("button", name="Stop recording").click()
    expect(view.get_by_label("Message")).to_have_value(TRANSCRIPT)  # written down, not sent
    assert tool_api.heard and tool_api.heard[-1] > 0
    view.get_by_label("Message").press("Enter")
    view.locator(".exchange.status-done .answer", has_text="sunny and warm").wait_for()
    view.get_by_role("button", name="Read aloud").click()
    view.get_by_role("button", name="Stop reading").wait_for()  # playing
    view.get_by_role("button", name="Read aloud").wait_for()  # half a second of audio, then done
    assert tool_api.spoken == ["It is sunny and warm."]
    assert view.locator(".notice").count() == 0


GIVE_FILE = """([kind, name, bytes]) => {
    const data = new DataTransfer();
    data.items.add(new File([new Uint8Array(bytes)], name, { type: "image/png" }));
    const box = document.querySelector("textarea.message-input");
    const init = { bubbles: true, cancelable: true };
    const event = kind === "paste"
        ? new ClipboardEvent("paste", { ...init, clipboardData: data })
        : new DragEvent(kind, { ...init, dataTransfer: data });
    box.dispatchEvent(event);
    return event.defaultPrevented;
}"""


def test_paste_and_drop_files_the_header_and_the_times(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["showcase"])
    # The app's icon, description and footer line.
    assert view.locator(".topbar .app-badge").inner_text() == "🦉"
    assert view.locator(".topbar .app-description").inner_text() == "The showcase app"
    assert view.locator(".footer-line").inner_text() == FOOTER
    # A picture pasted into the box, another dropped on it: both attached and uploaded.
    square = list(png(32, 32, (46, 125, 50)))
    assert view.evaluate(GIVE_FILE, ["paste", "pasted.png", square]) is True
    assert view.evaluate(GIVE_FILE, ["dragover", "dropped.png", square]) is True
    view.locator(".drop-hint").wait_for()
    assert view.evaluate(GIVE_FILE, ["drop", "dropped.png", square]) is True
    view.wait_for_function("() => document.querySelectorAll('.attachment.ready').length === 2")
    assert view.locator(".drop-hint").count() == 0
    page.send("What are these?")
    view.locator(".answer", has_text="two squares").wait_for()
    assert view.locator(".user-turn .files img").count() == 2
    # The message's time, as the browser tells time, with the exact moment in its datetime.
    stamp = view.locator(".user-turn time.when")
    assert re.fullmatch(r"\d{1,2}:\d{2}( ?[AP]M)?", stamp.inner_text()), stamp.inner_text()
    assert re.match(r"\d{4}-\d{2}-\d{2}T", stamp.get_attribute("datetime") or "")
    view.reload()
    view.locator(".user-turn time.when").wait_for()  # from the history too
    # Text pasted into the box stays text.
    view.get_by_label("Message").focus()
    assert (
        view.evaluate(
            """() => {
                const data = new DataTransfer();
                data.setData("text/plain", "plain words");
                const init = { bubbles: true, cancelable: true, clipboardData: data };
                const event = new ClipboardEvent("paste", init);
                document.querySelector("textarea.message-input").dispatchEvent(event);
                return event.defaultPrevented;
            }"""
        )
        is False
    )


def test_conversations_named_by_the_model_and_pinned(world: Any, page: Page) -> None:
    server, apps, _ = world
    view = page.open(server, apps["named"])
    items = view.locator(".conversation-list .conversation")
    page.send("Tell me about lighthouses")
    view.locator(".answer", has_text="First.").wait_for()
    items.filter(has_text="Lighthouse tales").wait_for()  # the model's name, after the first answer
    view.get_by_role("button", name="+ New chat").click()
    page.send("And about harbours")
    view.locator(".answer", has_text="Second.").wait_for()
    items.filter(has_text="Harbour songs").wait_for()
    assert items.all_inner_texts() == ["Harbour songs", "Lighthouse tales"]  # the newest first
    view.get_by_role("button", name="Pin Lighthouse tales").click()
    assert items.all_inner_texts() == ["Lighthouse tales", "Harbour songs"]  # pinned to the top
    view.reload()
    view.get_by_role("button", name="Unpin Lighthouse tales").wait_for()  # kept by this browser
    assert items.all_inner_texts() == ["Lighthouse tales", "Harbour songs"]
    view.get_by_role("button", name="Unpin Lighthouse tales").click()
    assert items.all_inner_texts() == ["Harbour songs", "Lighthouse tales"]


@pytest.mark.parametrize(
    ("locale", "lang", "send", "new_chat"),
    [("ja-JP", "ja", "送信", "+ 新しいチャット"), ("zh-CN", "zh-Hans", "发送", "+ 新对话")],
)
def test_the_page_speaks_the_browsers_language(
    world: Any, watched: Any, locale: str, lang: str, send: str, new_chat: str
) -> None:
    server, apps, _ = world
    view = watched(viewport=DESKTOP, locale=locale).page()
    view.goto(apps["assistant"].link(server.url))
    view.get_by_role("button", name=send).wait_for()
    assert view.get_by_role("button", name=new_chat).count() == 1
    assert view.evaluate("document.documentElement.lang") == lang
    assert view.get_by_role("button", name="Send").count() == 0
