"""Text from files: kinds by name or MIME type, HTML main text, PDF pages, encodings."""

from __future__ import annotations

import pytest

from loopwright.knowledge.extract import ExtractError, decode, extract_text, kind_of
from tests.knowledge.conftest import make_pdf


def test_kinds_by_extension_then_mime_type() -> None:
    assert kind_of("a.MD") == "markdown"
    assert kind_of("page.htm") == "html"
    assert kind_of("upload", "application/pdf") == "pdf"
    with pytest.raises(ExtractError, match="unsupported file type"):
        kind_of("image.png", "image/png")


def test_pdf_text() -> None:
    data = make_pdf(["Invoices are paid within 30 days.", "Late fees apply afterwards."])
    text = extract_text(data, "pdf")
    assert "Invoices are paid within 30 days." in text and "Late fees" in text


def test_a_broken_pdf_is_an_extract_error() -> None:
    with pytest.raises(ExtractError):
        extract_text(b"%PDF-1.4 this is not really a pdf", "pdf")


def test_html_main_text_without_scripts_or_navigation() -> None:
    html = """<html><head><title>T</title><script>var secret = 1;</script></head><body>
    <nav><a href="/">Home</a></nav>
    <article><h1>Returns</h1><p>Products can be returned within fourteen days of delivery,
    in their original packaging, with the receipt. Refunds reach your account within a week.</p>
    <p>Sale items cannot be returned, but they can be exchanged for another size.</p></article>
    </body></html>"""
    text = extract_text(html.encode(), "html")
    assert "returned within fourteen days" in text
    assert "var secret" not in text


def test_decoding_falls_back_for_non_utf8_and_empty_text_is_an_error() -> None:
    assert decode("café".encode("cp1252")) == "café"
    assert decode("\ufeffhello".encode()) == "hello"
    with pytest.raises(ExtractError, match="no text"):
        extract_text(b"  \n ", "text")
