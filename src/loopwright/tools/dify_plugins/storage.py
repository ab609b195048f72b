"""A plugin's key-value store (the SDK's ``session.storage``): one file per key in the plugin's
``storage`` folder, named by the key's hash so any key is a safe file name."""

from __future__ import annotations

import hashlib
from pathlib import Path

from loopwright._threads import run_sync
from loopwright.errors import ToolError
from loopwright.tools.files.storage import LocalFileStorage

MAX_VALUE_BYTES = 1024 * 1024
MAX_KEYS = 10_000


class PluginStorageError(ToolError, ValueError):
    pass


class PluginStorage:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._files = LocalFileStorage(folder)  # atomic writes, every operation off the event loop

    def _name(self, key: str) -> str:
        if not key or len(key) > 1024:
            raise PluginStorageError("a storage key must have 1 to 1024 characters")
        return hashlib.sha256(key.encode()).hexdigest()

    async def set(self, key: str, value: bytes) -> None:
        if len(value) > MAX_VALUE_BYTES:
            raise PluginStorageError(f"a stored value may have at most {MAX_VALUE_BYTES} bytes")
        name = self._name(key)
        await run_sync(self._check_room, name)
        await self._files.save(name, value)

    async def get(self, key: str) -> bytes | None:
        try:
            return await self._files.read(self._name(key))
        except FileNotFoundError:
            return None

    async def delete(self, key: str) -> bool:
        return await self._files.delete(self._name(key))

    async def exists(self, key: str) -> bool:
        return await run_sync(self._files.path(self._name(key)).is_file)

    def _check_room(self, name: str) -> None:
        full = (
            self.folder.is_dir()
            and not (self.folder / name).exists()
            and sum(1 for _ in self.folder.iterdir()) >= MAX_KEYS
        )
        if full:
            raise PluginStorageError(f"the plugin's storage is full ({MAX_KEYS} keys)")
