"""A plugin's key-value store (the SDK's ``session.storage``): one file per key in the plugin's
``storage`` folder, named by the key's hash so any key is a safe file name."""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

from loopwright._threads import run_sync

MAX_VALUE_BYTES = 1024 * 1024
MAX_KEYS = 10_000


class PluginStorageError(ValueError):
    pass


class PluginStorage:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        if not key or len(key) > 1024:
            raise PluginStorageError("a storage key must have 1 to 1024 characters")
        return self.folder / hashlib.sha256(key.encode()).hexdigest()

    async def set(self, key: str, value: bytes) -> None:
        if len(value) > MAX_VALUE_BYTES:
            raise PluginStorageError(f"a stored value may have at most {MAX_VALUE_BYTES} bytes")
        await run_sync(self._write, self._path(key), value)

    async def get(self, key: str) -> bytes | None:
        return await run_sync(_read, self._path(key))

    async def delete(self, key: str) -> bool:
        return await run_sync(_unlink, self._path(key))

    async def exists(self, key: str) -> bool:
        return await run_sync(self._path(key).is_file)

    def _write(self, path: Path, value: bytes) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if not path.exists() and sum(1 for _ in self.folder.iterdir()) >= MAX_KEYS:
            raise PluginStorageError(f"the plugin's storage is full ({MAX_KEYS} keys)")
        temp = path.with_name(f".{uuid.uuid4().hex}.tmp")
        temp.write_bytes(value)
        os.replace(temp, path)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
