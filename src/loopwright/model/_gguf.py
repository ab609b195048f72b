"""Reading a GGUF file's metadata without loading the model.

Whether a local model can call tools natively is known from its chat template, which the GGUF
keeps under ``tokenizer.chat_template``; an agent decides on its strategy before any weights are
loaded, so the template is read from the file's header directly (a few milliseconds; the header is
the metadata table, read up to the key wanted).

The format (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): the magic ``GGUF``, a
version (2 or 3), the tensor count and the metadata count (64-bit), then each entry: its key (a
64-bit length and UTF-8 bytes), a 32-bit value type, and the value. All little-endian.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

from loopwright.errors import UserInputError

_STRING = 8
_ARRAY = 9
# value type -> size in bytes of the fixed-size types (uint8 … float64, bool)
_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_MAX_STRING = 64 * 2**20  # a metadata string longer than this is a damaged file, not a template


class GGUFError(UserInputError):
    """The file is not a GGUF file this reader understands (a model path the user gave)."""


def read_string(path: str | Path, key: str) -> str | None:
    """The string value of ``key`` in the GGUF file's metadata, or None when it has none."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise GGUFError(f"{path} is not a GGUF file")
        (version,) = struct.unpack("<I", _read(f, 4))
        if version not in (2, 3):
            raise GGUFError(f"{path}: GGUF version {version} is not supported")
        _tensors, count = struct.unpack("<QQ", _read(f, 16))
        for _ in range(count):
            name = _string(f)
            (kind,) = struct.unpack("<I", _read(f, 4))
            if name == key:
                return _string(f) if kind == _STRING else None
            _skip(f, kind)
    return None


def _read(f: BinaryIO, size: int) -> bytes:
    data = f.read(size)
    if len(data) != size:
        raise GGUFError("the GGUF header ends early")
    return data


def _string(f: BinaryIO) -> str:
    (size,) = struct.unpack("<Q", _read(f, 8))
    if size > _MAX_STRING:
        raise GGUFError("a GGUF metadata string is implausibly long")
    return _read(f, size).decode("utf-8", errors="replace")


def _skip(f: BinaryIO, kind: int) -> None:
    if kind in _FIXED:
        f.seek(_FIXED[kind], 1)
    elif kind == _STRING:
        (size,) = struct.unpack("<Q", _read(f, 8))
        f.seek(size, 1)
    elif kind == _ARRAY:
        item, length = struct.unpack("<IQ", _read(f, 12))
        if item in _FIXED:
            f.seek(_FIXED[item] * length, 1)
        else:
            for _ in range(length):
                _skip(f, item)
    else:
        raise GGUFError(f"unknown GGUF value type {kind}")
