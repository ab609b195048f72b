"""Files end users upload (Dify's ``upload_files``): where they are kept and how large they may be, the
name and type an upload is known by, keeping one, and its signed preview URLs.

A file is stored under the upload directory as ``<app id>/<file id>`` — the client's filename never
reaches a path — and recorded as a row of the end user who sent it.
"""

from __future__ import annotations

import mimetypes
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from loopwright.app.config import AppConfig
from loopwright.app.dify.stream import file_type
from loopwright.app.lookup import AppLookup
from loopwright.config import Settings
from loopwright.errors import NotFoundError, UserInputError
from loopwright.paths import files_dir
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import UploadFile, unix_seconds
from loopwright.tools.files.manager import ToolFiles
from loopwright.tools.files.signing import signature, verify

__all__ = [
    "DEFAULT_MAX_BYTES",
    "default_upload_dir",
    "StoredUpload",
    "UploadLimits",
    "display_name",
    "effective_mime_type",
    "extension_of",
    "UploadAccessDeniedError",
    "UploadNotFoundError",
    "UploadedFile",
    "find_upload",
    "message_upload",
    "preview_url",
    "preview_url_valid",
    "store_upload",
    "type_allowed",
    "upload_limits",
]

DEFAULT_MAX_BYTES = 15 * 1024 * 1024  # Dify's file_size_limit (15 MB)
MAX_NAME_CHARS = 200  # as Dify: longer names are cut, keeping the extension
MAX_EXTENSION_CHARS = 32  # the column's size: a longer "extension" is not one
MAX_MIME_TYPE_CHARS = 255
GENERIC_MIME_TYPES = frozenset({"", "application/octet-stream"})


MB = 1024 * 1024
# Dify's per-type limits (UPLOAD_IMAGE/VIDEO/AUDIO_FILE_SIZE_LIMIT); other types: ``max_bytes``.
DIFY_TYPE_MAX_BYTES: tuple[tuple[str, int], ...] = (
    ("image", 10 * MB),
    ("video", 100 * MB),
    ("audio", 50 * MB),
)


@dataclass(frozen=True, slots=True)
class UploadLimits:
    """Where uploads are kept (relative paths from the working directory) and the largest one taken:
    ``max_bytes``, or for a type listed in ``type_max_bytes`` that type's limit."""

    directory: Path = field(
        default_factory=lambda: default_upload_dir()
    )  # read when made: --data-dir applies
    max_bytes: int = DEFAULT_MAX_BYTES
    type_max_bytes: tuple[tuple[str, int], ...] = DIFY_TYPE_MAX_BYTES

    def limit_for(self, kind: str) -> int:
        """The size limit of a file of this type (``image``, ``video``, ``audio``, ``document``, …)."""
        for listed, limit in self.type_max_bytes:
            if listed == kind:
                return limit
        return self.max_bytes


def default_upload_dir() -> Path:
    """``files/uploads`` in the data directory, beside the tool files."""
    return files_dir() / "uploads"


def upload_limits(
    settings: Settings, *, directory: str | Path | None = None, max_bytes: int | None = None
) -> UploadLimits:
    """The upload directory and size limits: those given (a server's own choice), else the settings'.

    ``Settings`` has no upload keys yet, so "the settings'" are the defaults: ``files/uploads`` in
    the data directory (beside the tool files) and Dify's limits — 15 MB, images 10 MB,
    audio 50 MB, video 100 MB. A ``max_bytes`` given applies to every type. This is the one place
    that reads them, so a key added to ``Settings`` is honoured here and nowhere else."""
    del settings  # no upload keys in it yet (see above)
    return UploadLimits(
        Path(directory) if directory is not None else default_upload_dir(),
        int(max_bytes) if max_bytes is not None else DEFAULT_MAX_BYTES,
        () if max_bytes is not None else DIFY_TYPE_MAX_BYTES,
    )


# --- the name and type of an upload -----------------------------------------------------------------


def display_name(filename: str) -> str:
    """The file's name as shown back: no directories, no control characters, at most 200 characters
    (keeping the extension)."""
    name = re.split(r"[\\/]", filename)[-1]
    name = "".join(ch for ch in name if ch.isprintable()).strip()
    if len(name) > MAX_NAME_CHARS:
        stem, dot, ext = name.rpartition(".")
        if dot and stem and len(ext) < 20:
            name = stem[: MAX_NAME_CHARS - len(ext) - 1] + "." + ext
        else:
            name = name[:MAX_NAME_CHARS]
    return name


def extension_of(name: str) -> str:
    return name.rpartition(".")[2].lower() if "." in name else ""


def effective_mime_type(declared: str, extension: str) -> str:
    """The declared type; a missing or generic one is guessed from the extension."""
    if declared not in GENERIC_MIME_TYPES:
        return declared
    guessed = mimetypes.guess_type(f"f.{extension}")[0] if extension else None
    if guessed is None and extension in ("md", "markdown"):
        guessed = "text/markdown"
    return guessed or "application/octet-stream"


