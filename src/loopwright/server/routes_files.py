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
from collections.abc import AsyncIterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO
from urllib.parse import unquote

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from python_multipart import MultipartParser
from python_multipart.exceptions import FormParserError, MultipartParseError
from python_multipart.multipart import parse_options_header

from loopwright.app.config import AppConfig
from loopwright.app.wire import file_type
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.errors import ApiError, invalid_param
from loopwright.server.state import ServerState, get_state, require_user
from loopwright.store import repositories as repo
from loopwright.store.models import UploadFile, unix_seconds

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

router = APIRouter()

DEFAULT_UPLOAD_DIR = Path("loopwright-files") / "uploads"
DEFAULT_MAX_BYTES = 15 * 1024 * 1024  # Dify's file_size_limit (15 MB)

MAX_HEADER_BYTES = 16 * 1024  # one header line of a part
MAX_FIELD_BYTES = 64 * 1024  # a non-file field (``user``…)
MAX_PARTS = 64
DRAIN_LIMIT = 64 * 1024 * 1024  # read (and drop) at most this much after an error, so the client sees it
MAX_NAME_CHARS = 200  # as Dify: longer names are cut, keeping the extension

GENERIC_MIME_TYPES = frozenset({"", "application/octet-stream"})


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


# --- multipart ------------------------------------------------------------------------------------

# RFC 5987 ``filename*=charset'lang'percent-encoded``
_EXTENDED_FILENAME = re.compile(r";\s*filename\*\s*=\s*\"?([^';\s]*)'[^';]*'([^;\s\"]*)", re.IGNORECASE)


def part_names(disposition: bytes) -> tuple[str | None, str | None]:
    """The field name and filename (None for a plain field) of a part's ``Content-Disposition``.

    python-multipart ignores ``filename*=`` (RFC 7578 forbids it), but werkzeug, and so Dify, lets it win
    over ``filename``, and some clients (.NET) give a non-ASCII name legibly only there."""
    _, params = parse_options_header(disposition)
    name, filename = (
        v.decode("utf-8", "replace") if v is not None else None
        for v in (params.get(b"name"), params.get(b"filename"))
    )
    if m := _EXTENDED_FILENAME.search(disposition.decode("latin-1")):
        with suppress(LookupError, UnicodeDecodeError):
            filename = unquote(m[2], encoding=m[1] or "utf-8", errors="strict")
    return name, filename


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


def type_allowed(config: AppConfig, mime_type: str, extension: str) -> bool:
    allowed = config.file_upload.allowed_types
    return "custom" in allowed or file_type(mime_type, extension) in allowed


class _Receiver:
    """python-multipart's callbacks for one body. They run in a worker thread (see
    :func:`receive_upload`), so they write the file directly; an error raised here ends the parse."""

    def __init__(self, directory: Path, max_bytes: int, config: AppConfig) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.config = config
        self.got = Received()
        self.sink: BinaryIO | None = None
        self.field_name: str | None = None
        self.field_data = bytearray()
        self.parts = 0
        self.finished = False
        self.headers: dict[bytes, bytes] = {}
        self.header = (bytearray(), bytearray())  # the current header's name and value, in pieces

    def callbacks(self) -> MultipartCallbacks:
        name, value = self.header
        return {
            "on_header_field": lambda data, start, end: name.extend(data[start:end]),
            "on_header_value": lambda data, start, end: value.extend(data[start:end]),
            "on_header_end": self.header_end,
            "on_headers_finished": self.start,
            "on_part_data": self.data,
            "on_part_end": self.end,
            "on_end": self.finish,
        }

    def header_end(self) -> None:
        name, value = self.header
        self.headers[bytes(name).lower()] = bytes(value)
        name.clear()
        value.clear()

    def start(self) -> None:
        headers, self.headers = self.headers, {}
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise MultipartParseError("too many parts")
        name, filename = part_names(headers.get(b"content-disposition", b""))
        if filename is None:
            self.field_name = name
            self.field_data.clear()
            return
        got = self.got
        got.files += 1
        if got.files > 1:
            raise too_many_files()
        if name != "file":
            return  # another file field: counted, dropped
        got.filename = filename
        ext = extension_of(display_name(filename))
        content_type = parse_options_header(headers.get(b"content-type"))[0].decode("latin-1")
        got.mime_type = effective_mime_type(content_type, ext)
        if not type_allowed(self.config, got.mime_type, ext):
            raise unsupported_file_type()
        self.directory.mkdir(parents=True, exist_ok=True)
        got.temp_path = self.directory / f".{uuid.uuid4().hex}.part"
        self.sink = got.temp_path.open("wb")

    def data(self, data: bytes, start: int, end: int) -> None:
        if self.sink is not None:
            self.got.size += end - start
            if self.got.size > self.max_bytes:
                raise file_too_large(self.max_bytes)
            self.sink.write(data[start:end])
        elif self.field_name is not None:
            self.field_data += data[start:end]
            if len(self.field_data) > MAX_FIELD_BYTES:
                raise invalid_param(f"{self.field_name} is too long")

    def end(self) -> None:
        self.close()
        if self.field_name is not None and self.field_name not in self.got.fields:
            self.got.fields[self.field_name] = self.field_data.decode("utf-8", "replace")
        self.field_name = None

    def finish(self) -> None:
        self.finished = True

    def close(self) -> None:
        if self.sink is not None:
            sink, self.sink = self.sink, None
            sink.close()

    def discard(self) -> None:
        self.close()
        if self.got.temp_path is not None:
            self.got.temp_path.unlink(missing_ok=True)


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
    type the app does not take, or not alone, and ``FormParserError`` for a broken body."""
    receiver = _Receiver(directory, max_bytes, config)
    parser = MultipartParser(boundary, receiver.callbacks(), max_header_size=MAX_HEADER_BYTES)
    try:
        async for chunk in chunks:
            # not cancellable: a cancelled request waits for the chunk in hand before cleaning up
            await anyio.to_thread.run_sync(parser.write, chunk)
        if not receiver.finished:
            raise MultipartParseError("the body ended before the closing boundary")
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(receiver.discard)
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
        media_type, params = parse_options_header(request.headers.get("content-type"))
        boundary = params.get(b"boundary")
        if media_type != b"multipart/form-data" or not boundary:
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
        except FormParserError as exc:
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
