"""``POST /v1/files/upload``: Dify's Service API file upload (multipart ``file`` + ``user``).

The multipart body is parsed as it arrives and the file part is written to disk chunk by chunk, so an
upload is never held in memory; a file over the limit is abandoned as soon as it crosses it. The
received file is then kept by :func:`loopwright.app.files.uploads.store_upload` (under the upload directory as
``<app id>/<file id>``, with its row). The directory and the size limit are
:func:`loopwright.app.files.uploads.upload_limits`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from python_multipart import MultipartParser
from python_multipart.exceptions import FormParserError, MultipartParseError
from python_multipart.multipart import parse_options_header

from loopwright.app.availability import current_config
from loopwright.app.dify.stream import file_type
from loopwright.app.files.uploads import (
    StoredUpload,
    UploadLimits,
    display_name,
    effective_mime_type,
    extension_of,
    preview_url,
    store_upload,
)
from loopwright.app.run.runtime import AppRuntime
from loopwright.errors import LoopwrightError
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.errors import ApiError, invalid_param
from loopwright.server.state import get_state, user_or_default

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

router = APIRouter()

MAX_HEADER_BYTES = 16 * 1024  # one header line of a part
MAX_FIELD_BYTES = 64 * 1024  # a non-file field (``user``…)
MAX_PARTS = 64
INVALID_FILENAME_CHARACTERS = '/\\:*?"<>|'  # Dify refuses a name with any of them
DRAIN_LIMIT = 64 * 1024 * 1024  # read (and drop) at most this much after an error, so the client sees it


def no_file_uploaded() -> ApiError:
    return ApiError(400, "no_file_uploaded", "Please upload your file.")


def too_many_files() -> ApiError:
    return ApiError(400, "too_many_files", "Only one file is allowed.")


def file_too_large(limit: int) -> ApiError:
    return ApiError(413, "file_too_large", f"File size exceeded. The limit is {_megabytes(limit)}.")


def _megabytes(n: int) -> str:
    mb = n / (1024 * 1024)
    return f"{mb:g} MB" if mb >= 1 else f"{n} bytes"


# --- multipart ------------------------------------------------------------------------------------


def part_names(disposition: bytes) -> tuple[str | None, str | None]:
    """The field name and filename (None for a plain field) of a part's ``Content-Disposition``.

    python-multipart ignores ``filename*=`` (RFC 7578 forbids it), but werkzeug, and so Dify, lets it win
    over ``filename``, and some clients (.NET) give a non-ASCII name legibly only there."""
    _, params = parse_options_header(disposition)
    name, filename = (
        v.decode("utf-8", "replace") if v is not None else None
        for v in (params.get(b"name"), params.get(b"filename"))
    )
    extended = extended_filename(disposition.decode("latin-1"))
    return name, extended if extended is not None else filename


def extended_filename(disposition: str) -> str | None:
    """The RFC 5987 ``filename*=charset'lang'percent-encoded`` of a ``Content-Disposition``, decoded by
    the standard library's RFC 2231 parameter parsing; None when absent or not in its charset."""
    header = Message()
    header["Content-Disposition"] = disposition
    for key, value in header.get_params([], header="Content-Disposition"):
        if key == "filename" and isinstance(value, tuple):  # only the extended form is a tuple
            charset, _language, text = value  # text: the percent-decoded bytes, as Latin-1 characters
            try:
                return text.encode("latin-1").decode(charset or "utf-8")
            except (LookupError, UnicodeError):
                return None
    return None


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


class _Receiver:
    """python-multipart's callbacks for one body. They run in a worker thread (see
    :func:`receive_upload`), so they write the file directly; an error raised here ends the parse."""

    def __init__(self, limits: UploadLimits) -> None:
        self.directory = limits.directory
        self.limits = limits
        self.max_bytes = limits.max_bytes  # the file's own type's limit once its type is known
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
        if any(c in filename for c in INVALID_FILENAME_CHARACTERS):
            raise invalid_param("Filename contains invalid characters")  # Dify's rule and text
        got.filename = filename
        ext = extension_of(display_name(filename))
        content_type = parse_options_header(headers.get(b"content-type"))[0].decode("latin-1")
        # any type is stored, as Dify stores it: whether a message or a form field takes it is
        # decided where the file is used (app.files.uploads), so a client may upload first
        got.mime_type = effective_mime_type(content_type, ext)
        self.max_bytes = self.limits.limit_for(file_type(got.mime_type, ext))
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


async def receive_upload(chunks: AsyncIterator[bytes], boundary: bytes, *, limits: UploadLimits) -> Received:
    """Read the whole body: the ``file`` part goes to a temporary file in ``limits.directory``
    (removed again on any error), plain fields are kept. Raises :class:`ApiError` for a file that is
    larger than its type's limit, with a character Dify refuses in its name (a path's), or not
    alone, and ``FormParserError`` for a broken body."""
    receiver = _Receiver(limits)
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


def upload_body(upload: StoredUpload, app_id: str = "", source_url: str | None = None) -> dict[str, Any]:
    """Dify's ``file_fields``: the upload, its signed preview URL as ``source_url``, the app as the
    tenant; the fields of features loopwright has not (image previews of the console, conversations,
    storage keys) are null."""
    return {
        "id": upload.id,
        "name": upload.name,
        "size": upload.size,
        "extension": upload.extension,
        "mime_type": upload.mime_type,
        "created_by": upload.created_by,
        "created_at": upload.created_at,
        "preview_url": None,
        "source_url": source_url,
        "original_url": None,
        "user_id": upload.created_by,
        "tenant_id": app_id or None,
        "conversation_id": None,
        "file_key": None,
    }


@router.post("/v1/files/upload", status_code=201, response_model=None)
async def upload_file(
    request: Request,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> JSONResponse:
    limits = state.upload_limits()
    chunks = request.stream().__aiter__()
    try:
        media_type, params = parse_options_header(request.headers.get("content-type"))
        boundary = params.get(b"boundary")
        if media_type != b"multipart/form-data" or not boundary:
            raise no_file_uploaded()
        await current_config(state.lookup, app.id)  # an app with no configuration is unavailable
        try:
            got = await receive_upload(chunks, boundary, limits=limits)
        except FormParserError as exc:
            raise invalid_param(f"malformed multipart body: {exc}") from None
    except (ApiError, LoopwrightError):
        await _drain(chunks)
        raise
    try:
        return await _record(state, app, got, limits.directory)
    finally:
        await _remove(got.temp_path)  # gone already when it was stored


async def _record(state: AppRuntime, app: AuthedApp, got: Received, directory: Path) -> JSONResponse:
    """Check the fields, then keep the file."""
    user = user_or_default(got.fields.get("user"))
    if got.temp_path is None or got.filename is None:
        raise no_file_uploaded()
    name = display_name(got.filename)
    if not name:
        raise ApiError(400, "filename_not_exists_error", "The specified filename does not exist.")
    stored = await store_upload(
        state.db,
        state.lookup,
        app.id,
        user,
        got.temp_path,
        directory=directory,
        name=name,
        size=got.size,
        mime_type=got.mime_type,
    )
    source_url = preview_url(await state.files(), stored.id)
    return JSONResponse(upload_body(stored, app.id, source_url), status_code=201)
