"""Knowledge test helpers: a knowledge base in a temporary SQLite file, one shared MiniLM model, PDFs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loopwright.config import Settings
from loopwright.knowledge import KnowledgeBase, MiniLMEmbedder
from loopwright.knowledge.embeddings import load_minilm

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """The packaged MiniLM, loaded once for the whole test session (the model is process-wide)."""
    load_minilm()
    return MiniLMEmbedder()


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[KnowledgeBase]:
    base = KnowledgeBase(tmp_path / "kb.db", settings=Settings())
    yield base
    await base.close()


def make_pdf(lines: list[str]) -> bytes:
    """A one-page PDF showing ``lines`` in Helvetica (ASCII text), with a correct xref table."""
    text = " ".join(f"({line}) Tj 0 -16 Td" for line in lines)
    stream = f"BT /F1 12 Tf 72 720 Td {text} ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
