"""Tool files: storage, records, signed URLs (see docs/tools.md, "Tool files")."""

from __future__ import annotations

from loopwright.tools.files.manager import (
    StoredFile,
    ToolFile,
    ToolFileError,
    ToolFiles,
    decode_data_url,
    extension_for,
    load_tool_files,
    observation_for,
    with_file_observations,
)
from loopwright.tools.files.signing import load_secret, sign_url, signature, verify
from loopwright.tools.files.storage import FileStorage, LocalFileStorage

__all__ = [
    "FileStorage",
    "LocalFileStorage",
    "StoredFile",
    "ToolFile",
    "ToolFileError",
    "ToolFiles",
    "decode_data_url",
    "extension_for",
    "load_secret",
    "load_tool_files",
    "observation_for",
    "sign_url",
    "signature",
    "verify",
    "with_file_observations",
]
