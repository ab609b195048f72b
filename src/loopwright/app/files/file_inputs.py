"""``file`` and ``file-list`` inputs of an app's form, resolved as Dify's ``file_factory`` does.

A value is a file mapping, ``{"type", "transfer_method": "local_file", "upload_file_id"}`` (an upload of
this app, by any of its end users) or ``{"type", "transfer_method": "remote_url", "url"}``; ``type``
defaults to ``custom`` and ``remote_url`` stands for ``url``. A remote file is looked at with a ``HEAD``
request, as Dify does, for its name, type and size — through the SSRF guard
(:mod:`loopwright.tools.net`): a URL whose host is private, loopback or a metadata address (redirects
included) is refused unless the operator allow-listed it. Each file is checked against its field's
``allowed_file_types``, ``allowed_file_extensions`` (for ``custom``) and
``allowed_file_upload_methods``, with Dify's messages.

What comes out: the inputs as stored (each file as Dify's ``File`` mapping, ``dify_model_identity``
``__dify__file__``), the files as content for the model (an upload inline, a remote file by its URL),
and the inputs as the prompt's ``{{variable}}`` sees them — readable text where Dify puts the Python
repr of its ``File`` object.
"""

from __future__ import annotations

import base64
import mimetypes
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx

from loopwright.app.config import InputField
from loopwright.app.dify.stream import file_type
from loopwright.app.files.uploads import extension_of, preview_url
from loopwright.app.inputs import FILE_TYPES
from loopwright.errors import UserInputError
from loopwright.model.entities import ContentPart, FilePart, ImagePart
from loopwright.store.db import Database
from loopwright.store.models import UploadFile
from loopwright.tools.base import ToolInvokeError
from loopwright.tools.files.manager import ToolFiles
from loopwright.tools.net import NetworkPolicy, check_url, guarded_client

__all__ = [
    "FILE_MODEL_IDENTITY",
    "FileInputs",
    "has_files",
    "inputs_view",
    "is_file_value",
    "prompt_view",
    "readable_file",
    "resolve_file_inputs",
]

FILE_MODEL_IDENTITY = "__dify__file__"
FILE_TYPE_NAMES = ("image", "document", "audio", "video", "custom")
HEAD_TIMEOUT = httpx.Timeout(10.0, connect=5.0)
MAX_INLINE_BYTES = 20 * 1024 * 1024  # an upload larger than this is not sent inline


@dataclass(slots=True)
class FileInputs:
    """The inputs with their files resolved: ``values`` to store, ``parts`` for the model, ``prompt``
    for ``{{variable}}`` in the instruction."""

    values: dict[str, Any]
    parts: list[ContentPart] = field(default_factory=list)
    prompt: dict[str, Any] = field(default_factory=dict)


def is_file_value(value: object) -> bool:
    """Whether a stored input value is a resolved file (Dify's ``File`` mapping)."""
    return isinstance(value, dict) and value.get("dify_model_identity") == FILE_MODEL_IDENTITY


def has_files(inputs: Mapping[str, Any] | None) -> bool:
    """Whether stored inputs hold a resolved file (so a view of them needs URLs signed)."""
    return any(
        is_file_value(v) or (isinstance(v, list) and any(is_file_value(i) for i in v))
        for v in (inputs or {}).values()
    )


def inputs_view(inputs: Mapping[str, Any] | None, files: ToolFiles | None) -> dict[str, Any]:
    """Stored inputs as Dify's history shows them: each file with its ``url`` (an upload's preview
    URL signed now, a remote file's URL) and ``upload_file_id`` (Dify's ``Message.inputs``)."""

    def view(value: Any) -> Any:
        if is_file_value(value):
            related = value.get("related_id")
            if value.get("transfer_method") == "local_file" and related and files is not None:
                url = preview_url(files, str(related))
            else:
                url = value.get("remote_url")
            return {**value, "upload_file_id": related, "url": url}
        if isinstance(value, list):
            return [view(v) for v in value]
        return value

    return {k: view(v) for k, v in (inputs or {}).items()}


async def resolve_file_inputs(
    db: Database,
    app_id: str,
    form: Sequence[InputField],
    inputs: Mapping[str, Any],
    *,
    upload_dir: Path,
    policy: NetworkPolicy,
) -> FileInputs:
    """Resolve the file fields of already validated ``inputs`` (see the module's docstring); a
    :class:`UserInputError` with Dify's message for a file that cannot be used."""
    fields = {f.variable: f for f in form if f.type in FILE_TYPES}
    out = FileInputs(dict(inputs), prompt=dict(inputs))
    for name, value in inputs.items():
        f = fields.get(name)
        if f is None or value is None:  # not a file field, or an optional one left empty
            continue
        mappings = value if isinstance(value, list) else [value]
        resolved = [await _resolve(db, app_id, f, m, policy) for m in mappings]
        for file in resolved:
            out.parts.append(await _content(file, upload_dir))
        out.values[name] = [r.stored for r in resolved] if isinstance(value, list) else resolved[0].stored
        out.prompt[name] = ", ".join(r.readable() for r in resolved)
    return out


@dataclass(frozen=True, slots=True)
class _Resolved:
    stored: dict[str, Any]  # Dify's File mapping
    upload: UploadFile | None

    def readable(self) -> str:
        return readable_file(self.stored)


def readable_file(s: Mapping[str, Any]) -> str:
    """A stored file as ``{{variable}}`` shows it: ``dot.png (image, image/png, 70 bytes)``."""
    size = f", {s.get('size')} bytes" if isinstance(s.get("size"), int) and s["size"] >= 0 else ""
    where = f": {s.get('remote_url')}" if s.get("transfer_method") == "remote_url" else ""
    return f"{s.get('filename')} ({s.get('type')}, {s.get('mime_type') or 'unknown type'}{size}){where}"


