"""What the browser tests of the web UI share: Debian's Chromium driven by Playwright (never a
downloaded browser), a real ``loopwright serve`` subprocess on 127.0.0.1 with apps on scripted models,
a small HTTP API on 127.0.0.1 whose tools the tests can hold open, and the screenshot folder."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urlparse

import pytest

CHROMIUM = Path(os.environ.get("LOOPWRIGHT_CHROMIUM", "/usr/bin/chromium"))
# Headless, and nothing that reaches out of the machine (updates, sync, first-run pages).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # A microphone that plays a tone, allowed without asking (the chat page's speech-to-text button).
    "--use-fake-device-for-media-stream",
    "--use-fake-ui-for-media-stream",
]
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("LOOPWRIGHT_SCREENSHOTS", ROOT / "tests" / "web" / "screenshots"))
DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}


def need_browser() -> None:
    """Skip (fail under CI, which installs them: scripts/ci-web) without Chromium or Playwright."""
    problem = None
    if not CHROMIUM.exists():
        problem = f"no Chromium at {CHROMIUM} (apt-get install chromium; scripts/ci-web does)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "the playwright package is not installed (pip install -e '.[dev]')"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A one-colour PNG, made here (no image library needed)."""
    row = b"\x00" + bytes(rgb) * width
    raw = zlib.compress(row * height)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


CHART = png(120, 80, (46, 125, 50))
REPORT = b"%PDF-1.4\n% a weather report\n"
# Half a second of silence as MP3: 20 frames of MPEG-1 layer III, 128 kbit/s, 44.1 kHz, all zeros.
SILENCE_MP3 = (b"\xff\xfb\x90\x00" + bytes(413)) * 20
TRANSCRIPT = "What is the weather like?"


@dataclass
class ToolApi:
    """An HTTP API with two operations for an OpenAPI toolset: ``get_weather`` answers only once the
    test sets ``release`` (so a test sees a tool call while it runs), ``make_chart`` answers a PNG."""

    url: str = ""
    release: threading.Event = field(default_factory=threading.Event)
    spoken: list[str] = field(default_factory=list)  # the texts /v1/audio/speech was asked to read
    heard: list[int] = field(default_factory=list)  # the sizes of the recordings it transcribed

    def spec(self) -> dict[str, Any]:
        return {
            "openapi": "3.0.3",
            "info": {"title": "Weather", "version": "1.0"},
            "servers": [{"url": self.url}],
            "paths": {
                "/weather": {
                    "get": {
                        "operationId": "get_weather",
                        "summary": "The weather in a city.",
                        "parameters": [
                            {"name": "city", "in": "query", "required": True, "schema": {"type": "string"}}
                        ],
                        "responses": {"200": {"description": "the weather"}},
                    }
                },
                "/report": {
                    "get": {
                        "operationId": "get_report",
                        "summary": "The week's weather report, as a PDF.",
                        "responses": {"200": {"description": "a PDF", "content": {"application/pdf": {}}}},
                    }
                },
                "/chart": {
                    "get": {
                        "operationId": "make_chart",
                        "summary": "A chart of the week's temperatures, as a PNG image.",
                        "responses": {"200": {"description": "a PNG", "content": {"image/png": {}}}},
                    }
                },
            },
        }


