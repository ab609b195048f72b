"""``POST /v1/files/upload``: Dify's Service API file upload (multipart ``file`` + ``user``).

The multipart body is parsed as it arrives and the file part is written to disk chunk by chunk, so an
upload is never held in memory; a file over the limit is abandoned as soon as it crosses it. Files are
stored under the upload directory as ``<app id>/<file id>`` (the client's filename never reaches a path)
and recorded as an ``UploadFile`` row.

Settings are read from the server state (``upload_dir``, ``upload_max_bytes``) when it has them, else
the defaults below.
"""

from __future__ import annotations

import mimetypes
import re
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import unquote

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from loopwright.app.config import AppConfig
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.errors import ApiError, invalid_param
from loopwright.server.state import ServerState, get_state, require_user
from loopwright.store import repositories as repo
from loopwright.store.models import UploadFile, unix_seconds

router = APIRouter()

DEFAULT_UPLOAD_DIR = Path("loopwright-files") / "uploads"
DEFAULT_MAX_BYTES = 15 * 1024 * 1024  # Dify's file_size_limit (15 MB)

MAX_HEADER_BYTES = 16 * 1024  # one part's header block
MAX_FIELD_BYTES = 64 * 1024  # a non-file field (``user``…)
MAX_PARTS = 64
DRAIN_LIMIT = 64 * 1024 * 1024  # read (and drop) at most this much after an error, so the client sees it
MAX_NAME_CHARS = 200  # as Dify: longer names are cut, keeping the extension

DOCUMENT_MIME_TYPES = frozenset({"application/pdf", "text/plain", "text/markdown", "text/x-markdown"})
DOCUMENT_EXTENSIONS = frozenset({"pdf", "txt", "md", "markdown"})
GENERIC_MIME_TYPES = frozenset({"", "application/octet-stream"})

_PARAM = re.compile(r';\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')


def no_file_uploaded() -> ApiError:
    return ApiError(400, "no_file_uploaded", "Please upload your file.")


def too_many_files() -> ApiError:
    return ApiError(400, "too_many_files", "Only one file is allowed.")


def unsupported_file_type() -> ApiError:
    return ApiError(415, "unsupported_file_type", "File type not allowed.")


def file_too_large(limit: int) -> ApiError:
    return ApiError(413, "file_too_large", f"File size exceeded. The limit is {_megabytes(limit)}.")


def _megabytes(n: int) -> str:
    mb = n / (1024 * 1024)
    return f"{mb:g} MB" if mb >= 1 else f"{n} bytes"


class MalformedBodyError(Exception):
    """The multipart body does not parse."""


# --- multipart --------------------------------------------------------------------------------------


def header_params(value: str) -> dict[str, str]:
    """The ``; key=value`` parameters of a header value (quoted strings unescaped; ``key*`` decoded
    per RFC 5987 and preferred over ``key``)."""
    params: dict[str, str] = {}
    extended: dict[str, str] = {}
    for m in _PARAM.finditer(value):
        key, raw = m.group(1).lower(), m.group(2).strip()
        if raw.startswith('"') and raw.endswith('"') and len(raw) >= 2:
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        if key.endswith("*"):
            charset, _, rest = raw.partition("'")
            _, _, encoded = rest.partition("'")
            try:
                extended[key[:-1]] = unquote(encoded, encoding=charset or "utf-8", errors="strict")
            except (LookupError, UnicodeDecodeError):
                continue
        else:
            params[key] = raw
    params.update(extended)
    return params


@dataclass(slots=True)
class PartStart:
    """A part's headers: its field ``name``, ``filename`` (None for a plain field) and content type."""

    name: str | None
    filename: str | None
    content_type: str


def parse_part_headers(block: bytes) -> PartStart:
    headers: dict[str, str] = {}
    for line in block.decode("utf-8", "replace").split("\r\n"):
        key, sep, value = line.partition(":")
        if not sep:
            raise MalformedBodyError("a part header has no ':'")
        headers[key.strip().lower()] = value.strip()
    disposition = headers.get("content-disposition", "")
    params = header_params(disposition)
    content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return PartStart(params.get("name"), params.get("filename"), content_type)


def form_boundary(content_type: str | None) -> bytes | None:
    """The boundary of a ``multipart/form-data`` body, or None for any other body."""
    if content_type is None or content_type.split(";", 1)[0].strip().lower() != "multipart/form-data":
        return None
    boundary = header_params(content_type).get("boundary", "")
    if not 1 <= len(boundary) <= 200:
        return None
    try:
        return boundary.encode("ascii")
    except UnicodeEncodeError:
        return None


