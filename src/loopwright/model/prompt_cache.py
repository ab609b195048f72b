"""A persistent prompt cache for the embedded model: the fixed part of a prompt (the system prompt: the
instruction, the tools and their worked examples) is evaluated once, and llama.cpp's state after it is
kept as a session file (llama.cpp's own ``llama_state_save_file`` format: the KV cache and the tokens),
so a later run — in this process or the next one — evaluates only what follows: the question, the
rounds, the observations.

Where the state comes from, cheapest first:
- **live**: the context already holds the prefix (the previous run of this process used the same
  system prompt): nothing to do — llama-cpp-python's own prefix match reuses it;
- **disk**: a session file for this model and prefix: read (tens of milliseconds; in a server it stays
  in the operating system's page cache);
- **evaluated**: neither: the prefix is evaluated, then saved for the next time.

A file is named by a hash of the model file (path, size, modification time), the context size, the
llama.cpp build and the prefix's tokens: a changed model or prompt is a new file. The folder is bounded:
past its size the least recently used files are removed. A file that cannot be read (truncated, from
another llama.cpp build) is removed and the prefix evaluated again; a folder that cannot be written
only costs the saving. Nothing here ever fails a run.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("loopwright.model")

__all__ = ["MIN_PREFIX_TOKENS", "PromptCache", "common_prefix"]

# A shorter prefix is evaluated faster than a file is read and written.
MIN_PREFIX_TOKENS = 128
SUFFIX = ".session"


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The number of leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass
class PromptCache:
    """Session files of evaluated prompt prefixes in ``directory``, at most ``max_bytes`` in all."""

    directory: Path
    max_bytes: int

    def prime(self, llama: Any, model_id: str, prefix: Sequence[int]) -> str:
        """Make the context hold ``prefix`` (called under the model's lock, in its thread); returns
        where it came from: ``"live"``, ``"disk"``, ``"evaluated"``, or ``"short"`` (too short to be
        worth a file: left to llama.cpp's own reuse)."""
        n = len(prefix)
        if n < MIN_PREFIX_TOKENS:
            return "short"
        if llama.n_tokens >= n and common_prefix(llama.input_ids[:n].tolist(), prefix) == n:
            return "live"
        path = self.directory / f"{self._key(llama, model_id, prefix)}{SUFFIX}"
        if path.is_file() and self._load(llama, path, prefix):
            with contextlib.suppress(OSError):
                path.touch()  # recently used
            return "disk"
        llama.reset()
        llama.eval(list(prefix))
        self._save(llama, path, prefix)
        return "evaluated"

    @staticmethod
    def _key(llama: Any, model_id: str, prefix: Sequence[int]) -> str:
        digest = hashlib.sha256()
        try:
            stat = os.stat(model_id)
            digest.update(f"{model_id}|{stat.st_size}|{stat.st_mtime_ns}".encode())
        except OSError:
            digest.update(model_id.encode())
        llama_cpp = importlib.import_module("llama_cpp")
        digest.update(f"|{llama.n_ctx()}|{getattr(llama_cpp, '__version__', '')}|".encode())
        digest.update(b"".join(int(t).to_bytes(4, "little", signed=True) for t in prefix))
        return digest.hexdigest()[:40]

    @staticmethod
    def _load(llama: Any, path: Path, prefix: Sequence[int]) -> bool:
        llama_cpp = importlib.import_module("llama_cpp")
        n = len(prefix)
        tokens = (llama_cpp.llama_token * n)()
        count = ctypes.c_size_t(0)
        ok = bool(
            llama_cpp.llama_state_load_file(
                llama._ctx.ctx, str(path).encode(), tokens, n, ctypes.byref(count)
            )
        )
        if not ok or count.value != n or list(tokens) != list(prefix):
            log.warning("prompt cache: %s cannot be used; evaluating the prompt again", path.name)
            llama.reset()
            with contextlib.suppress(OSError):
                path.unlink()
            return False
        llama.input_ids[:n] = prefix
        llama.n_tokens = n
        return True

    def _save(self, llama: Any, path: Path, prefix: Sequence[int]) -> None:
        llama_cpp = importlib.import_module("llama_cpp")
        n = len(prefix)
        tokens = (llama_cpp.llama_token * n)(*prefix)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if not llama_cpp.llama_state_save_file(llama._ctx.ctx, str(partial).encode(), tokens, n):
                raise OSError("llama.cpp could not write the session file")
            os.replace(partial, path)  # whole or not at all, for a reader in another process
        except OSError as e:
            log.warning("prompt cache: cannot save to %s: %s", self.directory, e)
            with contextlib.suppress(OSError):
                partial.unlink()
            return
        self._trim()

    def _trim(self) -> None:
        """Remove the least recently used files past the size bound."""
        try:
            files = [(p.stat(), p) for p in self.directory.glob(f"*{SUFFIX}")]
        except OSError:
            return
        files.sort(key=lambda f: f[0].st_mtime, reverse=True)
        total = 0
        for stat, path in files:
            total += stat.st_size
            if total > self.max_bytes:
                with contextlib.suppress(OSError):
                    path.unlink()