def serve_tool_api() -> tuple[ToolApi, ThreadingHTTPServer]:
    api = ToolApi()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            url = urlparse(self.path)
            if url.path == "/openapi.json":
                self.reply(200, "application/json", json.dumps(api.spec()).encode())
            elif url.path == "/weather":
                api.release.wait(60)
                city = parse_qs(url.query).get("city", ["?"])[0]
                self.reply(200, "application/json", json.dumps({"city": city, "sky": "sunny"}).encode())
            elif url.path == "/chart":
                self.reply(200, "image/png", CHART)
            elif url.path == "/report":
                self.reply(200, "application/pdf", REPORT)
            else:
                self.reply(404, "text/plain", b"not found")

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            """OpenAI's audio API, as the server's speech routes call it (OPENAI_BASE_URL)."""
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path == "/v1/audio/speech":
                api.spoken.append(json.loads(body)["input"])
                self.reply(200, "audio/mpeg", SILENCE_MP3)
            elif self.path == "/v1/audio/transcriptions":
                api.heard.append(len(body))
                self.reply(200, "application/json", json.dumps({"text": TRANSCRIPT}).encode())
            else:
                self.reply(404, "text/plain", b"not found")

        def reply(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return api, server


@dataclass
class ChatApp:
    id: str
    key: str

    def link(self, base: str) -> str:
        return f"{base}/chat/{self.id}#key={self.key}"


async def create_apps(db_url: str, apps: dict[str, dict[str, Any]], folder: Path) -> dict[str, ChatApp]:
    """Each app on its own scripted model (``config["script"]``: the replies and model options)."""
    from loopwright.app.run.runtime import migrate
    from loopwright.store import repositories as repo
    from loopwright.store.db import Database

    db = Database(db_url)
    await migrate(db)
    made: dict[str, ChatApp] = {}
    try:
        for name, spec in apps.items():
            config = dict(spec)
            script = folder / f"{name}.json"
            script.write_text(json.dumps(config.pop("script")), encoding="utf-8")
            async with db.transaction() as s:
                mode = config.get("mode", "agent-chat")  # a chat or completion app's kind, as the app's
                app, _ = await repo.create_app(
                    s,
                    name,
                    {"model": f"scripted:{script}", **config},
                    description=f"The {name} app",
                    mode=mode,
                )
                key = await repo.create_api_key(s, app.id)
                made[name] = ChatApp(app.id, key.token)
    finally:
        await db.close()
    return made


async def create_dataset(db_url: str, name: str, documents: dict[str, str]) -> str:
    """A keyword-search knowledge base beside the app database (where the server looks for it), with
    ``documents`` (name → text); its id."""
    from loopwright.knowledge import KnowledgeBase

    kb = KnowledgeBase.open(db_url)
    try:
        dataset = await kb.create_dataset(name)
        for document, text in documents.items():
            await kb.add_text(dataset, document, text)
        return dataset.id
    finally:
        await kb.close()


@dataclass
class Server:
    url: str
    process: subprocess.Popen[str]
    log: IO[str]


def start_server(folder: Path, db_path: Path, env: dict[str, str] | None = None) -> Server:
    """``loopwright serve --port 0`` in ``folder`` (with ``env`` added to its environment); waits for
    its ready line."""
    exe = Path(sys.executable).with_name("loopwright")
    import loopwright

    package_root = str(Path(loopwright.__file__).resolve().parents[1])  # the code under test
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "LOOPWRIGHT_DB": str(db_path),
        "LOOPWRIGHT_DATA_DIR": str(folder),  # uploads and tool files stay in the test's folder
        "LOOPWRIGHT_TOOL_ALLOW_HOSTS": "127.0.0.1",
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    env.pop("DATABASE_URL", None)
    log = open(folder / "server.log", "w")  # noqa: SIM115 (closed by stop_server)
    process = subprocess.Popen(
        [str(exe), "serve", "--host", "127.0.0.1", "--port", "0"],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    server = Server("", process, log)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("loopwright serving "):
        stop_server(server)
        raise AssertionError(f"loopwright serve did not start: {line!r}; see {folder / 'server.log'}")
    server.url = line.split()[2]
    return server


def stop_server(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.communicate()
    server.log.close()


@contextlib.contextmanager
def serving_apps(
    folder: Path, specs: dict[str, dict[str, Any]]
) -> Iterator[tuple[Server, dict[str, ChatApp]]]:
    """The apps of ``specs`` (``create_apps``) in a SQLite database in ``folder``, served by
    ``loopwright serve`` there until the block ends."""
    db_path = folder / "web.db"
    apps = asyncio.run(create_apps(f"sqlite+aiosqlite:///{db_path}", specs, folder))
    server = start_server(folder, db_path)
    try:
        yield server, apps
    finally:
        stop_server(server)


def send(page: Any, text: str) -> None:
    """Type ``text`` into the chat page's message box and send it (Enter)."""
    box = page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")


def screenshot_path(name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS / f"{name}.png"


def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


class CuttableProxy:
    """A TCP proxy on 127.0.0.1 in front of the server whose open connections a test can cut (a network
    drop, as a browser sees it); new connections go through again."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("http://").split(":")
        self.target = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.pairs: list[tuple[Any, Any]] = []
        self.lock = threading.Lock()
        self.closed = False
        self.acceptor = threading.Thread(target=self._accept, daemon=True)
        self.acceptor.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                if self.closed:  # came in while the proxy was closing: not served, not leaked
                    client.close()
                    upstream.close()
                    continue
                self.pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pump(source: Any, sink: Any) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Close every connection open now (both ends)."""
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            for s in pair:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()

    def close(self) -> None:
        with self.lock:
            self.closed = True
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self.listener.close()
        self.acceptor.join(10)
        self.cut()


class Watch:
    """A browser context that fails its test on anything a user should never meet: a console error
    (the page's own, a failed load, a refusal of its CSP), an uncaught exception, or a request that
    would leave 127.0.0.1 (refused, and noted). A test that provokes an error on purpose says so with
    ``allow`` (a pattern of the console text)."""

    def __init__(self, browser: Any, **options: Any) -> None:
        self.context = browser.new_context(**options)
        self.problems: list[str] = []
        self.allowed: list[re.Pattern[str]] = []
        self.context.on("console", self._console)
        self.context.on("weberror", lambda error: self.problems.append(f"uncaught: {error.error}"))
        self.context.route("**/*", self._route)

    def page(self) -> Any:
        page = self.context.new_page()
        page.set_default_timeout(20_000)
        return page

    def allow(self, pattern: str) -> None:
        self.allowed.append(re.compile(pattern))

    def _console(self, message: Any) -> None:
        refused = "Content Security Policy" in message.text or "Refused to" in message.text
        if (message.type == "error" or refused) and not any(p.search(message.text) for p in self.allowed):
            where = message.location.get("url", "") if isinstance(message.location, dict) else ""
            self.problems.append(f"console {message.type}: {message.text} ({where})")

    def _route(self, route: Any) -> None:
        url = urlparse(route.request.url)
        if url.scheme in ("data", "blob") or url.hostname == "127.0.0.1":
            route.fallback()
        else:
            self.problems.append(f"a request left 127.0.0.1: {route.request.method} {route.request.url}")
            route.abort()

    def close(self) -> None:
        """Close the context and fail on what it saw."""
        self.context.close()
        assert self.problems == [], "the page misbehaved:\n" + "\n".join(self.problems)


AXE = ROOT / "web" / "node_modules" / "axe-core" / "axe.min.js"


def serious_violations(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now (WCAG 2.1 A and AA and
    axe's best practices). axe-core is the web build's dev dependency (``npm ci`` in web/), run from
    that file: nothing is fetched. Each violation as "rule: help — the elements"."""
    if not AXE.is_file():
        problem = f"no axe-core at {AXE} (cd web && npm ci)"
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    if not page.evaluate("typeof window.axe === 'object'"):
        # Evaluated through the browser's debugging protocol, which the page's CSP does not govern.
        page.evaluate(AXE.read_text(encoding="utf-8"))
    found = page.evaluate(
        """async () => {
            const tags = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"];
            const result = await window.axe.run(document, {
                runOnly: { type: "tag", values: tags },
                resultTypes: ["violations"],
            });
            const where = (v) => v.nodes.map((n) => n.target.join(" ")).slice(0, 5).join(", ");
            return result.violations
                .filter((v) => v.impact === "serious" || v.impact === "critical")
                .map((v) => `${v.id} (${v.impact}): ${v.help} — ${where(v)}`);
        }"""
    )
    return list(found)


_FOCUSED_NAME = r"""() => {
    const e = document.activeElement;
    if (!e || e === document.body) return "";
    const label = e.labels && e.labels.length ? e.labels[0].innerText : "";
    const name = e.getAttribute("aria-label") || label || e.innerText || e.value || "";
    return name.replace(/\s+/g, " ").trim();
}"""


def focused_name(page: Any) -> str:
    """The accessible name of the focused element, roughly: its aria-label, else its label's text, its
    own text or its value."""
    return str(page.evaluate(_FOCUSED_NAME))


def wait_focused(page: Any, name: str, timeout_ms: float = 5000) -> None:
    """Wait until the element named ``name`` has the focus: the page moves the focus back after a
    dialog or an editor closes, which may take a frame after the element left the page."""
    try:
        page.wait_for_function(f"(name) => ({_FOCUSED_NAME})() === name", arg=name, timeout=timeout_ms)
    except Exception as e:
        raise AssertionError(f"the focus is on {focused_name(page)!r}, not on {name!r}") from e


def tab_to(page: Any, name: str, *, backwards: bool = False, limit: int = 80) -> None:
    """Press Tab (Shift+Tab) until the element named ``name`` has the focus; fails when it is never
    reached — a control the keyboard cannot get to."""
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if backwards else "Tab")
        if focused_name(page) == name:
            return
    raise AssertionError(f"{name!r} cannot be reached with the keyboard")
