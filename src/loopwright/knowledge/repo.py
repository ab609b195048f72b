"""Sync SQL for datasets, documents, segments and dataset API keys, on one connection.

These functions run in the knowledge store's worker thread (see ``store.py``); none of them touches
the vector indexes, which the caller updates in the same thread.
"""

from __future__ import annotations

import json
import secrets
import string
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from loopwright.knowledge.entities import (
    Dataset,
    DocForm,
    Document,
    DocumentStatus,
    MetadataField,
    MetadataType,
    RetrievalModel,
    Segment,
    Tag,
    VectorBackend,
)
from loopwright.knowledge.schema import transaction

API_KEY_PREFIX = "dataset-"
_KEY_ALPHABET = string.ascii_letters + string.digits

_DATASET_COLUMNS = "id, name, description, settings, created_at, updated_at"
_DOCUMENT_COLUMNS = (
    "id, dataset_id, name, position, source, status, error, word_count, tokens, segment_count, metadata, "
    "batch, created_at, updated_at, completed_at, enabled, archived"
)
SEGMENT_COLUMNS = (
    "s.seq, s.id, s.dataset_id, s.document_id, s.position, s.content, s.answer, s.word_count, s.tokens, "
    "s.hit_count, s.hash, s.created_at"
)


def now() -> int:
    return int(time.time())


# --- datasets ----------------------------------------------------------------------------------------


def dataset_from_row(row: Sequence[Any], counts: tuple[int, int] = (0, 0)) -> Dataset:
    settings = json.loads(row[3])
    return Dataset(
        id=row[0],
        name=row[1],
        description=row[2],
        embedding=settings.get("embedding", "none"),
        embedding_dim=settings.get("embedding_dim"),
        vector_store=_backend(settings.get("vector_store")),
        chunk_tokens=int(settings.get("chunk_tokens", 500)),
        overlap_tokens=int(settings.get("overlap_tokens", 50)),
        separator=str(settings.get("separator", "\n\n")),
        doc_form=_doc_form(settings.get("doc_form")),
        remove_extra_spaces=bool(settings.get("remove_extra_spaces", True)),
        remove_urls_emails=bool(settings.get("remove_urls_emails", False)),
        retrieval=RetrievalModel.from_dict(settings.get("retrieval")),
        metadata_fields=tuple(
            MetadataField(str(f["id"]), str(f["name"]), _metadata_type(f.get("type")))
            for f in settings.get("metadata_fields") or []
        ),
        built_in_field_enabled=bool(settings.get("built_in_field_enabled", False)),
        created_at=row[4],
        updated_at=row[5],
        document_count=counts[0],
        word_count=counts[1],
    )


def _backend(value: Any) -> VectorBackend:
    return "lancedb" if value == "lancedb" else "sqlite-vec"


def _metadata_type(value: Any) -> MetadataType:
    return "number" if value == "number" else "time" if value == "time" else "string"


def _doc_form(value: Any) -> DocForm:
    return "qa_model" if value == "qa_model" else "text_model"


def insert_dataset(conn: Any, dataset: Dataset) -> Dataset:
    stamp = now()
    with transaction(conn):
        conn.execute(
            f"INSERT INTO kb_datasets ({_DATASET_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            (dataset.id, dataset.name, dataset.description, json.dumps(dataset.settings_dict()), stamp)
            + (stamp,),
        )
    found = get_dataset(conn, dataset.id)
    assert found is not None
    return found


def update_dataset(conn: Any, dataset: Dataset) -> None:
    with transaction(conn):
        conn.execute(
            "UPDATE kb_datasets SET name = ?, description = ?, settings = ?, updated_at = ? WHERE id = ?",
            (dataset.name, dataset.description, json.dumps(dataset.settings_dict()), now(), dataset.id),
        )


def _counts(conn: Any, dataset_ids: Iterable[str]) -> dict[str, tuple[int, int]]:
    ids = list(dataset_ids)
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT dataset_id, count(*), coalesce(sum(word_count), 0) FROM kb_documents "
        f"WHERE dataset_id IN ({marks}) AND status = 'completed' GROUP BY dataset_id",
        ids,
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def get_dataset(conn: Any, id_or_name: str) -> Dataset | None:
    """The dataset with this id, else with this name."""
    row = conn.execute(f"SELECT {_DATASET_COLUMNS} FROM kb_datasets WHERE id = ?", (id_or_name,)).fetchone()
    if row is None:
        row = conn.execute(
            f"SELECT {_DATASET_COLUMNS} FROM kb_datasets WHERE name = ?", (id_or_name,)
        ).fetchone()
    if row is None:
        return None
    return dataset_from_row(row, _counts(conn, [row[0]]).get(row[0], (0, 0)))


