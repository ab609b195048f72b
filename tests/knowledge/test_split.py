"""Cleaning, recursive splitting with overlap (sizes in estimated tokens), and Q&A parsing."""

from __future__ import annotations

from loopwright.knowledge.split import clean, parse_qa, separators_for, split_text
from loopwright.model.base import estimate_tokens

PARAGRAPHS = "\n\n".join(
    f"Paragraph {i} talks about topic number {i}. It has two sentences, the second one longer than the first."
    for i in range(1, 21)
)


def test_chunks_respect_the_token_limit_and_keep_all_text() -> None:
    chunks = split_text(PARAGRAPHS, chunk_tokens=60, overlap_tokens=0)
    assert len(chunks) > 5
    assert all(estimate_tokens(c) <= 60 for c in chunks)
    joined = " ".join(chunks)
    for i in range(1, 21):
        assert f"Paragraph {i} talks" in joined


def test_paragraphs_are_not_cut_when_they_fit() -> None:
    chunks = split_text(PARAGRAPHS, chunk_tokens=30, overlap_tokens=0)
    assert all(c.startswith("Paragraph") for c in chunks)
    assert len(chunks) == 20


def test_overlap_repeats_the_end_of_the_previous_chunk() -> None:
    text = " ".join(f"word{i}" for i in range(200))
    chunks = split_text(text, chunk_tokens=40, overlap_tokens=10)
    assert all(estimate_tokens(c) <= 40 for c in chunks)
    for before, after in zip(chunks, chunks[1:], strict=False):
        tail = before.split()[-2:]
        assert after.split()[:2] == tail or tail[-1] in after.split()[:6]
    no_overlap = split_text(text, chunk_tokens=40, overlap_tokens=0)
    assert len(chunks) > len(no_overlap)


def test_a_long_sentence_falls_back_to_smaller_separators_and_a_hard_cut() -> None:
    long_word = "x" * 600
    chunks = split_text(f"start {long_word} end", chunk_tokens=20)
    assert all(estimate_tokens(c) <= 20 for c in chunks)
    assert "".join(chunks).replace(" ", "").count("x") == 600


def test_custom_separator_comes_first() -> None:
    text = "alpha beta\n###\ngamma delta\n###\nepsilon"
    chunks = split_text(text, chunk_tokens=6, separators=separators_for("###"))
    assert chunks == ["alpha beta\n###", "gamma delta\n###", "epsilon"]
    assert separators_for("\\n")[0] == "\n"


def test_clean_collapses_spaces_and_can_drop_urls_and_emails() -> None:
    text = "Hello    world\r\n\r\n\r\n\r\nMail me at a.b@example.com or see https://example.com/x."
    assert clean(text) == "Hello world\n\nMail me at a.b@example.com or see https://example.com/x."
    cleaned = clean(text, remove_urls_emails=True)
    assert "example.com" not in cleaned and "Mail me at" in cleaned


def test_qa_pairs_from_text_and_csv() -> None:
    text = "Q: What is loopwright?\nA: An agent runtime.\nIt speaks Dify.\n\nQuestion: Free?\nAnswer: Yes."
    pairs = parse_qa(text)
    assert [(p.content, p.answer) for p in pairs] == [
        ("What is loopwright?", "An agent runtime.\nIt speaks Dify."),
        ("Free?", "Yes."),
    ]
    csv_pairs = parse_qa('question,answer\n"Who, exactly?",Us\n,skipped\n', csv_format=True)
    assert [(p.content, p.answer) for p in csv_pairs] == [("Who, exactly?", "Us")]
