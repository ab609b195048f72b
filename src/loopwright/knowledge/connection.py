"""Opening the knowledge SQLite file: a driver that can load sqlite-vec, WAL, a busy timeout.

The interpreter's own ``sqlite3`` often cannot load extensions (pyenv, some distributions), so
``pysqlite3`` (the pysqlite3-binary wheel, with FTS5) is preferred; the standard module is used only
when it can load extensions. The file is shared with the app database when that is SQLite, so the
pragmas match the app's (WAL, ``busy_timeout``) and both can write it.
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

from loopwright.errors import StorageError
from loopwright.paths import files_dir, sqlite_path_of_url

BUSY_TIMEOUT_MS = 5000
KNOWLEDGE_FILE_NAME = "knowledge.sqlite3"


class KnowledgeSetupError(StorageError, RuntimeError):
    """The knowledge index cannot be opened (no SQLite driver that loads extensions, …)."""


@functools.cache  # what is installed does not change while the process runs
def sqlite_driver() -> ModuleType:
    """The DB-API module to use: ``pysqlite3.dbapi2`` when installed, else the standard ``sqlite3``
    if it can load extensions."""
    try:
        module = importlib.import_module("pysqlite3.dbapi2")
    except ImportError:
        import sqlite3 as module

        if not hasattr(module.Connection, "enable_load_extension"):
            raise KnowledgeSetupError(
                "this Python's sqlite3 cannot load extensions (needed for sqlite-vec): "
                "pip install pysqlite3-binary"
            ) from None
    return module


def connect(path: str | Path, *, vectors: bool = True) -> Any:
    """A connection to ``path`` with sqlite-vec loaded (when ``vectors``) and the pragmas set.

    The connection may only be used by the thread that opened it."""
    driver = sqlite_driver()
    target = str(path)
    if target != ":memory:":
        Path(target).parent.mkdir(parents=True, exist_ok=True)
    conn = driver.connect(target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    if vectors:
        load_sqlite_vec(conn)
    return conn


def load_sqlite_vec(conn: Any) -> None:
    try:
        import sqlite_vec  # type: ignore[import-untyped]
    except ImportError as exc:
        raise KnowledgeSetupError(f"sqlite-vec is not installed ({exc}): pip install sqlite-vec") from None
    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)


def knowledge_path(database_url: str, data_dir: str | Path | None = None) -> Path:
    """Where the knowledge tables live: a file beside the app database when that is SQLite
    (``app.db`` → ``app.knowledge.sqlite3``; ``database_url`` as the app layer resolved it), else
    ``<files dir>/knowledge.sqlite3`` (default: ``files/`` in the data directory, :mod:`loopwright.paths`).

    Not the app database's own file: the knowledge store may use another SQLite library than the
    app's (``pysqlite3``, to load sqlite-vec), and two SQLite libraries in one process do not see each
    other's file locks — sharing a file loses writes (sqlite.org/howtocorrupt.html, §2.2.1)."""
    path = sqlite_path_of_url(database_url)
    if path is not None:
        return path.with_name(f"{path.stem}.{KNOWLEDGE_FILE_NAME}")
    return Path(data_dir if data_dir is not None else files_dir()) / KNOWLEDGE_FILE_NAME
