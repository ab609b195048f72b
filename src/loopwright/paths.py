"""Where loopwright keeps its data: one directory for every command and the server.

The data directory is ``LOOPWRIGHT_DATA_DIR`` when set (the CLI's ``--data-dir`` sets it), else the
platform's per-user data directory (``platformdirs``: ``~/.local/share/loopwright`` on Linux,
``~/Library/Application Support/loopwright`` on macOS, ``%LOCALAPPDATA%\\loopwright`` on Windows).
Everything is resolved when asked, not at import, so an option given on the command line applies.

Inside it: the SQLite database (``loopwright.db``, unless ``LOOPWRIGHT_DB`` or ``DATABASE_URL`` say
otherwise) and ``files/`` (tool files, uploads, the knowledge store of a non-SQLite database, the
key that signs file URLs).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import platformdirs

__all__ = [
    "DATA_DIR_ENV",
    "DB_FILE_NAME",
    "LEGACY_DB_PATH",
    "data_dir",
    "default_db_path",
    "files_dir",
    "legacy_db_notice",
    "sqlite_path_of_url",
]

DATA_DIR_ENV = "LOOPWRIGHT_DATA_DIR"
DB_FILE_NAME = "loopwright.db"
# Where the database was before the data directory: the working directory.
LEGACY_DB_PATH = Path(DB_FILE_NAME)


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The data directory (not created here: whoever writes into it does)."""
    env = os.environ if env is None else env
    configured = env.get(DATA_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_data_dir("loopwright", appauthor=False))


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """The SQLite file used when neither ``DATABASE_URL`` nor ``LOOPWRIGHT_DB`` is set."""
    return data_dir(env) / DB_FILE_NAME


def files_dir(env: Mapping[str, str] | None = None) -> Path:
    """Tool files, uploads and the file-URL key."""
    return data_dir(env) / "files"


def legacy_db_notice(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> str | None:
    """A one-line hint when ``./loopwright.db`` exists but the default database is elsewhere: a user
    of an older loopwright would otherwise get a new, empty database without a word."""
    env = os.environ if env is None else env
    if env.get("DATABASE_URL") or env.get("LOOPWRIGHT_DB"):
        return None
    legacy = (cwd or Path.cwd()) / LEGACY_DB_PATH
    current = default_db_path(env)
    if not legacy.is_file() or legacy.resolve() == current.resolve():
        return None
    return (
        f"note: {legacy} is not used any more; loopwright's database is {current}. "
        f"Move it there (mv {legacy} {current}) or keep using it with LOOPWRIGHT_DB={legacy}"
    )


def sqlite_path_of_url(url: str) -> Path | None:
    """The file of a ``sqlite[+driver]:///path`` URL, or None for another database or in-memory."""
    parts = urlsplit(url)
    if not parts.scheme.startswith("sqlite"):
        return None
    raw = url.split("://", 1)[1] if "://" in url else ""
    path = raw[1:] if raw.startswith("/") else raw  # sqlite:///rel.db → rel.db, sqlite:////abs → /abs
    path = path.split("?", 1)[0]
    if not path or path == ":memory:" or path.startswith("file::memory:"):
        return None
    return Path(path)
