"""app.datasets: Dify's Knowledge API fields read into datasets, documents and retrieval, on a real
knowledge base (keyword search only: no embedding model is loaded)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loopwright.app.admin import datasets
from loopwright.app.admin.datasets import DatasetExistsError, KnowledgeBase, NewDataset
from loopwright.errors import NotFoundError, UserInputError


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[KnowledgeBase]:
    base = KnowledgeBase(tmp_path / "knowledge.sqlite3")
    yield base
    await base.close()


@pytest.mark.parametrize(
    ("embedding", "technique", "model", "spec"),
    [
        ("openai:text-embedding-3-small", "economy", None, "openai:text-embedding-3-small"),  # wins
        (None, None, None, "none"),
        (None, "economy", "anything", "none"),
        (None, "high_quality", None, "minilm"),
        (None, "high_quality", "all-MiniLM-L6-v2", "minilm"),
        (None, "high_quality", " bge-m3 ", "openai:bge-m3"),
    ],
)
def test_the_embedding_spec_of_dify_fields(
    embedding: str | None, technique: str | None, model: str | None, spec: str
) -> None:
    assert datasets.embedding_spec(embedding, technique, model) == spec


def test_bad_embedding_fields_are_the_caller_s_fault() -> None:
    with pytest.raises(UserInputError, match="indexing_technique"):
        datasets.embedding_spec(None, "best", None)
    with pytest.raises(UserInputError, match="unknown embedding"):
        datasets.embedding_spec("word2vec", None, None)


def test_splitting_rules_of_a_process_rule() -> None:
    assert datasets.splitting_rules(None) == {} == datasets.splitting_rules({"mode": "automatic"})
    rule = {
        "mode": "custom",
        "rules": {
            "segmentation": {"max_tokens": "50", "chunk_overlap": 5, "separator": "\n\n"},
            "pre_processing_rules": [
                {"id": "remove_extra_spaces", "enabled": True},
                {"id": "remove_urls_emails", "enabled": False},
                {"id": "unknown", "enabled": True},
            ],
        },
    }
    assert datasets.splitting_rules(rule) == {
        "chunk_tokens": 50,
        "overlap_tokens": 5,
        "separator": "\n\n",
        "remove_extra_spaces": True,
        "remove_urls_emails": False,
    }
    with pytest.raises(UserInputError):
        datasets.splitting_rules({"mode": "custom", "rules": {"segmentation": {"chunk_overlap": -1}}})


def test_document_kinds() -> None:
    assert datasets.document_kind("notes.md", None) == "markdown"
    assert datasets.document_kind("upload", "text/csv; charset=utf-8") == "csv"
    assert datasets.document_kind("photo.png", "image/png") is None


async def test_datasets_are_created_once_by_name_and_paged(kb: KnowledgeBase) -> None:
    first = await datasets.create_dataset(kb, NewDataset(name="Handbook"))
    assert first.embedding == "none"
    with pytest.raises(DatasetExistsError):
        await datasets.create_dataset(kb, NewDataset(name="Handbook"))
    for bad in (NewDataset(name=" "), NewDataset(name="x" * 41), NewDataset(name="a", doc_form="nope")):
        with pytest.raises(UserInputError):
            await datasets.create_dataset(kb, bad)
    await datasets.create_dataset(kb, NewDataset(name="Other"))
    page = await datasets.dataset_page(kb, None, 1, 1)
    assert len(page.datasets) == 1 and page.total == 2 and page.has_more is True
    assert (await datasets.dataset_page(kb, "Oth", 1, 20)).datasets[0].name == "Other"
    with pytest.raises(UserInputError):
        await datasets.dataset_page(kb, None, 0, 20)
    assert (await datasets.get_dataset(kb, first.id)).name == "Handbook"
    with pytest.raises(NotFoundError, match="Dataset not found."):
        await datasets.get_dataset(kb, "Handbook")  # by id only, not by name
    await datasets.delete_dataset(kb, first.id)
    with pytest.raises(NotFoundError):
        await datasets.get_dataset(kb, first.id)


async def test_a_queued_document_is_indexed_by_its_job_then_found(kb: KnowledgeBase) -> None:
    dataset = await datasets.create_dataset(kb, NewDataset(name="Handbook"))
    queued = await datasets.queue_document(
        kb, dataset, "vacation.txt", text="Employees get 25 vacation days."
    )
    assert queued.document.status == "queued"
    [waiting] = await datasets.batch_documents(kb, dataset, queued.document.batch)
    assert waiting.status == "queued"
    indexed = await queued.index()
    assert indexed.status == "completed"
    documents, total = await datasets.list_documents(kb, dataset, None, 1, 20)
    assert total == 1 and [d.status for d in documents] == ["completed"]

    hits = await datasets.retrieve(kb, dataset, "vacation days", {"search_method": "keyword_search"})
    assert [h.segment.content for h in hits] == ["Employees get 25 vacation days."]
    with pytest.raises(UserInputError, match="query is required"):
        await datasets.retrieve(kb, dataset, "  ", None)
    with pytest.raises(UserInputError, match="retrieval_model"):
        await datasets.retrieve(kb, dataset, "days", {"top_k": "many"})

    with pytest.raises(NotFoundError, match="Documents not found."):
        await datasets.batch_documents(kb, dataset, "no-batch")
    with pytest.raises(NotFoundError, match="Document Not Exists."):
        await datasets.delete_document(kb, dataset, "no-document")
    await datasets.delete_document(kb, dataset, indexed.id)
    assert (await datasets.list_documents(kb, dataset, None, 1, 20))[1] == 0
