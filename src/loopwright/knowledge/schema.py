"""The knowledge tables (all prefixed ``kb_``) and a transaction helper for a sync connection.

The tables are created on first use with ``IF NOT EXISTS``: they live beside the app's tables (which
Alembic migrates) without being part of its migrations, so either side can change on its own.
Vector tables are made per dataset by the vector store (their dimension is the dataset's).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SCHEMA_VERSION = 1

DDL = """
CREATE TABLE IF NOT EXISTS kb_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kb_datasets (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    settings TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS kb_documents (
    id TEXT PRIMARY KEY,
    dataset_id TEXT NOT NULL REFERENCES kb_datasets(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    source TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    word_count INTEGER NOT NULL DEFAULT 0,
    tokens INTEGER NOT NULL DEFAULT 0,
    segment_count INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    batch TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    completed_at INTEGER
);
CREATE INDEX IF NOT EXISTS kb_documents_by_name ON kb_documents(dataset_id, name);
CREATE TABLE IF NOT EXISTS kb_segments (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    dataset_id TEXT NOT NULL,
    document_id TEXT NOT NULL REFERENCES kb_documents(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    content TEXT NOT NULL,
    answer TEXT,
    word_count INTEGER NOT NULL DEFAULT 0,
    tokens INTEGER NOT NULL DEFAULT 0,
    hit_count INTEGER NOT NULL DEFAULT 0,
    hash TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS kb_segments_by_document ON kb_segments(document_id);
CREATE INDEX IF NOT EXISTS kb_segments_by_dataset ON kb_segments(dataset_id);
CREATE VIRTUAL TABLE IF NOT EXISTS kb_segments_fts USING fts5(
    content, answer,
    content='kb_segments', content_rowid='seq',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS kb_segments_ai AFTER INSERT ON kb_segments BEGIN
    INSERT INTO kb_segments_fts(rowid, content, answer) VALUES (new.seq, new.content, new.answer);
END;
CREATE TRIGGER IF NOT EXISTS kb_segments_ad AFTER DELETE ON kb_segments BEGIN
    INSERT INTO kb_segments_fts(kb_segments_fts, rowid, content, answer)
    VALUES ('delete', old.seq, old.content, old.answer);
END;
CREATE TRIGGER IF NOT EXISTS kb_segments_au AFTER UPDATE OF content, answer ON kb_segments BEGIN
    INSERT INTO kb_segments_fts(kb_segments_fts, rowid, content, answer)
    VALUES ('delete', old.seq, old.content, old.answer);
    INSERT INTO kb_segments_fts(rowid, content, answer) VALUES (new.seq, new.content, new.answer);
END;
CREATE TABLE IF NOT EXISTS kb_embeddings (
    seq INTEGER PRIMARY KEY,
    dataset_id TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS kb_embeddings_by_dataset ON kb_embeddings(dataset_id);
CREATE TABLE IF NOT EXISTS kb_tags (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS kb_tag_bindings (
    tag_id TEXT NOT NULL REFERENCES kb_tags(id) ON DELETE CASCADE,
    dataset_id TEXT NOT NULL REFERENCES kb_datasets(id) ON DELETE CASCADE,
    PRIMARY KEY (tag_id, dataset_id)
);
CREATE INDEX IF NOT EXISTS kb_tag_bindings_by_dataset ON kb_tag_bindings(dataset_id);
CREATE TABLE IF NOT EXISTS kb_api_keys (
    token TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER
);
"""


# Columns added after a table was first made: (table, column, its definition). A file made before
# them gets them on open; ``CREATE TABLE IF NOT EXISTS`` would not add them.
ADDED_COLUMNS = (
    ("kb_documents", "enabled", "INTEGER NOT NULL DEFAULT 1"),  # Dify's document enable/disable
    ("kb_documents", "archived", "INTEGER NOT NULL DEFAULT 0"),  # Dify's archive/un_archive
)


def ensure_schema(conn: Any) -> None:
    """Create the knowledge tables if they are missing, and the columns added since (idempotent)."""
    with transaction(conn):
        # executescript would commit on its own: the statements run one by one inside the transaction.
        for statement in _statements(DDL):
            conn.execute(statement)
        for table, column, definition in ADDED_COLUMNS:
            present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})").fetchall()}
            if column not in present:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
        conn.execute(
            "INSERT OR IGNORE INTO kb_meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )


def _statements(script: str) -> Iterator[str]:
    """The statements of ``script``; trigger bodies (``BEGIN … END;``) stay whole."""
    buffer: list[str] = []
    in_trigger = False
    for line in script.strip().splitlines():
        buffer.append(line)
        stripped = line.strip().upper()
        if stripped.startswith("CREATE TRIGGER"):
            in_trigger = True
        if (in_trigger and stripped == "END;") or (not in_trigger and stripped.endswith(";")):
            yield "\n".join(buffer)
            buffer, in_trigger = [], False


@contextmanager
def transaction(conn: Any) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on error) on an autocommit connection. Immediate,
    so a writer waits for the lock up front (busy timeout) instead of failing on upgrade later."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
