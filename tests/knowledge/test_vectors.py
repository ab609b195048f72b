"""sqlite-vec and LanceDB vector stores, real, with random unit vectors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from loopwright.knowledge import vectors
from loopwright.knowledge.connection import connect
from loopwright.knowledge.schema import ensure_schema
from loopwright.knowledge.vectors import LanceVectorStore, SqliteVecStore, normalise

DATASET = "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"
DIM = 32


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Any]:
    c = connect(tmp_path / "v.db")
    ensure_schema(c)
    c.execute(
        "INSERT INTO kb_datasets VALUES (?, 'd', '', '{}', 0, 0)",
        (DATASET,),
    )
    for doc in ("doc-a", "doc-b"):
        c.execute(
            "INSERT INTO kb_documents(id, dataset_id, name, position, source, status, created_at, "
            "updated_at) VALUES (?, ?, ?, 1, 'text', 'completed', 0, 0)",
            (doc, DATASET, doc),
        )
    yield c
    c.close()


def _segments(conn: Any, n: int) -> list[int]:
    seqs = []
    for i in range(n):
        cur = conn.execute(
            "INSERT INTO kb_segments(id, dataset_id, document_id, position, content, created_at) "
            "VALUES (?, ?, ?, ?, 'x', 0)",
            (f"s{i}", DATASET, "doc-a" if i % 2 == 0 else "doc-b", i),
        )
        seqs.append(int(cur.lastrowid))
    return seqs


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    return normalise(np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32))


def _docs(n: int) -> list[str]:
    return ["doc-a" if i % 2 == 0 else "doc-b" for i in range(n)]


def test_sqlite_vec_exact_search_finds_the_vector_itself(conn: Any) -> None:
    seqs = _segments(conn, 50)
    data = _vectors(50)
    store = SqliteVecStore(conn, DATASET, DIM)
    store.add(seqs, data, _docs(50))
    hits = store.search(data[7], 3)
    assert hits[0][0] == seqs[7] and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert all(0 <= s <= 1 for _, s in hits) and len(hits) == 3


def test_sqlite_vec_coarse_search_agrees_with_exact(conn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seqs = _segments(conn, 400)
    data = _vectors(400, seed=1)
    store = SqliteVecStore(conn, DATASET, DIM)
    store.add(seqs, data, _docs(400))
    query = normalise(data[11] + 0.3 * _vectors(1, seed=9)[0])[0]
    exact = store.search(query, 5)
    monkeypatch.setattr(vectors, "EXACT_LIMIT", 10)
    coarse = store.search(query, 5)
    assert coarse[0] == exact[0] and coarse[0][0] == seqs[11]
    assert len({s for s, _ in coarse} & {s for s, _ in exact}) >= 4


def test_sqlite_vec_filter_delete_and_drop(conn: Any) -> None:
    seqs = _segments(conn, 20)
    data = _vectors(20, seed=2)
    store = SqliteVecStore(conn, DATASET, DIM)
    store.add(seqs, data, _docs(20))
    only_b = store.search(data[0], 5, document_ids={"doc-b"})
    assert only_b and all(seqs.index(s) % 2 == 1 for s, _ in only_b)
    assert store.search(data[0], 5, document_ids=set()) == []
    store.delete([seqs[0]])
    assert seqs[0] not in {s for s, _ in store.search(data[0], 20)}
    assert store.count() == 19
    store.drop()
    assert conn.execute("SELECT count(*) FROM kb_embeddings").fetchone()[0] == 0
    with pytest.raises(ValueError):
        store.add(seqs[:1], _vectors(1)[:, :8], ["doc-a"])  # type: ignore[arg-type]


def test_lancedb_add_search_filter_delete_drop(tmp_path: Path) -> None:
    store = LanceVectorStore(tmp_path / "lance", DATASET, DIM)
    assert store.search(_vectors(1)[0], 3) == []  # no table yet
    data = _vectors(30, seed=3)
    seqs = list(range(100, 130))
    store.add(seqs, data, _docs(30))
    hits = store.search(data[4], 3)
    assert hits[0][0] == 104 and hits[0][1] == pytest.approx(1.0, abs=1e-4)
    only_b = store.search(data[4], 4, document_ids={"doc-b"})
    assert only_b and all((s - 100) % 2 == 1 for s, _ in only_b)
    store.delete([104])
    assert 104 not in {s for s, _ in store.search(data[4], 30)}
    store.drop()
    assert store.search(data[4], 3) == []


def test_table_names_only_from_dataset_ids() -> None:
    with pytest.raises(ValueError):
        vectors.table_suffix("x; DROP TABLE kb_segments")