def prompt_view(inputs: Mapping[str, Any] | None) -> dict[str, Any]:
    """Stored inputs as a template shows them: files as :func:`readable_file` text."""

    def view(value: Any) -> Any:
        if is_file_value(value):
            return readable_file(value)
        if isinstance(value, list) and value and all(is_file_value(v) for v in value):
            return ", ".join(readable_file(v) for v in value)
        return value

    return {k: view(v) for k, v in (inputs or {}).items()}


async def _resolve(
    db: Database, app_id: str, f: InputField, mapping: Mapping[str, Any], policy: NetworkPolicy
) -> _Resolved:
    declared = str(mapping.get("type") or "custom")
    if declared not in FILE_TYPE_NAMES:
        raise UserInputError(f"'{declared}' is not a valid FileType")
    method = str(mapping.get("transfer_method") or "")
    upload: UploadFile | None = None
    if method == "local_file":
        upload = await _upload(db, app_id, mapping.get("upload_file_id"))
        name, mime, size, url, related = upload.name, upload.mime_type, upload.size, None, upload.id
    elif method == "remote_url":
        url = str(mapping.get("url") or mapping.get("remote_url") or "")
        if not url.startswith(("http://", "https://")):
            raise UserInputError("Invalid file url")
        name, mime, size = await remote_file_info(url, policy)
        related = None
    else:
        raise UserInputError(f"Invalid file transfer method: {method or None}")
    extension = "." + extension_of(name) if extension_of(name) else ".bin"
    kind = declared if declared != "custom" else _standard_type(mime, extension)
    if not _allowed(f, declared, extension, method):
        raise UserInputError(f"File validation failed for file: {name}")
    stored = {
        "dify_model_identity": FILE_MODEL_IDENTITY,
        "id": None,
        "tenant_id": app_id,  # loopwright has no workspaces: the app is the tenant
        "type": kind,
        "transfer_method": method,
        "remote_url": url,
        "related_id": related,
        "filename": name,
        "extension": extension,
        "mime_type": mime,
        "size": size,
    }
    return _Resolved(stored, upload)


def _allowed(f: InputField, declared: str, extension: str, method: str) -> bool:
    """Dify's ``_is_file_valid_with_config`` for the field's settings (an empty list: no limit)."""
    if f.allowed_file_types and declared not in f.allowed_file_types and declared != "custom":
        return False
    if declared == "custom" and f.allowed_file_extensions:
        wanted = {e.lower() if e.startswith(".") else f".{e.lower()}" for e in f.allowed_file_extensions}
        if extension.lower() not in wanted:
            return False
    return not (f.allowed_file_upload_methods and method not in f.allowed_file_upload_methods)


def _standard_type(mime: str, extension: str) -> str:
    """Dify's ``_standardize_file_type`` for a ``custom`` file: its real kind when it has one."""
    return file_type(mime or "application/octet-stream", extension.lstrip("."))


async def _upload(db: Database, app_id: str, upload_id: Any) -> UploadFile:
    try:
        key = str(uuid.UUID(str(upload_id)))
    except ValueError:
        raise UserInputError("Invalid upload file") from None
    async with db.sessionmaker() as session:
        row = await session.get(UploadFile, key)
    if row is None or row.app_id != app_id:
        raise UserInputError("Invalid upload file")
    return row


async def remote_file_info(url: str, policy: NetworkPolicy) -> tuple[str, str, int]:
    """``(filename, mime type, size)`` of a remote file, as Dify's ``_get_remote_file_info``: guessed
    from the URL, then from a ``HEAD`` answer (200) when there is one. A URL the guard refuses (its
    host, or a redirect's) is a :class:`UserInputError`; a server that does not answer is not."""
    filename = url.split("/")[-1].split("?")[0] or "unknown_file"
    mime = mimetypes.guess_type(filename)[0] or ""
    size = -1
    try:
        await check_url(url, policy)
        async with guarded_client(policy, timeout=HEAD_TIMEOUT) as client:
            response = await client.head(url)
    except ToolInvokeError as exc:  # the guard (or a bad URL): the file may not be used
        raise UserInputError(f"the file URL cannot be used: {exc}") from None
    except httpx.HTTPError:
        return filename, mime, size
    if response.status_code == 200:
        disposition = response.headers.get("content-disposition")
        if disposition and "filename=" in disposition:
            filename = disposition.split("filename=")[-1].strip().strip('"') or filename
        try:
            size = int(response.headers.get("content-length", size))
        except ValueError:
            size = -1
        mime = mime or response.headers.get("content-type", "").split(";")[0].strip()
    return filename, mime, size


async def _content(file: _Resolved, upload_dir: Path) -> ContentPart:
    """The file as the model gets it: an upload inline (the model cannot reach this server's disk),
    a remote file by its URL."""
    s = file.stored
    if file.upload is None:
        url = str(s["remote_url"])
        if s["type"] == "image":
            return ImagePart(url)
        return FilePart(url, s["mime_type"] or "application/octet-stream", s["filename"])
    row = file.upload
    if row.size > MAX_INLINE_BYTES:
        raise UserInputError(f"file {row.name} is too large to send to the model")
    data = await anyio.Path(upload_dir / row.storage_key).read_bytes()
    url = f"data:{row.mime_type};base64,{base64.b64encode(data).decode('ascii')}"
    if s["type"] == "image":
        return ImagePart(url, mime_type=row.mime_type)
    return FilePart(url, row.mime_type, row.name)
