"""``GET /files/{id}/file-preview`` and ``/files/{id}/image-preview``: an end user's upload behind the
signed URL the message history gives it, as Dify's file and image preview routes; and
``GET /v1/files/{id}/preview``, the same bytes with the app's key, for an upload sent with one of
the app's messages (Dify's ``file_not_found`` 404 / ``file_access_denied`` 403 otherwise).

No API key: the signature is the permission (a browser shows an uploaded image from a history item's
``url``). A bad, expired or foreign signature gets Dify's 404 "File not found or signature is invalid";
the signature is checked before any lookup, so an unsigned request cannot probe which ids exist. The
image route serves images only (415 otherwise); active content is always downloaded.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse

from loopwright.app.files.uploads import (
    UploadAccessDeniedError,
    UploadedFile,
    UploadNotFoundError,
    find_upload,
    message_upload,
    preview_url_valid,
)
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.errors import ApiError, not_found
from loopwright.server.routes_tool_files import ACTIVE_TYPES, disposition_header
from loopwright.server.state import get_state

router = APIRouter()

CHUNK = 64 * 1024


def invalid() -> ApiError:
    return not_found("File not found or signature is invalid")


async def _read(handle: anyio.AsyncFile[bytes]) -> AsyncIterator[bytes]:
    async with handle:
        while chunk := await handle.read(CHUNK):
            yield chunk


async def serve_upload(
    state: AppRuntime, file_id: str, kind: str, signed: tuple[str, str, str], as_attachment: bool
) -> StreamingResponse:
    """The upload ``file_id`` if ``signed`` (timestamp, nonce, sign) is a valid ``kind`` signature."""
    try:
        canonical = str(uuid.UUID(file_id)) == file_id
    except ValueError:
        canonical = False
    if not canonical or not preview_url_valid(await state.files(), file_id, kind, *signed):
        raise invalid()
    row = await find_upload(state.db, state.upload_limits().directory, file_id)
    if row is None:
        raise invalid()
    if kind == "image-preview" and not row.mime_type.startswith("image/"):
        raise ApiError(415, "unsupported_file_type", "File type not allowed.")
    return await stream_upload(row, as_attachment, invalid())


async def stream_upload(row: UploadedFile, as_attachment: bool, missing: ApiError) -> StreamingResponse:
    """The upload's bytes with its type and length; ``missing`` when they are gone from disk."""
    try:
        handle = await anyio.open_file(row.path, "rb")
    except FileNotFoundError:
        raise missing from None
    headers = {"X-Content-Type-Options": "nosniff", "Content-Length": str(row.size), "Accept-Ranges": "bytes"}
    if as_attachment or row.mime_type in ACTIVE_TYPES:
        headers["Content-Disposition"] = disposition_header(row.name)
    return StreamingResponse(_read(handle), media_type=row.mime_type, headers=headers)


@router.get("/v1/files/{file_id}/preview", response_model=None)
async def app_file_preview(
    file_id: str,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
    as_attachment: bool = False,
) -> StreamingResponse:
    try:
        key = str(uuid.UUID(file_id))
    except ValueError:
        raise ApiError(404, "not_found", "Not Found") from None  # Dify's route takes UUIDs only
    try:
        row = await message_upload(state.db, state.upload_limits().directory, app.id, key)
    except UploadNotFoundError as exc:
        raise ApiError(404, "file_not_found", str(exc)) from None
    except UploadAccessDeniedError as exc:
        raise ApiError(403, "file_access_denied", str(exc)) from None
    return await stream_upload(
        row, as_attachment, ApiError(404, "file_not_found", "Failed to load file content")
    )


@router.get("/files/{file_id}/file-preview", response_model=None)
async def file_preview(
    file_id: str,
    state: Annotated[AppRuntime, Depends(get_state)],
    timestamp: Annotated[str, Query()] = "",
    nonce: Annotated[str, Query()] = "",
    sign: Annotated[str, Query()] = "",
    as_attachment: bool = False,
) -> StreamingResponse:
    return await serve_upload(state, file_id, "file-preview", (timestamp, nonce, sign), as_attachment)


@router.get("/files/{file_id}/image-preview", response_model=None)
async def image_preview(
    file_id: str,
    state: Annotated[AppRuntime, Depends(get_state)],
    timestamp: Annotated[str, Query()] = "",
    nonce: Annotated[str, Query()] = "",
    sign: Annotated[str, Query()] = "",
) -> StreamingResponse:
    return await serve_upload(state, file_id, "image-preview", (timestamp, nonce, sign), False)