def list_datasets(conn: Any, keyword: str | None = None) -> list[Dataset]:
    sql = f"SELECT {_DATASET_COLUMNS} FROM kb_datasets"
    args: tuple[Any, ...] = ()
    if keyword:
        sql += " WHERE name LIKE ? ESCAPE '\\'"
        args = (f"%{_escape_like(keyword)}%",)
    rows = conn.execute(sql + " ORDER BY created_at DESC, name", args).fetchall()
    counts = _counts(conn, [r[0] for r in rows])
    return [dataset_from_row(r, counts.get(r[0], (0, 0))) for r in rows]


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def delete_dataset_rows(conn: Any, dataset_id: str) -> None:
    """Delete a dataset, its documents and segments (the FTS rows go with them by trigger)."""
    with transaction(conn):
        conn.execute("DELETE FROM kb_segments WHERE dataset_id = ?", (dataset_id,))
        conn.execute("DELETE FROM kb_embeddings WHERE dataset_id = ?", (dataset_id,))
        conn.execute("DELETE FROM kb_documents WHERE dataset_id = ?", (dataset_id,))
        conn.execute("DELETE FROM kb_tag_bindings WHERE dataset_id = ?", (dataset_id,))
        conn.execute("DELETE FROM kb_datasets WHERE id = ?", (dataset_id,))


# --- documents ---------------------------------------------------------------------------------------


def document_from_row(row: Sequence[Any]) -> Document:
    status: DocumentStatus = row[5]
    return Document(
        id=row[0],
        dataset_id=row[1],
        name=row[2],
        position=row[3],
        source=row[4],
        status=status,
        error=row[6],
        word_count=row[7],
        tokens=row[8],
        segment_count=row[9],
        metadata=json.loads(row[10] or "{}"),
        batch=row[11],
        created_at=row[12],
        updated_at=row[13],
        completed_at=row[14],
        enabled=bool(row[15]),
        archived=bool(row[16]),
    )


def insert_document(
    conn: Any, dataset_id: str, name: str, source: str, metadata: dict[str, Any], batch: str
) -> Document:
    stamp = now()
    doc_id = str(uuid.uuid4())
    with transaction(conn):
        (position,) = conn.execute(
            "SELECT coalesce(max(position), 0) + 1 FROM kb_documents WHERE dataset_id = ?", (dataset_id,)
        ).fetchone()
        conn.execute(
            f"INSERT INTO kb_documents ({_DOCUMENT_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, 'queued', NULL, 0, 0, 0, ?, ?, ?, ?, NULL, 1, 0)",
            (doc_id, dataset_id, name, position, source, json.dumps(metadata), batch, stamp, stamp),
        )
    found = get_document(conn, doc_id)
    assert found is not None
    return found


def get_document(conn: Any, document_id: str) -> Document | None:
    sql = f"SELECT {_DOCUMENT_COLUMNS} FROM kb_documents WHERE id = ?"
    row = conn.execute(sql, (document_id,)).fetchone()
    return None if row is None else document_from_row(row)


def list_documents(
    conn: Any, dataset_id: str, keyword: str | None = None, limit: int = -1, offset: int = 0
) -> tuple[list[Document], int]:
    """Documents newest first (as Dify lists them) and the total count."""
    where = "dataset_id = ?"
    args: list[Any] = [dataset_id]
    if keyword:
        where += " AND name LIKE ? ESCAPE '\\'"
        args.append(f"%{_escape_like(keyword)}%")
    (total,) = conn.execute(f"SELECT count(*) FROM kb_documents WHERE {where}", args).fetchone()
    rows = conn.execute(
        f"SELECT {_DOCUMENT_COLUMNS} FROM kb_documents WHERE {where} "
        "ORDER BY created_at DESC, position DESC LIMIT ? OFFSET ?",
        [*args, limit, offset],
    ).fetchall()
    return [document_from_row(r) for r in rows], total


