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

The same folder keeps :class:`ContextStates`' files: the short texts the embedded model's tool choice
evaluates from the context's start in every run (each tool's description and examples, which the
question is scored after: ``model._local_choice.choose_by_question``), one llama.cpp sequence file
each (``llama_state_seq_save_file``), and in memory for the process's later runs.

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
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("loopwright.model")

__all__ = ["MIN_PREFIX_TOKENS", "ContextStates", "KvSnapshot", "PromptCache", "common_prefix"]

# A shorter prefix is evaluated faster than a file is read and written.
MIN_PREFIX_TOKENS = 128
SUFFIX = ".session"
SEQUENCE_SUFFIX = ".seq"  # a ContextStates file: one sequence's KV cache and tokens


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
        self._write(path, lambda file: llama_cpp.llama_state_save_file(llama._ctx.ctx, file, tokens, n))

    def _write(self, path: Path, write: Callable[[bytes], object]) -> None:
        """Write ``path`` with llama.cpp's ``write(file name)`` (false when it failed), whole or not at
        all for a reader in another process, then keep the folder within its bound."""
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if not write(str(partial).encode()):
                raise OSError(f"llama.cpp could not write {path.name}")
            os.replace(partial, path)
        except OSError as e:
            log.warning("prompt cache: cannot save to %s: %s", self.directory, e)
            with contextlib.suppress(OSError):
                partial.unlink()
            return
        self._trim()

    def load_sequence(self, llama: Any, model_id: str, tokens: Sequence[int]) -> bool:
        """Put a :class:`ContextStates` file for ``tokens`` into the context's sequence 0 (which the
        caller emptied); False when there is none or it cannot be used (then it is removed)."""
        path = self.directory / f"{self._key(llama, model_id, tokens)}{SEQUENCE_SUFFIX}"
        if not path.is_file():
            return False
        llama_cpp = importlib.import_module("llama_cpp")
        n = len(tokens)
        read = (llama_cpp.llama_token * n)()
        count = ctypes.c_size_t(0)
        size = llama_cpp.llama_state_seq_load_file(
            llama._ctx.ctx, str(path).encode(), 0, read, n, ctypes.byref(count)
        )
        if not size or count.value != n or list(read) != list(tokens):
            log.warning("prompt cache: %s cannot be used; evaluating its text again", path.name)
            llama._ctx.kv_cache_seq_rm(0, 0, -1)
            with contextlib.suppress(OSError):
                path.unlink()
            return False
        with contextlib.suppress(OSError):
            path.touch()  # recently used
        return True

    def save_sequence(self, llama: Any, model_id: str, tokens: Sequence[int]) -> None:
        """Keep the context's sequence 0, which holds exactly ``tokens``, as a file."""
        llama_cpp = importlib.import_module("llama_cpp")
        path = self.directory / f"{self._key(llama, model_id, tokens)}{SEQUENCE_SUFFIX}"
        n = len(tokens)
        held = (llama_cpp.llama_token * n)(*tokens)
        self._write(path, lambda file: llama_cpp.llama_state_seq_save_file(llama._ctx.ctx, file, 0, held, n))

    def _trim(self) -> None:
        """Remove the least recently used files past the size bound."""
        try:
            paths = [*self.directory.glob(f"*{SUFFIX}"), *self.directory.glob(f"*{SEQUENCE_SUFFIX}")]
            files = [(p.stat(), p) for p in paths]
        except OSError:
            return
        files.sort(key=lambda f: f[0].st_mtime, reverse=True)
        total = 0
        for stat, path in files:
            total += stat.st_size
            if total > self.max_bytes:
                with contextlib.suppress(OSError):
                    path.unlink()


class KvSnapshot:
    """What the context holds — its KV cache (llama.cpp's state of sequence 0) and its tokens — without
    llama-cpp-python's ``save_state``, which also copies the scores array (n_batch × vocabulary floats,
    about 100 MB for the default model) each way and every logit llama.cpp holds: only the KV cache
    is needed, since what is evaluated next evaluates the held text's last token again anyway."""

    def __init__(self, kv: Any, size: int, tokens: Any) -> None:
        self.kv, self.size, self.tokens = kv, size, tokens

    @classmethod
    def take(cls, llama: Any) -> KvSnapshot:
        lib = importlib.import_module("llama_cpp")
        ctx = llama._ctx.ctx
        size = int(lib.llama_state_seq_get_size(ctx, 0))
        kv = (ctypes.c_uint8 * size)()
        copied = int(lib.llama_state_seq_get_data(ctx, kv, size, 0))
        if copied <= 0 or copied > size:
            raise RuntimeError("llama.cpp did not copy the context's state")
        return cls(kv, copied, llama.input_ids[: llama.n_tokens].copy())

    def restore(self, llama: Any) -> None:
        lib = importlib.import_module("llama_cpp")
        llama._ctx.kv_cache_seq_rm(0, 0, -1)
        if int(lib.llama_state_seq_set_data(llama._ctx.ctx, self.kv, self.size, 0)) == 0:
            # Nothing of it is usable: what comes next evaluates its whole prompt.
            llama.n_tokens = 0
            return
        _holding(llama, self.tokens)


def _holding(llama: Any, tokens: Sequence[int]) -> None:
    """Tell llama-cpp-python that the context holds ``tokens`` (its KV cache was just put back)."""
    n = len(tokens)
    llama.input_ids[:n] = tokens
    llama.n_tokens = n
    # The logits are not the held text's: the next generation evaluates its last token again.
    llama._requires_eval = True


@dataclass
class ContextStates:
    """Evaluated short texts that a run evaluates from the context's start — the tool contexts of the
    embedded model's choice — held in memory (at most ``max_bytes``, least recently used out first)
    and, with a :class:`PromptCache`, as its files for the next process. One per loaded model."""

    max_bytes: int = 64 << 20
    _held: OrderedDict[tuple[int, ...], KvSnapshot] = field(default_factory=OrderedDict)

    def prime(self, llama: Any, tokens: Sequence[int], disk: tuple[PromptCache, str] | None = None) -> str:
        """Make the context's sequence 0 hold exactly ``tokens`` from its start (called under the
        model's lock, in its thread); returns where the state came from: ``"memory"``, ``"disk"`` or
        ``"evaluated"``."""
        key = tuple(int(t) for t in tokens)
        held = self._held.get(key)
        if held is not None:
            self._held.move_to_end(key)
            held.restore(llama)
            if llama.n_tokens == len(key):
                return "memory"
        source = "evaluated"
        llama._ctx.kv_cache_seq_rm(0, 0, -1)
        if disk is not None and disk[0].load_sequence(llama, disk[1], key):
            _holding(llama, key)
            source = "disk"
        else:
            llama.n_tokens = 0
            llama.eval(list(key))
            if disk is not None:
                disk[0].save_sequence(llama, disk[1], key)
        self._keep(key, KvSnapshot.take(llama))
        return source

    def _keep(self, key: tuple[int, ...], snapshot: KvSnapshot) -> None:
        self._held[key] = snapshot
        total = sum(s.size for s in self._held.values())
        while total > self.max_bytes and len(self._held) > 1:
            _, dropped = self._held.popitem(last=False)
            total -= dropped.size
