"""Text from the files a knowledge base accepts: plain text, Markdown, HTML (trafilatura), PDF (pypdf).

Blocking (PDF parsing can take a while): call from a worker thread.
"""

from __future__ import annotations

import io
import logging
from html.parser import HTMLParser
from pathlib import PurePath

from loopwright.errors import UserInputError

KINDS = {
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".csv": "csv",
}
MIME_KINDS = {
    "text/plain": "text",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/html": "html",
    "application/pdf": "pdf",
    "text/csv": "csv",
}


log = logging.getLogger(__name__)


class ExtractError(UserInputError):
    """The file cannot be read as text; the message says why."""


def kind_of(name: str, mime_type: str | None = None) -> str:
    """``text``, ``markdown``, ``html``, ``pdf`` or ``csv`` from the file name, else its MIME type."""
    kind = KINDS.get(PurePath(name).suffix.lower())
    if kind is None and mime_type:
        kind = MIME_KINDS.get(mime_type.split(";", 1)[0].strip().lower())
    if kind is None:
        supported = ", ".join(sorted(KINDS))
        raise ExtractError(f"unsupported file type: {name!r} (supported: {supported})")
    return kind


def decode(data: bytes) -> str:
    """UTF-8 (a BOM is dropped), else Windows-1252, which maps every byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def extract_text(data: bytes, kind: str) -> str:
    """The readable text of a file's bytes."""
    if kind == "pdf":
        text = pdf_text(data)
    elif kind == "html":
        text = html_text(decode(data))
    else:
        text = decode(data)
    if not text.strip():
        raise ExtractError("no text could be extracted")
    return text


def pdf_text(data: bytes) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractError("the PDF is encrypted")
        pages = [page.extract_text() or "" for page in reader.pages]
    except ExtractError:
        raise
    except PdfReadError as exc:
        raise ExtractError(f"not a readable PDF: {exc}") from None
    except Exception as exc:  # pypdf on malformed bytes raises more than its own errors (TypeError, …)
        raise ExtractError(f"not a readable PDF ({type(exc).__name__}: {exc})") from None
    return "\n\n".join(p.strip() for p in pages if p.strip())


def html_text(html: str) -> str:
    """The main text of a page (trafilatura), or its visible text outside navigation, scripts and
    styles when trafilatura finds none or cannot be imported (its lxml extra missing)."""
    try:
        import trafilatura
    except ImportError as exc:
        log.warning("trafilatura is unavailable (%s); HTML is read as plain visible text", exc)
        return _all_text(html)
    text = trafilatura.extract(html, include_tables=True, include_comments=False, favor_recall=True)
    return text if text and text.strip() else _all_text(html)


class _TextCollector(HTMLParser):
    _SKIP = frozenset({"head", "script", "style", "noscript", "template", "nav", "header", "footer", "aside"})
    _BLOCK = frozenset(
        {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article"}
    )

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skipping:
            self._skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def _all_text(html: str) -> str:
    collector = _TextCollector()
    collector.feed(html)
    collector.close()
    return "".join(collector.parts)
