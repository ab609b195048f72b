"""``web_fetch``: fetch a URL through the SSRF guard and return its readable text.

HTML becomes text with trafilatura (main content, boilerplate dropped), or with a plain extraction of
every visible text node when trafilatura finds nothing; ``text/*``, JSON and XML come back as they are;
anything else is described in one line, never returned as bytes. Downloads stop at ``max_bytes`` and
the text at ``max_chars``, each saying so.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from loopwright._threads import run_sync
from loopwright.tools.base import TextMessage, Tool, ToolContext, ToolInvokeError, ToolOutput, ToolParameter
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy, guarded_client, read_limited

log = logging.getLogger(__name__)

MAX_BYTES = 2 * 1024 * 1024
MAX_CHARS = 12_000
# Under the engine's default 30 s tool timeout, so the model gets this tool's clearer message.
TIMEOUT = httpx.Timeout(20.0, connect=10.0)
USER_AGENT = "loopwright-web-fetch/1 (+https://github.com/loopwright)"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5"
ERROR_EXCERPT = 300

_HTML = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_APPS = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-ndjson",
        "application/yaml",
    }
)
_BLOCK_WORDS = (
    "p div br li ul ol h1 h2 h3 h4 h5 h6 tr table section article header footer main aside nav pre "
    "blockquote dt dd figcaption details summary form hr"
)
_BLOCKS = frozenset(_BLOCK_WORDS.split())
_HIDDEN = "//script|//style|//noscript|//template|//svg|//iframe|//object|//canvas|//head"


@dataclass(frozen=True, slots=True)
class Page:
    url: str
    status: int
    mime: str
    charset: str | None
    body: bytes
    truncated: bool
    declared_size: int | None


def web_fetch_tool(
    policy: NetworkPolicy = DEFAULT_POLICY,
    *,
    max_bytes: int = MAX_BYTES,
    max_chars: int = MAX_CHARS,
    timeout: httpx.Timeout = TIMEOUT,
) -> Tool:
    """The ``web_fetch`` tool; ``policy`` says which private hosts it may reach besides public ones."""

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        url = str(args.get("url") or "").strip()
        page = await fetch(url, policy, max_bytes=max_bytes, timeouts=timeout)
        yield TextMessage(await run_sync(render, page, max_chars))

    return Tool(
        name="web_fetch",
        label="Web fetch",
        description=(
            "Fetch a web page or file over HTTP(S) and return its readable text: HTML as text, "
            "plain text and JSON as they are. Use it to read a URL the user gives or one you found."
        ),
        parameters=(
            ToolParameter(
                "url", "string", required=True, description="The absolute http:// or https:// URL to fetch."
            ),
        ),
        invoke=invoke,
    )


async def fetch(
    url: str, policy: NetworkPolicy, *, max_bytes: int, timeouts: httpx.Timeout, user_agent: str = USER_AGENT
) -> Page:
    """GET ``url`` (redirects followed, each hop guarded), reading at most ``max_bytes`` of text."""
    _check_scheme(url)
    headers = {"User-Agent": user_agent, "Accept": ACCEPT}
    try:
        async with (
            guarded_client(policy, timeout=timeouts, headers=headers) as client,
            client.stream("GET", url) as response,
        ):
            mime = _mime(response.headers.get("content-type", ""))
            if response.status_code >= 400:
                raise ToolInvokeError(await _status_error(url, response))
            size = _int(response.headers.get("content-length"))
            if mime and not _is_textual(mime):
                body, truncated = b"", False  # described, never read
            else:
                body, truncated = await read_limited(response, max_bytes)
            return Page(
                str(response.url),
                response.status_code,
                mime,
                response.charset_encoding,
                body,
                truncated,
                size,
            )
    except httpx.TimeoutException as exc:
        raise ToolInvokeError(f"fetching {url} timed out ({_timeout_kind(exc)})") from None
    except httpx.TooManyRedirects:
        raise ToolInvokeError(f"fetching {url} failed: too many redirects") from None
    except httpx.HTTPError as exc:
        raise ToolInvokeError(f"fetching {url} failed: {exc or type(exc).__name__}") from None


def render(page: Page, max_chars: int) -> str:
    """The observation for a fetched page: a short header, then its text, bounded to ``max_chars``."""
    mime = page.mime or _sniff(page.body)
    header = [f"URL: {page.url}", f"Content-Type: {mime or 'unknown'}"]
    if not _is_textual(mime):
        size = f"{page.declared_size} bytes" if page.declared_size is not None else "unknown size"
        header.append(
            f"The response is a {mime or 'binary'} file ({size}), not text, so its content is not "
            "shown; web_fetch reads HTML, text and JSON."
        )
        return "\n".join(header)
    if mime in _HTML:
        title, text = html_to_text(page.body, page.charset, page.url)
        if title:
            header.append(f"Title: {title}")
    else:
        text = page.body.decode(page.charset or "utf-8", errors="replace")
    notes = []
    if page.truncated:
        notes.append(
            f"[truncated: the response is larger than {_size(len(page.body))}; only that much was read]"
        )
    if len(text) > max_chars:
        notes.append(f"[truncated: showing the first {max_chars} of {len(text)} characters]")
        text = text[:max_chars]
    body = text.strip() or "(no text content)"
    return "\n".join(header) + "\n\n" + body + ("\n\n" + "\n".join(notes) if notes else "")


def html_to_text(body: bytes, charset: str | None, url: str) -> tuple[str, str]:
    """The page's title and readable text: trafilatura's main-content extraction, else every visible
    text node (a page too small or unusual for trafilatura still yields its text)."""
    markup: str | bytes = body.decode(charset, errors="replace") if charset else body
    if not body.strip():
        return "", ""
    text = _trafilatura(markup, url)
    title, plain = _plain_text(markup)
    return title, text or plain


@functools.cache
def _load_trafilatura() -> Any:
    try:
        import trafilatura
    except ImportError as exc:  # its justext dependency needs lxml_html_clean since lxml 5.2
        log.warning("trafilatura is unavailable (%s); web_fetch falls back to plain HTML text", exc)
        return None
    return trafilatura


def _trafilatura(markup: str | bytes, url: str) -> str:
    trafilatura = _load_trafilatura()
    if trafilatura is None:
        return ""
    try:
        text = trafilatura.extract(
            markup, url=url or None, output_format="markdown", include_tables=True, include_comments=False
        )
    except Exception as exc:  # a parser failure on odd markup; the plain extraction still works
        log.info("trafilatura failed on %s: %s", url, exc)
        return ""
    return str(text or "").strip()


def _plain_text(markup: str | bytes) -> tuple[str, str]:
    import lxml.etree  # type: ignore[import-untyped]
    import lxml.html  # type: ignore[import-untyped]

    try:
        try:
            doc = lxml.html.document_fromstring(markup)
        except ValueError:  # a str with an XML encoding declaration: let lxml read the bytes
            doc = lxml.html.document_fromstring(markup.encode() if isinstance(markup, str) else markup)
    except (lxml.etree.ParserError, ValueError):
        return "", ""
    title = " ".join(" ".join(doc.xpath("//title//text()")).split())
    for el in doc.xpath(_HIDDEN):
        el.drop_tree()
    for el in doc.iter():
        if isinstance(el.tag, str) and el.tag.lower() in _BLOCKS:
            el.tail = "\n" + (el.tail or "")
            el.text = "\n" + (el.text or "")
    lines = (" ".join(line.split()) for line in doc.text_content().splitlines())
    return title, "\n".join(line for line in lines if line)


async def _status_error(url: str, response: httpx.Response) -> str:
    body, _ = await read_limited(response, 4096)
    excerpt = ""
    if _is_textual(_mime(response.headers.get("content-type", "")) or _sniff(body)):
        text = body.decode(response.charset_encoding or "utf-8", errors="replace")
        excerpt = " ".join(re.sub(r"<[^>]*>", " ", text).split())[:ERROR_EXCERPT]
    reason = f" {response.reason_phrase}" if response.reason_phrase else ""
    where = url if str(response.url) == url else f"{url} (redirected to {response.url})"
    return f"fetching {where} failed with status {response.status_code}{reason}" + (
        f": {excerpt}" if excerpt else ""
    )


def _check_scheme(url: str) -> None:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ToolInvokeError(f"invalid URL {url!r}: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ToolInvokeError(f"web_fetch needs an absolute http:// or https:// URL, got {url!r}")


def _mime(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _is_textual(mime: str) -> bool:
    return mime.startswith("text/") or mime in _TEXT_APPS or mime in _HTML or mime.endswith(("+json", "+xml"))


def _sniff(body: bytes) -> str:
    """A MIME type for a response that declared none: HTML, text, or nothing (binary)."""
    head = body[:1024].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")) or b"<body" in head:
        return "text/html"
    try:
        body[:4096].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(body[:4096]) - 4:  # a character cut at the end is fine
            return ""
    return "text/plain" if b"\x00" not in body[:4096] else ""


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{n // 1024} KB" if n >= 1024 else f"{n} B"


def _timeout_kind(exc: httpx.TimeoutException) -> str:
    kinds = {
        httpx.ConnectTimeout: "no connection within the connect timeout",
        httpx.ReadTimeout: "no data within the read timeout",
        httpx.WriteTimeout: "write timeout",
        httpx.PoolTimeout: "pool timeout",
    }
    return kinds.get(type(exc), "timeout")
