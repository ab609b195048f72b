"""Segment edits keep both indexes in step: a segment added, changed or deleted is found (or no longer
found) by keyword and by vector search, on both vector stores; a document indexed again replaces its
own segments and keeps its id."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.knowledge import KnowledgeBase, MiniLMEmbedder
from loopwright.knowledge.entities import ChunkDraft
from loopwright.knowledge.ingest import Source


@pytest.mark.parametrize("backend", ["sqlite-vec", "lancedb"])
async def test_segment_edits_reach_keyword_and_vector_search(
    minilm: MiniLMEmbedder, tmp_path: Path, backend: str
) -> None:
    kb = KnowledgeBase(tmp_path / "kb.db")
    try:
        ds = await kb.create_dataset("rules", embedding="minilm", vector_store=backend)  # type: ignore[arg-type]
        doc = await kb.add_text(ds, "rules.txt", "Visitors sign in at the front desk.")
        ds = await kb.get_dataset(ds.id)

        async def top(query: str, method: str) -> str:
            hits = await kb.search(ds, query, method=method, top_k=1, count_hits=False)  # type: ignore[arg-type]
            return hits[0].segment.content if hits else ""

        [cat] = await kb.add_segments(ds, doc, [ChunkDraft("The office cat is called Miso.")])
        assert cat.position == 2 and cat.seq > 0
        assert await top("what is the name of the pet animal?", "vector") == cat.content
        assert await top("Miso", "keyword") == cat.content

        changed = await kb.update_segment(ds, cat, "Bicycles are parked in the basement garage.", None)
        assert changed.id == cat.id and changed.word_count == len(changed.content)
        assert await top("where can I leave my bike?", "vector") == changed.content
        assert await top("Miso", "keyword") == ""
        document = await kb.store.get_document(doc.id)
        assert document is not None and document.segment_count == 2
        assert document.word_count == len("Visitors sign in at the front desk.") + len(changed.content)

        await kb.delete_segment(ds, changed)
        assert await top("where can I leave my bike?", "vector") == "Visitors sign in at the front desk."
        assert await top("basement", "keyword") == ""

        again = await kb.requeue_document(doc, "rules.txt", "text")
        assert again.id == doc.id and again.status == "queued" and again.batch != doc.batch
        done = await kb.index(ds, again, Source(kind="text", text="Lunch is served at noon."))
        assert done.status == "completed" and done.segment_count == 1
        assert [s.content for s in await kb.store.list_segments(doc.id)] == ["Lunch is served at noon."]
        assert await top("when do we eat?", "vector") == "Lunch is served at noon."
        assert await top("visitors", "keyword") == ""
    finally:
        await kb.close()


async def test_a_knowledge_file_made_before_the_status_columns_gets_them(tmp_path: Path) -> None:
    from loopwright.knowledge.connection import connect

    path = tmp_path / "old.db"
    kb = KnowledgeBase(path)
    ds = await kb.create_dataset("old")
    doc = await kb.add_text(ds, "a.txt", "Old text.")
    await kb.close()
    conn = connect(str(path))  # back to the file as an older loopwright left it
    conn.execute("ALTER TABLE kb_documents DROP COLUMN enabled")
    conn.execute("ALTER TABLE kb_documents DROP COLUMN archived")
    conn.close()

    kb = KnowledgeBase(path)
    try:
        found = await kb.store.get_document(doc.id)
        assert found is not None and (found.enabled, found.archived) == (True, False)
        await kb.store.set_document_flags([doc.id], archived=True)
        hits = await kb.search(await kb.get_dataset(ds.id), "old text", count_hits=False)
        assert hits == []
    finally:
        await kb.close()
