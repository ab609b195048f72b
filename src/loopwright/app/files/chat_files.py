"""The ``files`` of a chat request: checked against the app's file-upload settings as Dify does, then
turned into what the model sees (images before the text, when it has vision) and ``message_files``
rows. As Dify: files sent to an app whose upload is off are dropped (not refused), an entry without
``type`` is ``custom``, ``remote_url`` is read where ``url`` is missing, and an upload may be used by
any end user of the app it was uploaded to.

An entry is ``{"type": "image"|"document"|…, "transfer_method": "local_file", "upload_file_id": …}``
(a file this app's user uploaded through ``POST /v1/files/upload``) or ``{"type": …,
"transfer_method": "remote_url", "url": "https://…"}``. Remote URLs are handed to the model as they
are — loopwright does not fetch them, so a request cannot make the server reach a private address.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from loopwright.app.config import FileUpload
from loopwright.errors import UserInputError
from loopwright.model.entities import ContentPart, FilePart, ImagePart
from loopwright.store.db import Database
from loopwright.store.models import UploadFile

MAX_INLINE_BYTES = 20 * 1024 * 1024  # an uploaded image larger than this is not sent inline


@dataclass(slots=True)
class ChatFiles:
    parts: list[ContentPart]
    rows: list[dict[str, Any]]  # MessageFile values, without message_id


NO_FILES = ChatFiles([], [])


async def resolve_chat_files(
    db: Database,
    app_id: str,
    end_user_id: str,
    settings: FileUpload,
    entries: Sequence[Mapping[str, Any]] | None,
    upload_dir: Path,
) -> ChatFiles:
    """The request's files, or a :class:`UserInputError` that names what is wrong."""
    if not entries or not settings.enabled:
        return NO_FILES
    if len(entries) > settings.number_limits:
        raise UserInputError(f"Number of files exceeds the limit of {settings.number_limits}")
    out = ChatFiles([], [])
    for entry in entries:
        kind, method = _check_entry(entry, settings)
        if method == "remote_url":
            url = str(entry.get("url") or entry.get("remote_url") or "")
            if not url.startswith(("https://", "http://")):
                raise UserInputError("url of a remote_url file must be an http(s) URL")
            _check_extension(settings, kind, url.split("?")[0].rsplit("/", 1)[-1])
            out.parts.append(ImagePart(url) if kind == "image" else FilePart(url))
            out.rows.append(_row(kind, method, url, None, end_user_id))
            continue
        row = await _upload(db, app_id, entry.get("upload_file_id"))
        _check_extension(settings, kind, row.name)
        out.parts.append(await _inline(row, kind, upload_dir))
        out.rows.append(_row(kind, method, None, row.id, end_user_id))
    return out


def _check_entry(entry: Any, settings: FileUpload) -> tuple[str, str]:
    if not isinstance(entry, Mapping):
        raise UserInputError("each file must be an object with type and transfer_method")
    kind = str(entry.get("type") or "custom")
    method = str(entry.get("transfer_method") or "")
    if method not in ("local_file", "remote_url"):
        raise UserInputError("transfer_method must be local_file or remote_url")
    if method not in settings.transfer_methods:
        raise UserInputError(f"transfer method {method} is not allowed for this app")
    if kind not in settings.allowed_types and not (kind == "custom" and settings.allowed_file_extensions):
        raise UserInputError(
            f"file type {kind!r} is not allowed; allowed: {', '.join(settings.allowed_types)}"
        )
    return kind, method


def _check_extension(settings: FileUpload, kind: str, name: str) -> None:
    """Dify's rule for a ``custom`` file: its extension must be one of ``allowed_file_extensions``
    (when the app lists any; with or without the dot, any case)."""
    if kind != "custom" or not settings.allowed_file_extensions:
        return
    extension = "." + name.rpartition(".")[2].lower() if "." in name else ""
    wanted = {e.lower() if e.startswith(".") else f".{e.lower()}" for e in settings.allowed_file_extensions}
    if extension not in wanted:
        raise UserInputError(f"File validation failed for file: {name}")


async def _upload(db: Database, app_id: str, upload_id: Any) -> UploadFile:
    try:
        key = str(uuid.UUID(str(upload_id)))
    except ValueError:
        raise UserInputError("upload_file_id is not a valid file id") from None
    async with db.sessionmaker() as session:
        row = await session.get(UploadFile, key)
    # An upload is usable in the app it was uploaded to, by any of its end users (Dify: the tenant's).
    if row is None or row.app_id != app_id:
        raise UserInputError(f"upload file {key} does not exist")
    return row


async def _inline(row: UploadFile, kind: str, upload_dir: Path) -> ContentPart:
    """An uploaded file as a data URL (the model cannot reach this server's disk)."""
    if row.size > MAX_INLINE_BYTES:
        raise UserInputError(f"file {row.name} is too large to send to the model")
    data = await anyio.Path(upload_dir / row.storage_key).read_bytes()
    url = f"data:{row.mime_type};base64,{base64.b64encode(data).decode('ascii')}"
    if kind == "image":
        return ImagePart(url, mime_type=row.mime_type)
    return FilePart(url, row.mime_type, row.name)


def _row(kind: str, method: str, url: str | None, upload_id: str | None, end_user_id: str) -> dict[str, Any]:
    return {
        "type": kind,
        "transfer_method": method,
        "url": url,
        "belongs_to": "user",
        "upload_file_id": upload_id,
        "created_by_role": "end_user",
        "created_by": end_user_id,
    }
