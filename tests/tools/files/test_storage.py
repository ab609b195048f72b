"""LocalFileStorage: round trips, atomic replacement, keys that cannot leave the root, no loop blocking."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from loopwright.tools.files import storage as storage_module
from loopwright.tools.files.storage import CHUNK_SIZE, FileStorage, LocalFileStorage


async def collect(storage: LocalFileStorage, key: str) -> bytes:
    return b"".join([chunk async for chunk in await storage.open(key)])


def leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


async def test_round_trip(tmp_path: Path) -> None:
    store = LocalFileStorage(tmp_path / "files")
    assert isinstance(store, FileStorage)
    data = os.urandom(3 * CHUNK_SIZE + 17)
    await store.save("ab/abcdef", data)
    assert await store.read("ab/abcdef") == data
    chunks = [c async for c in await store.open("ab/abcdef")]
    assert len(chunks) == 4 and b"".join(chunks) == data
    assert (tmp_path / "files" / "ab" / "abcdef").read_bytes() == data
    assert await store.delete("ab/abcdef") is True
    assert await store.delete("ab/abcdef") is False
    assert leftovers(tmp_path / "files") == []


async def test_empty_file(tmp_path: Path) -> None:
    store = LocalFileStorage(tmp_path)
    await store.save("empty", b"")
    assert await store.read("empty") == b"" and await collect(store, "empty") == b""


async def test_missing_keys_fail_at_open(tmp_path: Path) -> None:
    store = LocalFileStorage(tmp_path)
    with pytest.raises(FileNotFoundError):
        await store.read("nope")
    with pytest.raises(FileNotFoundError):
        await store.open("nope")  # before any chunk is asked for


async def test_save_replaces_whole(tmp_path: Path) -> None:
    store = LocalFileStorage(tmp_path)
    await store.save("k", b"first version, rather long")
    await store.save("k", b"second")
    assert await store.read("k") == b"second"
    assert leftovers(tmp_path) == ["k"]


async def test_a_failed_write_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalFileStorage(tmp_path)
    await store.save("k", b"old")

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(storage_module.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space"):
        await store.save("k", b"new data that never lands")
    with pytest.raises(OSError):
        await store.save("fresh", b"x")
    assert await store.read("k") == b"old"
    assert leftovers(tmp_path) == ["k"]  # neither a temp file nor a partial "fresh"


async def test_writes_and_reads_run_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    real_replace = os.replace

    def recording_replace(src: str | Path, dst: str | Path) -> None:
        threads.append(threading.get_ident())
        real_replace(src, dst)

    monkeypatch.setattr(storage_module.os, "replace", recording_replace)
    store = LocalFileStorage(tmp_path)
    await store.save("k", b"data")
    assert threads and loop_thread not in threads


@pytest.mark.parametrize(
    "key",
    ["../escape", "a/../../escape", "/etc/passwd", "a//b", ".hidden", "a/./b", "a\\b", "", "a/b/c/d/e", "é"],
)
async def test_keys_cannot_leave_the_root(tmp_path: Path, key: str) -> None:
    store = LocalFileStorage(tmp_path / "root")
    with pytest.raises(ValueError, match="invalid storage key"):
        await store.save(key, b"x")
    with pytest.raises(ValueError):
        await store.read(key)
    assert not (tmp_path / "escape").exists()


async def test_concurrent_saves_of_one_key_leave_one_whole_version(tmp_path: Path) -> None:
    import asyncio

    store = LocalFileStorage(tmp_path)
    versions = [bytes([i]) * 200_000 for i in range(8)]
    await asyncio.gather(*(store.save("k", v) for v in versions))
    assert await store.read("k") in versions
    assert leftovers(tmp_path) == ["k"]