async def multipart_events(
    chunks: AsyncIterator[bytes], boundary: bytes
) -> AsyncGenerator[PartStart | bytes | None, None]:
    """The body as events: a :class:`PartStart`, then the part's data as ``bytes`` chunks, then None at
    the end of the part. Raises :class:`MalformedBodyError` on a broken body."""
    delimiter = b"\r\n--" + boundary
    keep = len(delimiter) - 1
    buf = bytearray(b"\r\n")  # the first boundary needs no CRLF before it
    state = "preamble"
    parts = 0
    while True:
        if state == "preamble":
            i = buf.find(delimiter)
            if i >= 0:
                del buf[: i + len(delimiter)]
                state = "boundary"
                continue
            del buf[: max(0, len(buf) - keep)]
        elif state == "boundary":
            if buf[:2] == b"--":
                return  # the closing boundary; the epilogue is ignored
            line_end = buf.find(b"\r\n")
            end = buf.find(b"\r\n\r\n", max(line_end, 0))
            if line_end >= 0 and buf[:line_end].strip(b" \t"):
                raise MalformedBodyError("garbage after a boundary")
            if line_end >= 0 and end >= 0:
                parts += 1
                if parts > MAX_PARTS:
                    raise MalformedBodyError("too many parts")
                block = bytes(buf[line_end + 2 : end]) if end > line_end else b""
                del buf[: end + 4]
                yield parse_part_headers(block)
                state = "body"
                continue
            if len(buf) > MAX_HEADER_BYTES:
                raise MalformedBodyError("a part's headers are too long")
        else:  # body
            i = buf.find(delimiter)
            if i >= 0:
                if i:
                    yield bytes(buf[:i])
                del buf[: i + len(delimiter)]
                yield None
                state = "boundary"
                continue
            if len(buf) > keep:
                yield bytes(buf[: len(buf) - keep])
                del buf[: len(buf) - keep]
        chunk = await anext(chunks, None)
        if chunk is None:
            raise MalformedBodyError("the body ended before the closing boundary")
        buf += chunk


# --- the upload ------------------------------------------------------------------------------------


@dataclass(slots=True)
class Received:
    """What the body held: the stored file (under its temporary path) and the form fields."""

    fields: dict[str, str] = field(default_factory=dict)
    files: int = 0
    filename: str | None = None
    mime_type: str = ""
    size: int = 0
    temp_path: Path | None = None


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
    """The part's declared type; a missing or generic one is guessed from the extension."""
    if declared not in GENERIC_MIME_TYPES:
        return declared
    guessed = mimetypes.guess_type(f"f.{extension}")[0] if extension else None
    if guessed is None and extension in ("md", "markdown"):
        guessed = "text/markdown"
    return guessed or "application/octet-stream"


def file_category(mime_type: str, extension: str) -> str:
    """Dify's file type of an upload: image, document, audio, video, else custom."""
    if mime_type.startswith("image/"):
        return "image"
    if mime_type in DOCUMENT_MIME_TYPES or extension in DOCUMENT_EXTENSIONS:
        return "document"
    if mime_type.startswith("audio/"):
        return "audio"
    if mime_type.startswith("video/"):
        return "video"
    return "custom"


def type_allowed(config: AppConfig, mime_type: str, extension: str) -> bool:
    allowed = config.file_upload.allowed_types
    return "custom" in allowed or file_category(mime_type, extension) in allowed


class _Receiver:
    """Handles the body's events for :func:`receive_upload`."""

    def __init__(self, directory: Path, max_bytes: int, config: AppConfig) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.config = config
        self.got = Received()
        self.sink: anyio.AsyncFile[bytes] | None = None
        self.field_name: str | None = None
        self.field_data = bytearray()

    async def start(self, part: PartStart) -> None:
        self.field_name = None
        if part.filename is None:
            if part.name is not None:
                self.field_name = part.name
                self.field_data.clear()
            return
        got = self.got
        got.files += 1
        if got.files > 1:
            raise too_many_files()
        if part.name != "file":
            return  # another file field: counted, dropped
        got.filename = part.filename
        ext = extension_of(display_name(part.filename))
        got.mime_type = effective_mime_type(part.content_type, ext)
        if not type_allowed(self.config, got.mime_type, ext):
            raise unsupported_file_type()
        await anyio.Path(self.directory).mkdir(parents=True, exist_ok=True)
        got.temp_path = self.directory / f".{uuid.uuid4().hex}.part"
        self.sink = await anyio.open_file(got.temp_path, "wb")

    async def data(self, chunk: bytes) -> None:
        if self.sink is not None:
            self.got.size += len(chunk)
            if self.got.size > self.max_bytes:
                raise file_too_large(self.max_bytes)
            await self.sink.write(chunk)
        elif self.field_name is not None:
            self.field_data += chunk
            if len(self.field_data) > MAX_FIELD_BYTES:
                raise invalid_param(f"{self.field_name} is too long")

    async def end(self) -> None:
        await self.close()
        if self.field_name is not None and self.field_name not in self.got.fields:
            self.got.fields[self.field_name] = self.field_data.decode("utf-8", "replace")
        self.field_name = None

    async def close(self) -> None:
        if self.sink is not None:
            sink, self.sink = self.sink, None
            await sink.aclose()