def _select_in(conn: Any, query: str, values: Sequence[Any]) -> list[Any]:
    """The rows of ``query`` — whose ``{marks}`` is the placeholder list of an ``IN`` — for all
    ``values``, 500 at a time (SQLite limits the variables of one statement)."""
    rows: list[Any] = []
    for start in range(0, len(values), 500):
        part = list(values[start : start + 500])
        rows.extend(conn.execute(query.format(marks=",".join("?" * len(part))), part).fetchall())
    return rows


def documents_by_ids(conn: Any, ids: Iterable[str]) -> dict[str, Document]:
    query = f"SELECT {_DOCUMENT_COLUMNS} FROM kb_documents WHERE id IN ({{marks}})"
    return {row[0]: document_from_row(row) for row in _select_in(conn, query, list(set(ids)))}


def completed_documents(conn: Any, dataset_id: str) -> list[Document]:
    rows = conn.execute(
        f"SELECT {_DOCUMENT_COLUMNS} FROM kb_documents WHERE dataset_id = ? AND status = 'completed'",
        (dataset_id,),
    ).fetchall()
    return [document_from_row(r) for r in rows]


def set_status(conn: Any, document_id: str, status: DocumentStatus, error: str | None = None) -> None:
    with transaction(conn):
        conn.execute(
            "UPDATE kb_documents SET status = ?, error = ?, updated_at = ? WHERE id = ?",
            (status, error, now(), document_id),
        )


def segment_seqs(conn: Any, where: str, args: Sequence[Any]) -> list[int]:
    return [r[0] for r in conn.execute(f"SELECT seq FROM kb_segments WHERE {where}", args).fetchall()]


def superseded_documents(conn: Any, document: Document) -> list[str]:
    """Other documents of the same dataset with the same name: the ones a completed re-ingest replaces."""
    rows = conn.execute(
        "SELECT id FROM kb_documents WHERE dataset_id = ? AND name = ? AND id != ?",
        (document.dataset_id, document.name, document.id),
    ).fetchall()
    return [r[0] for r in rows]


def delete_documents_rows(conn: Any, document_ids: Sequence[str]) -> None:
    """Delete documents and their segments and stored vectors; call inside a transaction."""
    for doc_id in document_ids:
        conn.execute(
            "DELETE FROM kb_embeddings WHERE seq IN (SELECT seq FROM kb_segments WHERE document_id = ?)",
            (doc_id,),
        )
        conn.execute("DELETE FROM kb_segments WHERE document_id = ?", (doc_id,))
        conn.execute("DELETE FROM kb_documents WHERE id = ?", (doc_id,))


# --- segments ----------------------------------------------------------------------------------------


def segment_from_row(row: Sequence[Any]) -> Segment:
    return Segment(
        seq=row[0],
        id=row[1],
        dataset_id=row[2],
        document_id=row[3],
        position=row[4],
        content=row[5],
        answer=row[6],
        word_count=row[7],
        tokens=row[8],
        hit_count=row[9],
        hash=row[10],
        created_at=row[11],
    )


def insert_segments(conn: Any, segments: Sequence[Segment]) -> list[int]:
    """Insert segments (``seq`` is assigned); returns their seqs in order. Call inside a transaction."""
    seqs: list[int] = []
    for s in segments:
        cur = conn.execute(
            "INSERT INTO kb_segments (id, dataset_id, document_id, position, content, answer, word_count, "
            "tokens, hit_count, hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
            (
                s.id,
                s.dataset_id,
                s.document_id,
                s.position,
                s.content,
                s.answer,
                s.word_count,
                s.tokens,
                s.hash,
                s.created_at,
            ),
        )
        seqs.append(int(cur.lastrowid))
    return seqs


def segments_by_seq(conn: Any, seqs: Sequence[int]) -> dict[int, Segment]:
    query = f"SELECT {SEGMENT_COLUMNS} FROM kb_segments s WHERE s.seq IN ({{marks}})"
    return {row[0]: segment_from_row(row) for row in _select_in(conn, query, seqs)}


def list_segments(conn: Any, document_id: str) -> list[Segment]:
    rows = conn.execute(
        f"SELECT {SEGMENT_COLUMNS} FROM kb_segments s WHERE s.document_id = ? ORDER BY s.position",
        (document_id,),
    ).fetchall()
    return [segment_from_row(r) for r in rows]


