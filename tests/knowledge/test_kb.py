"""Datasets and documents end to end on a real SQLite file: status, re-ingest, delete, hits, paths."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from loopwright.knowledge import DatasetExistsError, DatasetNotFoundError, KnowledgeBase, knowledge_path
from loopwright.paths import sqlite_path_of_url
from tests.knowledge.conftest import make_pdf


async def test_create_list_find_and_delete_datasets(kb: KnowledgeBase) -> None:
    ds = await kb.create_dataset("Handbook", description="HR rules", chunk_tokens=120, overlap_tokens=10)
    assert ds.indexing_technique == "economy" and ds.retrieval.search_method == "keyword_search"
    assert (ds.chunk_tokens, ds.overlap_tokens) == (120, 10)
    with pytest.raises(DatasetExistsError):
        await kb.create_dataset("Handbook")
    with pytest.raises(ValueError):
        await kb.create_dataset("x" * 41)
    with pytest.raises(ValueError):
        await kb.create_dataset("bad", embedding="word2vec")
    assert (await kb.get_dataset("Handbook")).id == ds.id
    assert (await kb.get_dataset(ds.id)).name == "Handbook"
    assert [d.name for d in await kb.list_datasets()] == ["Handbook"]
    await kb.delete_dataset(ds)
    with pytest.raises(DatasetNotFoundError):
        await kb.get_dataset("Handbook")


async def test_document_status_goes_queued_indexing_completed(kb: KnowledgeBase) -> None:
    ds = await kb.create_dataset("hb", chunk_tokens=20, overlap_tokens=0)
    seen: list[str] = []
    document = await kb.queue_document(ds, "notes.md", "markdown")
    assert document.status == "queued"
    from loopwright.knowledge.ingest import Source

    async def watch() -> None:
        while True:
            current = await kb.store.get_document(document.id)
            assert current is not None
            if not seen or seen[-1] != current.status:
                seen.append(current.status)
            if current.status in ("completed", "error"):
                return
            await asyncio.sleep(0)

    text = "\n\n".join(f"Section {i}: the quick brown fox number {i} jumps." for i in range(30))
    watcher = asyncio.create_task(watch())
    done = await kb.index(ds, document, Source(kind="markdown", text=text))
    await watcher
    assert done.status == "completed" and done.error is None and done.segment_count > 5
    assert seen[-1] == "completed" and "queued" not in seen[1:]
    segments = await kb.store.list_segments(document.id)
    assert [s.position for s in segments] == list(range(1, len(segments) + 1))
    assert sum(s.word_count for s in segments) == done.word_count


async def test_files_of_each_kind(kb: KnowledgeBase, tmp_path: Path) -> None:
    ds = await kb.create_dataset("files")
    files = {
        "a.txt": b"Plain text about invoices.",
        "b.md": b"# Title\n\nMarkdown about receipts.",
        "c.html": b"<html><body><article><p>HTML about refunds and returns for customers.</p>"
        b"</article></body></html>",
        "d.pdf": make_pdf(["PDF about payment terms."]),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        doc = await kb.add_file(ds, tmp_path / name)
        assert doc.status == "completed", doc.error
    for word, name in [
        ("invoices", "a.txt"),
        ("receipts", "b.md"),
        ("refunds", "c.html"),
        ("payment", "d.pdf"),
    ]:
        hits = await kb.search(ds, word, method="keyword")
        assert hits and hits[0].document_name == name


async def test_a_bad_file_ends_in_error_with_the_reason(kb: KnowledgeBase) -> None:
    ds = await kb.create_dataset("hb")
    doc = await kb.add_bytes(ds, "broken.pdf", b"%PDF-1.4 not a pdf at all")
    assert doc.status == "error" and doc.error
    empty = await kb.add_text(ds, "empty.txt", "   \n  ")
    assert empty.status == "error" and "no text" in (empty.error or "")
    docs, total = await kb.list_documents(ds)
    assert total == 2 and {d.status for d in docs} == {"error"}
    assert (await kb.get_dataset("hb")).document_count == 0


async def test_reingest_of_the_same_name_replaces_the_document(kb: KnowledgeBase) -> None:
    ds = await kb.create_dataset("hb")
    first = await kb.add_text(ds, "policy.txt", "Employees get 25 vacation days.")
    second = await kb.add_text(ds, "policy.txt", "Employees get 30 vacation days.")
    docs, total = await kb.list_documents(ds)
    assert total == 1 and docs[0].id == second.id != first.id
    hits = await kb.search(ds, "vacation days", method="keyword", top_k=5)
    assert [h.segment.content for h in hits] == ["Employees get 30 vacation days."]
    failed = await kb.add_bytes(ds, "policy.txt", b"")  # a failed re-ingest keeps the old version
    assert failed.status == "error"
    hits = await kb.search(ds, "vacation days", method="keyword", top_k=5)
    assert [h.segment.content for h in hits] == ["Employees get 30 vacation days."]


async def test_delete_a_document_and_count_hits(kb: KnowledgeBase) -> None:
    ds = await kb.create_dataset("hb")
    keep = await kb.add_text(ds, "keep.txt", "Rockets need fuel.")
    gone = await kb.add_text(ds, "gone.txt", "Rockets need engineers.")
    assert await kb.delete_document(ds, gone.id)
    assert not await kb.delete_document(ds, gone.id)
    for _ in range(3):
        hits = await kb.search(ds, "rockets", method="keyword")
    assert [h.document_name for h in hits] == ["keep.txt"]
    (segment,) = await kb.store.list_segments(keep.id)
    assert segment.hit_count == 3
    await kb.search(ds, "rockets", method="keyword", count_hits=False)
    (segment,) = await kb.store.list_segments(keep.id)
    assert segment.hit_count == 3


async def test_qa_datasets_store_questions_and_answers(kb: KnowledgeBase) -> None:
    ds = await kb.create_dataset("faq", doc_form="qa_model")
    doc = await kb.add_text(
        ds, "faq.txt", "Q: Is parking free?\nA: Yes, in the garage.\nQ: Lunch?\nA: At noon."
    )
    assert doc.status == "completed" and doc.segment_count == 2
    doc = await kb.add_qa(ds, "more", [("Is there a gym?", "No, but a discount at a gym nearby.")])
    hits = await kb.search(ds, "gym discount", method="keyword")
    assert hits[0].segment.answer == "No, but a discount at a gym nearby."
    assert (
        hits[0].segment.sign_content()
        == "question:Is there a gym? answer:No, but a discount at a gym nearby."
    )
    bad = await kb.add_text(ds, "plain.txt", "No pairs in here.")
    assert bad.status == "error" and "question/answer" in (bad.error or "")


def test_knowledge_path_follows_the_app_database(tmp_path: Path) -> None:
    # Beside the app database, never in it (two SQLite libraries must not share a file).
    assert knowledge_path(f"sqlite+aiosqlite:///{tmp_path}/app.db") == tmp_path / "app.knowledge.sqlite3"
    assert knowledge_path("sqlite+aiosqlite:///rel.db") == Path("rel.knowledge.sqlite3")
    assert (
        knowledge_path("postgresql+asyncpg://u:p@h/db", data_dir=tmp_path) == tmp_path / "knowledge.sqlite3"
    )
    assert sqlite_path_of_url("sqlite+aiosqlite:///:memory:") is None


async def test_the_knowledge_tables_live_beside_the_app_database_not_in_it(tmp_path: Path) -> None:
    from sqlalchemy import text

    from loopwright.store.db import Database

    url = f"sqlite+aiosqlite:///{tmp_path / 'app.db'}"
    db = Database(url)
    await db.create_all()
    base = KnowledgeBase.open(url)
    try:
        ds = await base.create_dataset("beside")
        await base.add_text(ds, "a.txt", "its own file works")
        assert (tmp_path / "app.knowledge.sqlite3").is_file()
        async with db.transaction() as s:  # the app's file has no knowledge tables
            tables = (await s.execute(text("SELECT name FROM sqlite_master WHERE name LIKE 'kb_%'"))).all()
        assert tables == []
        assert (await base.search(ds, "own file", method="keyword"))[0].document_name == "a.txt"
    finally:
        await base.close()
        await db.close()
