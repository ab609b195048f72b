"""Cleaning and splitting text into segments: recursive by separators, sizes in tokens, with overlap.

Like Dify's (and LangChain's) recursive splitter: the text is cut at the first separator that occurs
(the dataset's own, then paragraphs, lines, sentences, clauses, words), a piece still too long is cut
again with the next separator, and the pieces are packed into chunks of at most ``chunk_tokens``, each
starting with up to ``overlap_tokens`` of the previous chunk's end. Tokens are estimated offline
(``estimate_tokens``). Q&A text becomes question/answer segments.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence

from loopwright.knowledge.entities import ChunkDraft
from loopwright.model.base import estimate_tokens, token_prefix_length

FALLBACK_SEPARATORS = ("\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ")
_URL = re.compile(r"https?://[^\s)>\]]+|www\.[^\s)>\]]+")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_SPACES = re.compile(r"[ \t\f\v\u00a0\u3000]{2,}")
_BLANK_LINES = re.compile(r"\n{3,}")
_QA_LINE = re.compile(r"^\s*(q|question|a|answer)\s*[:：]\s*(.*)$", re.IGNORECASE)


def clean(text: str, *, remove_extra_spaces: bool = True, remove_urls_emails: bool = False) -> str:
    """Dify's pre-processing rules: collapse runs of spaces and blank lines; drop URLs and e-mails."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    if remove_urls_emails:
        text = _EMAIL.sub("", _URL.sub("", text))
    if remove_extra_spaces:
        text = _BLANK_LINES.sub("\n\n", _SPACES.sub(" ", text))
    return text.strip()


def split_text(
    text: str,
    chunk_tokens: int,
    overlap_tokens: int = 0,
    separators: Sequence[str] = FALLBACK_SEPARATORS,
) -> list[str]:
    """Chunks of at most ``chunk_tokens`` estimated tokens (a single word longer than that is cut)."""
    if chunk_tokens < 1:
        raise ValueError("chunk_tokens must be at least 1")
    overlap_tokens = max(0, min(overlap_tokens, chunk_tokens // 2))
    pieces = _pieces(text, chunk_tokens, _unique(separators))
    return [c for c in (chunk.strip() for chunk in _pack(pieces, chunk_tokens, overlap_tokens)) if c]


def separators_for(separator: str | None) -> tuple[str, ...]:
    """The dataset's separator first (Dify's ``segmentation.separator``; ``\\n`` written as text is a
    newline), then the fallbacks."""
    first = (separator or "").replace("\\n", "\n")
    return _unique((first, *FALLBACK_SEPARATORS)) if first else FALLBACK_SEPARATORS


def _unique(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s for s in items if s))


def _split_keep(text: str, sep: str) -> list[str]:
    """Split after each separator, keeping it at the end of the piece before it."""
    parts = text.split(sep)
    out = [p + sep for p in parts[:-1]]
    out.append(parts[-1])
    return [p for p in out if p]


def _pieces(text: str, limit: int, separators: tuple[str, ...]) -> list[tuple[str, int]]:
    """Pieces of ``text`` no longer than ``limit`` tokens, with their token counts, in order."""
    tokens = estimate_tokens(text)
    if tokens <= limit:
        return [(text, tokens)] if text else []
    for i, sep in enumerate(separators):
        if sep in text:
            out: list[tuple[str, int]] = []
            for part in _split_keep(text, sep):
                out.extend(_pieces(part, limit, separators[i + 1 :]))
            return out
    return _hard_cut(text, limit)


def _hard_cut(text: str, limit: int) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    while text:
        cut = token_prefix_length(text, limit) or _chars_within(text, limit)
        head, text = text[:cut], text[cut:]
        out.append((head, estimate_tokens(head)))
    return out


def _chars_within(word: str, limit: int) -> int:
    """The longest prefix of one over-long word that fits ``limit`` tokens (at least one character)."""
    low, high = 1, len(word)
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_tokens(word[:mid]) <= limit:
            low = mid
        else:
            high = mid - 1
    return low


def _pack(pieces: list[tuple[str, int]], limit: int, overlap: int) -> list[str]:
    chunks: list[str] = []
    current: list[tuple[str, int]] = []
    size = 0
    for piece, n in pieces:
        if current and size + n > limit:
            chunks.append("".join(p for p, _ in current))
            # Keep the tail of this chunk (up to ``overlap`` tokens) to start the next one.
            tail: list[tuple[str, int]] = []
            kept = 0
            for p, m in reversed(current):
                if kept + m > overlap or kept + m + n > limit:
                    break
                tail.insert(0, (p, m))
                kept += m
            current, size = tail, kept
        current.append((piece, n))
        size += n
    if current:
        chunks.append("".join(p for p, _ in current))
    return chunks


# --- Q&A ---------------------------------------------------------------------------------------------


def parse_qa(text: str, *, csv_format: bool = False) -> list[ChunkDraft]:
    """Question/answer pairs from a two-column CSV (``question,answer``; a header row is skipped) or
    from ``Q: … / A: …`` blocks (``Question:``/``Answer:`` too; an answer may span lines)."""
    return _qa_from_csv(text) if csv_format else _qa_from_text(text)


def _qa_from_csv(text: str) -> list[ChunkDraft]:
    out: list[ChunkDraft] = []
    for i, row in enumerate(csv.reader(io.StringIO(text))):
        cells = [c.strip() for c in row]
        if len(cells) < 2 or not cells[0] or not cells[1]:
            continue
        if i == 0 and cells[0].lower() in ("question", "q") and cells[1].lower() in ("answer", "a"):
            continue
        out.append(ChunkDraft(cells[0], cells[1]))
    return out


def _qa_from_text(text: str) -> list[ChunkDraft]:
    out: list[ChunkDraft] = []
    question: list[str] = []
    answer: list[str] = []
    target: list[str] | None = None

    def flush() -> None:
        q, a = " ".join(question).strip(), "\n".join(answer).strip()
        if q and a:
            out.append(ChunkDraft(q, a))
        question.clear()
        answer.clear()

    for line in text.splitlines():
        m = _QA_LINE.match(line)
        if m and m.group(1).lower() in ("q", "question"):
            flush()
            question.append(m.group(2))
            target = question
        elif m:
            answer.append(m.group(2))
            target = answer
        elif target is not None and line.strip():
            target.append(line.strip())
    flush()
    return out