def count_hits(conn: Any, seqs: Sequence[int]) -> None:
    """Add one to the hit count of each segment (Dify counts a hit per retrieval)."""
    if not seqs:
        return
    marks = ",".join("?" * len(seqs))
    with transaction(conn):
        conn.execute(f"UPDATE kb_segments SET hit_count = hit_count + 1 WHERE seq IN ({marks})", list(seqs))


def count_segments(conn: Any, dataset_id: str) -> int:
    (n,) = conn.execute("SELECT count(*) FROM kb_segments WHERE dataset_id = ?", (dataset_id,)).fetchone()
    return int(n)


def get_segment(conn: Any, segment_id: str) -> Segment | None:
    row = conn.execute(
        f"SELECT {SEGMENT_COLUMNS} FROM kb_segments s WHERE s.id = ?", (segment_id,)
    ).fetchone()
    return None if row is None else segment_from_row(row)


def next_segment_position(conn: Any, document_id: str) -> int:
    (position,) = conn.execute(
        "SELECT coalesce(max(position), 0) + 1 FROM kb_segments WHERE document_id = ?", (document_id,)
    ).fetchone()
    return int(position)


def update_segment_row(conn: Any, segment: Segment) -> None:
    """Write a segment's text and its counts (the keyword index follows by trigger)."""
    conn.execute(
        "UPDATE kb_segments SET content = ?, answer = ?, word_count = ?, tokens = ?, hash = ? WHERE seq = ?",
        (segment.content, segment.answer, segment.word_count, segment.tokens, segment.hash, segment.seq),
    )


def delete_segment_rows(conn: Any, seqs: Sequence[int]) -> None:
    if seqs:
        marks = ",".join("?" * len(seqs))
        conn.execute(f"DELETE FROM kb_embeddings WHERE seq IN ({marks})", list(seqs))
        conn.execute(f"DELETE FROM kb_segments WHERE seq IN ({marks})", list(seqs))


def refresh_document_counts(conn: Any, document_id: str) -> None:
    """A document's segment, word and token counts from its segments, after they were edited."""
    conn.execute(
        "UPDATE kb_documents SET "
        "segment_count = (SELECT count(*) FROM kb_segments WHERE document_id = ?), "
        "word_count = (SELECT coalesce(sum(word_count), 0) FROM kb_segments WHERE document_id = ?), "
        "tokens = (SELECT coalesce(sum(tokens), 0) FROM kb_segments WHERE document_id = ?), "
        "updated_at = ? WHERE id = ?",
        (document_id, document_id, document_id, now(), document_id),
    )


def requeue_document(conn: Any, document_id: str, name: str, source: str, batch: str) -> None:
    """Put a document back in the queue under a new batch (to be indexed again from a new source)."""
    with transaction(conn):
        conn.execute(
            "UPDATE kb_documents SET name = ?, source = ?, status = 'queued', error = NULL, batch = ?, "
            "updated_at = ? WHERE id = ?",
            (name, source, batch, now(), document_id),
        )


def set_document_metadata(conn: Any, metadata: dict[str, dict[str, Any]]) -> None:
    """Replace the metadata of documents (id → metadata); call inside a transaction."""
    for document_id, values in metadata.items():
        conn.execute(
            "UPDATE kb_documents SET metadata = ?, updated_at = ? WHERE id = ?",
            (json.dumps(values), now(), document_id),
        )


def set_document_flags(conn: Any, document_ids: Sequence[str], **flags: bool) -> None:
    """Set ``enabled`` and/or ``archived`` of documents."""
    assignments = ", ".join(f"{name} = ?" for name in flags if name in ("enabled", "archived"))
    if not assignments or not document_ids:
        return
    with transaction(conn):
        for document_id in document_ids:
            conn.execute(
                f"UPDATE kb_documents SET {assignments}, updated_at = ? WHERE id = ?",
                [*(int(v) for v in flags.values()), now(), document_id],
            )


def hidden_documents(conn: Any, dataset_id: str) -> set[str]:
    """The dataset's documents that retrieval skips: disabled or archived."""
    rows = conn.execute(
        "SELECT id FROM kb_documents WHERE dataset_id = ? AND (enabled = 0 OR archived = 1)", (dataset_id,)
    ).fetchall()
    return {r[0] for r in rows}