async def receive_upload(
    chunks: AsyncIterator[bytes],
    boundary: bytes,
    *,
    directory: Path,
    max_bytes: int,
    config: AppConfig,
) -> Received:
    """Read the whole body: the ``file`` part goes to a temporary file in ``directory`` (removed again
    on any error), plain fields are kept. Raises :class:`ApiError` for a file that is too large, of a
    type the app does not take, or not alone."""
    receiver = _Receiver(directory, max_bytes, config)
    try:
        async with aclosing(multipart_events(chunks, boundary)) as events:
            async for event in events:
                if isinstance(event, PartStart):
                    await receiver.start(event)
                elif isinstance(event, bytes):
                    await receiver.data(event)
                else:
                    await receiver.end()
    except BaseException:
        await receiver.close()
        await _remove(receiver.got.temp_path)
        raise
    return receiver.got


async def _remove(path: Path | None) -> None:
    if path is not None:
        await anyio.Path(path).unlink(missing_ok=True)


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what is left of the body (up to a bound), so that the client gets our answer rather than a
    connection reset while it is still sending."""
    read = 0
    async for chunk in chunks:
        read += len(chunk)
        if read > DRAIN_LIMIT:
            return


def upload_settings(state: ServerState) -> tuple[Path, int]:
    """The upload directory and size limit: the server state's ``upload_dir`` / ``upload_max_bytes``
    when set, else ``./loopwright-files/uploads`` and 15 MB."""
    directory = getattr(state, "upload_dir", None)
    max_bytes = getattr(state, "upload_max_bytes", None)
    return (
        Path(directory) if directory is not None else DEFAULT_UPLOAD_DIR,
        int(max_bytes) if max_bytes is not None else DEFAULT_MAX_BYTES,
    )


def upload_body(row: UploadFile, created_by: str) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "size": row.size,
        "extension": row.extension,
        "mime_type": row.mime_type,
        "created_by": created_by,
        "created_at": unix_seconds(row.created_at),
    }


@router.post("/v1/files/upload", status_code=201, response_model=None)
async def upload_file(
    request: Request,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[ServerState, Depends(get_state)],
) -> JSONResponse:
    directory, max_bytes = upload_settings(state)
    chunks = request.stream().__aiter__()
    try:
        boundary = form_boundary(request.headers.get("content-type"))
        if boundary is None:
            raise no_file_uploaded()
        async with state.db.transaction() as session:
            row = await repo.latest_config(session, app.id)
        if row is None:
            raise ApiError(400, "app_unavailable", "App unavailable, please check your app configurations.")
        try:
            got = await receive_upload(
                chunks,
                boundary,
                directory=directory,
                max_bytes=max_bytes,
                config=AppConfig.model_validate(row.config),
            )
        except MalformedBodyError as exc:
            raise invalid_param(f"malformed multipart body: {exc}") from None
    except ApiError:
        await _drain(chunks)
        raise
    try:
        return await _record(state, app, got, directory)
    finally:
        await _remove(got.temp_path)  # gone already when it was stored


async def _record(state: ServerState, app: AuthedApp, got: Received, directory: Path) -> JSONResponse:
    """Check the fields, move the file to its key and record the row."""
    user = require_user(got.fields.get("user"))
    if got.temp_path is None or got.filename is None:
        raise no_file_uploaded()
    name = display_name(got.filename)
    if not name:
        raise ApiError(400, "filename_not_exists_error", "The specified filename does not exist.")
    extension = extension_of(name)
    file_id = str(uuid.uuid4())
    storage_key = f"{app.id}/{file_id}"
    target = directory / storage_key
    await anyio.Path(target.parent).mkdir(parents=True, exist_ok=True)
    await anyio.Path(got.temp_path).rename(target)
    try:
        async with state.db.transaction() as session:
            end_user = await repo.get_or_create_end_user(session, app.id, user)
            row = UploadFile(
                id=file_id,
                app_id=app.id,
                end_user_id=end_user.id,
                name=name,
                size=got.size,
                extension=extension if len(extension) <= 32 else "",
                mime_type=got.mime_type[:255],
                storage_key=storage_key,
            )
            session.add(row)
            await session.flush()
            body = upload_body(row, end_user.id)
    except BaseException:
        await _remove(target)
        raise
    return JSONResponse(body, status_code=201)