def type_allowed(config: AppConfig, mime_type: str, extension: str) -> bool:
    """Whether the app takes files of this type: its ``file_upload.allowed_types``, or a ``file`` /
    ``file-list`` field of its form that takes it (its ``allowed_file_types``; none listed or
    ``custom``: any) — an upload may be meant for a form field rather than the message's ``files``."""
    kind = file_type(mime_type, extension)
    if kind == "custom" and config.file_upload.allowed_file_extensions:
        wanted = {e.lower().lstrip(".") for e in config.file_upload.allowed_file_extensions}
        if extension.lower() in wanted:
            return True
    accepted = [config.file_upload.allowed_types] + [
        f.allowed_file_types or ["custom"] for f in config.user_input_form if f.type in ("file", "file-list")
    ]
    return any("custom" in types or kind in types for types in accepted)


# --- keeping one ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredUpload:
    id: str
    name: str
    size: int
    extension: str
    mime_type: str
    created_by: str  # the end user's id
    created_at: int  # Unix seconds


async def store_upload(
    db: Database,
    lookup: AppLookup,
    app_id: str,
    user: str,
    received: Path,
    *,
    directory: Path,
    name: str,
    size: int,
    mime_type: str,
) -> StoredUpload:
    """Keep a received file: move it from ``received`` to ``directory/<app id>/<file id>`` and record
    it as ``user``'s upload named ``name`` (a :func:`display_name`). If recording fails, the moved file
    is removed again: a file on disk always has its row."""
    extension = extension_of(name)
    file_id = str(uuid.uuid4())
    storage_key = f"{app_id}/{file_id}"
    target = directory / storage_key
    await anyio.Path(target.parent).mkdir(parents=True, exist_ok=True)
    await anyio.Path(received).rename(target)
    try:
        end_user_id = await lookup.end_user_id(app_id, user)
        async with db.transaction() as session:
            row = await repo.add_upload_file(
                session,
                file_id=file_id,
                app_id=app_id,
                end_user_id=end_user_id,
                name=name,
                size=size,
                extension=extension if len(extension) <= MAX_EXTENSION_CHARS else "",
                mime_type=mime_type[:MAX_MIME_TYPE_CHARS],
                storage_key=storage_key,
            )
            return StoredUpload(
                row.id,
                row.name,
                row.size,
                row.extension,
                row.mime_type,
                end_user_id,
                unix_seconds(row.created_at),
            )
    except BaseException:
        await anyio.Path(target).unlink(missing_ok=True)
        raise


# --- signed preview URLs ----------------------------------------------------------------------------

PREVIEW_KINDS = ("file-preview", "image-preview")


def preview_url(
    files: ToolFiles, upload_id: str, kind: str = "file-preview", *, now: float | None = None
) -> str:
    """Dify's signed URL of an upload, ``{FILES_URL}/files/{id}/{kind}?timestamp&nonce&sign``, signed
    with the tool files' key and valid as long as theirs (the message history gives these)."""
    timestamp = str(int(files.clock() if now is None else now))
    nonce = os.urandom(16).hex()
    sign = signature(upload_id, timestamp, nonce, files.secret, kind)
    return f"{files.base_url}/files/{upload_id}/{kind}?timestamp={timestamp}&nonce={nonce}&sign={sign}"


def preview_url_valid(
    files: ToolFiles,
    upload_id: str,
    kind: str,
    timestamp: str,
    nonce: str,
    sign: str,
    *,
    now: float | None = None,
) -> bool:
    """Whether a :func:`preview_url`'s signature holds and has not expired."""
    now = files.clock() if now is None else now
    return kind in PREVIEW_KINDS and verify(
        upload_id, timestamp, nonce, sign, secret=files.secret, max_age=files.ttl, now=now, purpose=kind
    )


@dataclass(frozen=True, slots=True)
class UploadedFile:
    """A kept upload as a preview serves it."""

    id: str
    name: str
    mime_type: str
    size: int
    path: Path  # where its bytes are


async def find_upload(db: Database, directory: Path, upload_id: str) -> UploadedFile | None:
    """The upload ``upload_id`` kept under ``directory``, or None."""
    async with db.sessionmaker() as session:
        row = await session.get(UploadFile, upload_id)
    if row is None:
        return None
    return UploadedFile(row.id, row.name, row.mime_type, row.size, directory / row.storage_key)


class UploadNotFoundError(NotFoundError):
    """The upload is in no message, or has no record (Dify's ``file_not_found``)."""


class UploadAccessDeniedError(UserInputError):
    """The upload is in another app's messages (Dify's ``file_access_denied``)."""


async def message_upload(db: Database, directory: Path, app_id: str, upload_id: str) -> UploadedFile:
    """An upload that was sent with one of the app's messages, as Dify's ``/files/{id}/preview``
    allows it (with its texts): only such an upload may be read back with the app's key."""
    async with db.sessionmaker() as session:
        used, ours = await repo.message_of_upload(session, upload_id, app_id)
    if not used:
        raise UploadNotFoundError("File not found in message context")
    if not ours:
        raise UploadAccessDeniedError("File access denied: not owned by requesting app")
    upload = await find_upload(db, directory, upload_id)
    if upload is None:
        raise UploadNotFoundError("Upload file record not found")
    return upload