def rename_document(conn: Any, document_id: str, name: str) -> None:
    with transaction(conn):
        conn.execute(
            "UPDATE kb_documents SET name = ?, updated_at = ? WHERE id = ?", (name, now(), document_id)
        )


# --- tags --------------------------------------------------------------------------------------------

_TAG_SELECT = (
    "SELECT t.id, t.name, (SELECT count(*) FROM kb_tag_bindings b WHERE b.tag_id = t.id) FROM kb_tags t"
)


def list_tags(conn: Any) -> list[Tag]:
    rows = conn.execute(f"{_TAG_SELECT} ORDER BY t.created_at, t.name").fetchall()
    return [Tag(r[0], r[1], r[2]) for r in rows]


def get_tag(conn: Any, tag_id: str) -> Tag | None:
    row = conn.execute(f"{_TAG_SELECT} WHERE t.id = ?", (tag_id,)).fetchone()
    return None if row is None else Tag(row[0], row[1], row[2])


def tag_named(conn: Any, name: str) -> Tag | None:
    row = conn.execute(f"{_TAG_SELECT} WHERE t.name = ?", (name,)).fetchone()
    return None if row is None else Tag(row[0], row[1], row[2])


def insert_tag(conn: Any, name: str) -> Tag:
    tag = Tag(str(uuid.uuid4()), name)
    with transaction(conn):
        conn.execute("INSERT INTO kb_tags (id, name, created_at) VALUES (?, ?, ?)", (tag.id, name, now()))
    return tag


def rename_tag(conn: Any, tag_id: str, name: str) -> None:
    with transaction(conn):
        conn.execute("UPDATE kb_tags SET name = ? WHERE id = ?", (name, tag_id))


def delete_tag(conn: Any, tag_id: str) -> None:
    with transaction(conn):
        conn.execute("DELETE FROM kb_tag_bindings WHERE tag_id = ?", (tag_id,))
        conn.execute("DELETE FROM kb_tags WHERE id = ?", (tag_id,))


def bind_tags(conn: Any, tag_ids: Sequence[str], dataset_id: str, *, bound: bool) -> None:
    """Bind (or, ``bound=False``, unbind) tags and a dataset; binding twice is binding once."""
    with transaction(conn):
        for tag_id in tag_ids:
            if bound:
                conn.execute(
                    "INSERT OR IGNORE INTO kb_tag_bindings (tag_id, dataset_id) VALUES (?, ?)",
                    (tag_id, dataset_id),
                )
            else:
                conn.execute(
                    "DELETE FROM kb_tag_bindings WHERE tag_id = ? AND dataset_id = ?", (tag_id, dataset_id)
                )


def tags_of_datasets(conn: Any, dataset_ids: Sequence[str]) -> dict[str, list[Tag]]:
    """Each dataset's tags, by name."""
    query = (
        "SELECT b.dataset_id, t.id, t.name FROM kb_tag_bindings b JOIN kb_tags t ON t.id = b.tag_id "
        "WHERE b.dataset_id IN ({marks}) ORDER BY t.name"
    )
    out: dict[str, list[Tag]] = {}
    for row in _select_in(conn, query, list(dataset_ids)):
        out.setdefault(row[0], []).append(Tag(row[1], row[2]))
    return out


def datasets_with_tags(conn: Any, tag_ids: Sequence[str]) -> set[str]:
    query = "SELECT DISTINCT dataset_id FROM kb_tag_bindings WHERE tag_id IN ({marks})"
    return {row[0] for row in _select_in(conn, query, list(tag_ids))}


# --- dataset API keys --------------------------------------------------------------------------------


def create_api_key(conn: Any) -> str:
    token = API_KEY_PREFIX + "".join(secrets.choice(_KEY_ALPHABET) for _ in range(24))
    with transaction(conn):
        conn.execute("INSERT INTO kb_api_keys(token, created_at) VALUES (?, ?)", (token, now()))
    return token


def check_api_key(conn: Any, token: str) -> bool:
    row = conn.execute("SELECT 1 FROM kb_api_keys WHERE token = ?", (token,)).fetchone()
    if row is None:
        return False
    with transaction(conn):
        conn.execute("UPDATE kb_api_keys SET last_used_at = ? WHERE token = ?", (now(), token))
    return True
