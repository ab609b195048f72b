"""Embedding models: specs, the packaged MiniLM (offline), an OpenAI-compatible endpoint on loopback."""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi import FastAPI, Request

from loopwright.config import Settings
from loopwright.knowledge import EmbeddingError, KnowledgeBase, MiniLMEmbedder, OpenAIEmbedder
from loopwright.knowledge.embeddings import embedder_for, parse_embedding_spec
from tests.live_server import serving

HASH_DIM = 64


def hashed_vector(text: str) -> list[float]:
    """A bag-of-words vector: texts that share words point the same way."""
    vec = np.zeros(HASH_DIM, dtype=np.float32)
    for word in re.findall(r"\w+", text.lower()):
        vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % HASH_DIM] += 1.0
    return [float(x) for x in vec]


def embeddings_app(calls: list[dict[str, Any]]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/embeddings")
    async def embeddings(request: Request) -> dict[str, Any]:
        body = await request.json()
        calls.append({"body": body, "auth": request.headers.get("authorization")})
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_vector(t)} for i, t in enumerate(inputs)
        ]
        data.reverse()  # the client must order by index
        return {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }

    return app


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    calls: list[dict[str, Any]] = []
    async with serving(embeddings_app(calls)) as url:
        yield f"{url}/v1", calls


def test_specs() -> None:
    assert parse_embedding_spec(None) == "none"
    assert parse_embedding_spec(" MiniLM ") == "minilm"
    assert parse_embedding_spec("openai: text-embedding-3-small") == "openai:text-embedding-3-small"
    with pytest.raises(ValueError):
        parse_embedding_spec("openai:")
    assert embedder_for("none") is None
    assert isinstance(embedder_for("minilm"), MiniLMEmbedder)
    made = embedder_for("openai:m", Settings(openai_base_url="http://127.0.0.1:1/v1", openai_api_key="k"))
    assert isinstance(made, OpenAIEmbedder) and made.base_url == "http://127.0.0.1:1/v1"


def test_without_settings_the_endpoint_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:2/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "")
    made = embedder_for("openai:m")
    assert isinstance(made, OpenAIEmbedder) and made.base_url == "http://127.0.0.1:2/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    with_default = embedder_for("openai:m")
    assert isinstance(with_default, OpenAIEmbedder) and with_default.base_url == "https://api.openai.com/v1"


async def test_minilm_puts_paraphrases_closer_than_unrelated_text(minilm: MiniLMEmbedder) -> None:
    vecs = await minilm.embed(
        [
            "How many vacation days do I get?",
            "Employees receive 25 days off.",
            "The robot vacuum charges in four hours.",
        ]
    )
    assert vecs.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert float(vecs[0] @ vecs[1]) > float(vecs[0] @ vecs[2]) + 0.1


async def test_openai_compatible_endpoint_in_batches(endpoint: tuple[str, list[dict[str, Any]]]) -> None:
    url, calls = endpoint
    embedder = OpenAIEmbedder("hash-64", base_url=url, api_key="sk-test", batch_size=2)
    try:
        vecs = await embedder.embed(["alpha beta", "gamma", "alpha"])
    finally:
        await embedder.close()
    assert vecs.shape == (3, HASH_DIM) and embedder.dim == HASH_DIM
    assert np.allclose(vecs[0], hashed_vector("alpha beta"))
    assert calls[0]["auth"] == "Bearer sk-test" and calls[0]["body"]["model"] == "hash-64"


async def test_a_dataset_on_an_endpoint_learns_its_dimension(
    endpoint: tuple[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    url, calls = endpoint
    base = KnowledgeBase(tmp_path / "kb.db", settings=Settings(openai_base_url=url, openai_api_key="k"))
    try:
        ds = await base.create_dataset("remote", embedding="openai:hash-64", chunk_tokens=30)
        assert ds.embedding_dim is None
        events: list[tuple[str, int]] = []
        text = "Rockets need fuel.\n\nBoats need sails.\n\nTrains need rails."
        doc = await base.add_text(ds, "t.txt", text, progress=lambda e, n: events.append((e, n)))
        assert doc.status == "completed", doc.error
        assert (
            events[0] == ("chunks", doc.segment_count)
            and sum(n for e, n in events if e == "embedded") == doc.segment_count
        )
        ds = await base.get_dataset("remote")
        assert ds.embedding_dim == HASH_DIM
        hits = await base.search(ds, "sails boats", method="vector", top_k=1)
        assert "Boats need sails." in hits[0].segment.content
    finally:
        await base.close()


async def test_an_unreachable_endpoint_is_a_document_error(tmp_path: Path) -> None:
    base = KnowledgeBase(tmp_path / "kb.db", settings=Settings(openai_base_url="http://127.0.0.1:9/v1"))
    try:
        ds = await base.create_dataset("down", embedding="openai:x")
        doc = await base.add_text(ds, "t.txt", "some text")
        assert doc.status == "error" and "embedding request" in (doc.error or "")
    finally:
        await base.close()
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        await OpenAIEmbedder("text-embedding-3-small").embed(["x"])
