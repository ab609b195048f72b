"""Where tool files' bytes live: a small key → bytes interface and its local-directory implementation.

The interface is deliberately the shape of an object store (put, get, streaming get, delete), so S3 or
similar can come later without touching the callers. Keys are relative, ``/``-separated names made by
:mod:`loopwright.tools.files.manager`; the local store refuses anything else, so no key can leave its root.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Protocol, runtime_checkable

from loopwright._threads import run_sync

CHUNK_SIZE = 64 * 1024

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}(/[A-Za-z0-9][A-Za-z0-9._-]{0,127}){0,3}")


@runtime_checkable
class FileStorage(Protocol):
    """Bytes by key. ``read``/``open`` raise ``FileNotFoundError`` for a key that is not stored."""

    async def save(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` (replacing it), all or nothing."""
        ...

    async def read(self, key: str) -> bytes: ...

    async def open(self, key: str) -> AsyncIterator[bytes]:
        """The stored bytes in chunks; opening fails at once (not on the first chunk) when missing."""
        ...

    async def delete(self, key: str) -> bool:
        """Remove ``key``; False when it was not there."""
        ...


class LocalFileStorage:
    """Files under ``root``. Every file operation runs in a worker thread, never on the event loop;
    writes go to a temporary file in the same directory and are renamed into place, so a reader sees
    either nothing or the whole file, even after a crash mid-write."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"LocalFileStorage({str(self.root)!r})"

    def path(self, key: str) -> Path:
        """The file for ``key``; ``ValueError`` for a key that is not a plain relative name."""
        if not _KEY.fullmatch(key) or any(part in (".", "..") for part in key.split("/")):
            raise ValueError(f"invalid storage key: {key!r}")
        return self.root.joinpath(*key.split("/"))

    async def save(self, key: str, data: bytes) -> None:
        await run_sync(_write_atomic, self.path(key), data)

    async def read(self, key: str) -> bytes:
        return await run_sync(self.path(key).read_bytes)

    async def open(self, key: str) -> AsyncIterator[bytes]:
        handle: IO[bytes] = await run_sync(self.path(key).open, "rb")
        return _chunks(handle)

    async def delete(self, key: str) -> bool:
        return await run_sync(_unlink, self.path(key))


def _write_atomic(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        with temp.open("xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


async def _chunks(handle: IO[bytes]) -> AsyncIterator[bytes]:
    try:
        while chunk := await run_sync(handle.read, CHUNK_SIZE):
            yield chunk
    finally:
        handle.close()
