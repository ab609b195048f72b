"""web_fetch against a real server on 127.0.0.1 (allow-listed), through the tool engine."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from loopwright.tools.builtin import builtin_tools
from loopwright.tools.builtin.web_fetch import _plain_text, html_to_text, web_fetch_tool
from loopwright.tools.engine import ToolEngine
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy
from tests.live_server import serving

LOCAL = NetworkPolicy.from_strings(["127.0.0.1"])
PARAGRAPH = "The quick brown fox studies the migration of birds across the northern sea. " * 12
ARTICLE = f"""<!doctype html><html><head><title>Birds of the North</title>
<script>var tracking = "SECRET-SCRIPT";</script><style>.x{{color:red}}</style></head>
<body><nav><a href="/">Home</a> | <a href="/about">About us</a></nav>
<article><h1>Birds of the North</h1><p>{PARAGRAPH}</p><p>Terns fly from pole to pole every year.</p>
<p>{PARAGRAPH}</p></article>
<footer>Copyright 2024 Example Corp. All rights reserved.</footer></body></html>"""
TINY = "<html><head><title>Tiny</title></head><body><p>Hi there</p><script>alert('x')</script></body></html>"
BIG = 3 * 1024 * 1024


async def article(_: Request) -> Response:
    return HTMLResponse(ARTICLE)


async def tiny(_: Request) -> Response:
    return HTMLResponse(TINY)


async def text(_: Request) -> Response:
    return PlainTextResponse("line one\nline two\n")


async def data(_: Request) -> Response:
    return JSONResponse({"name": "loopwright", "tags": ["agent", "tools"], "ok": True})


async def big(_: Request) -> Response:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(BIG // 65536):
            yield b"x" * 65535 + b"\n"

    return StreamingResponse(chunks(), media_type="text/plain")


async def missing(_: Request) -> Response:
    return HTMLResponse("<html><body><h1>Not Found</h1><p>no such page here</p></body></html>", 404)


async def broken(_: Request) -> Response:
    return PlainTextResponse("database exploded", 500)


async def redirect(request: Request) -> Response:
    return RedirectResponse(request.query_params.get("to", "/text"), status_code=302)


async def image(_: Request) -> Response:
    return Response(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, media_type="image/png")


async def latin1(_: Request) -> Response:
    return Response("café crème".encode("latin-1"), media_type="text/plain; charset=iso-8859-1")


async def untyped(_: Request) -> Response:
    response = Response(TINY.encode())
    del response.headers["content-type"]
    return response


async def slow(_: Request) -> Response:
    await asyncio.sleep(2)
    return PlainTextResponse("late")


APP = Starlette(
    routes=[
        Route(path, fn)
        for path, fn in {
            "/article": article,
            "/tiny": tiny,
            "/text": text,
            "/data": data,
            "/big": big,
            "/missing": missing,
            "/broken": broken,
            "/redirect": redirect,
            "/image": image,
            "/latin1": latin1,
            "/untyped": untyped,
            "/slow": slow,
        }.items()
    ]
)


@pytest.fixture
async def base() -> AsyncIterator[str]:
    async with serving(APP) as url:
        yield url


async def fetch(url: str, policy: NetworkPolicy = LOCAL, **options: Any) -> str:
    engine = ToolEngine([web_fetch_tool(policy, **options)], observation_token_limit=None)
    return (await engine.invoke("web_fetch", {"url": url})).observation


def test_schema_and_registration() -> None:
    tool = web_fetch_tool()
    assert tool.schema.parameters["required"] == ["url"]
    assert tool.schema.parameters["properties"]["url"]["type"] == "string"
    assert "web_fetch" in [t.name for t in builtin_tools(LOCAL)]


async def test_html_article_becomes_readable_text(base: str) -> None:
    out = await fetch(f"{base}/article")
    assert out.startswith(f"URL: {base}/article\nContent-Type: text/html\nTitle: Birds of the North\n\n")
    assert "Terns fly from pole to pole every year." in out
    assert "quick brown fox" in out
    assert "SECRET-SCRIPT" not in out and "color:red" not in out and "<p>" not in out


async def test_trafilatura_drops_boilerplate(base: str) -> None:
    pytest.importorskip("trafilatura", exc_type=ImportError, reason="trafilatura cannot be imported here")
    out = await fetch(f"{base}/article")
    assert "Terns fly from pole to pole" in out
    assert "About us" not in out and "All rights reserved" not in out


async def test_tiny_html_falls_back_to_plain_text(base: str) -> None:
    out = await fetch(f"{base}/tiny")
    assert "Title: Tiny" in out and out.rstrip().endswith("Hi there")
    assert "alert" not in out


def test_plain_extraction_keeps_blocks_apart() -> None:
    title, body = _plain_text(b"<h1>A</h1><p>one</p><ul><li>two</li><li>three</li></ul>x<br>y")
    assert title == "" and body.splitlines()[-5:] == ["one", "two", "three", "x", "y"]
    assert html_to_text(b"  ", None, "") == ("", "")


async def test_text_and_json_come_back_as_they_are(base: str) -> None:
    out = await fetch(f"{base}/text")
    assert out == f"URL: {base}/text\nContent-Type: text/plain\n\nline one\nline two"
    out = await fetch(f"{base}/data")
    body = out.split("\n\n", 1)[1]
    assert "Content-Type: application/json" in out
    assert json.loads(body) == {"name": "loopwright", "tags": ["agent", "tools"], "ok": True}


async def test_charset_is_honoured(base: str) -> None:
    assert (await fetch(f"{base}/latin1")).endswith("café crème")


async def test_missing_content_type_is_sniffed(base: str) -> None:
    out = await fetch(f"{base}/untyped")
    assert "Content-Type: text/html" in out and "Hi there" in out and "alert" not in out


async def test_big_body_is_cut_at_the_download_limit(base: str) -> None:
    out = await fetch(f"{base}/big", max_chars=10_000_000)
    assert "[truncated: the response is larger than 2.0 MB; only that much was read]" in out
    body = out.split("\n\n", 1)[1]
    assert body.count("x") == 2 * 1024 * 1024 - (2 * 1024 * 1024) // 65536  # 2 MB read, less newlines
    small = await fetch(f"{base}/big", max_bytes=1000, max_chars=100)
    assert "larger than 1000 B" in small and "showing the first 100 of" in small
    assert len(small) < 400


async def test_output_is_bounded(base: str) -> None:
    out = await fetch(f"{base}/article", max_chars=200)
    assert "[truncated: showing the first 200 of" in out
    assert len(out.split("\n\n", 1)[1]) < 200 + 120


async def test_binary_is_described_not_returned(base: str) -> None:
    out = await fetch(f"{base}/image")
    assert "Content-Type: image/png" in out
    assert "The response is a image/png file (108 bytes), not text" in out
    assert "PNG" not in out.replace("image/png", "")


async def test_http_errors_are_tool_errors(base: str) -> None:
    out = await fetch(f"{base}/missing")
    expected = f"fetching {base}/missing failed with status 404 Not Found: Not Found no such page here"
    assert out == f"tool invoke error: {expected}"
    out = await fetch(f"{base}/broken")
    assert "status 500 Internal Server Error: database exploded" in out


async def test_redirects_are_followed_and_reported(base: str) -> None:
    out = await fetch(f"{base}/redirect")
    assert out.startswith(f"URL: {base}/text\n") and "line two" in out
    out = await fetch(f"{base}/redirect?to=/missing")
    assert (
        f"fetching {base}/redirect?to=/missing (redirected to {base}/missing) failed with status 404" in out
    )


async def test_redirect_to_metadata_is_blocked(base: str, no_network: Any) -> None:
    out = await fetch(f"{base}/redirect?to=http://169.254.169.254/latest/meta-data/iam")
    assert out.startswith("tool invoke error: blocked request to 169.254.169.254: a cloud metadata address")
    assert no_network.blocked == []


async def test_default_policy_refuses_loopback(base: str) -> None:
    out = await fetch(f"{base}/text", DEFAULT_POLICY)
    assert out.startswith("tool invoke error: blocked request to 127.0.0.1: a loopback address")
    assert "LOOPWRIGHT_TOOL_ALLOW_HOSTS" in out


async def test_timeout_is_a_clear_error(base: str) -> None:
    out = await fetch(f"{base}/slow", timeout=httpx.Timeout(0.3))
    assert out == f"tool invoke error: fetching {base}/slow timed out (no data within the read timeout)"


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "/relative/path", "", "file:///etc/passwd"])
async def test_bad_urls(url: str) -> None:
    out = await fetch(url)
    assert out.startswith("tool invoke error:") and "http" in out


async def test_connection_refused() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    out = await fetch(f"http://127.0.0.1:{port}/text")
    assert out.startswith(f"tool invoke error: fetching http://127.0.0.1:{port}/text failed: ")
