"""``GET /files/tools/{id}{ext}``: tool files behind signed URLs, as Dify's ``ToolFileApi``.

No API key: the signature is the permission (it is what lets a browser show an image from an SSE
``message_file`` event). A bad or expired signature gets 403; the checks run before any lookup, so an
unsigned request cannot probe which ids exist. The id must be a canonical UUID and the extension a short
alphanumeric suffix: nothing from the path reaches a file name beyond that UUID.
"""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse

from loopwright.app.run.runtime import AppRuntime
from loopwright.server.errors import ApiError, not_found
from loopwright.server.state import get_state
from loopwright.tools.files.manager import ToolFile

router = APIRouter()

_FILE_NAME = re.compile(
    r"(?P<id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?P<ext>\.[A-Za-z0-9]{1,10})?"
)
# Served from our origin these could run script, so they are always downloaded (Dify's
# enforce_download_for_html does the same for HTML).
ACTIVE_TYPES = frozenset(
    {
        "text/html",
        "application/xhtml+xml",
        "image/svg+xml",
        "text/xml",
        "application/xml",
        "text/javascript",
        "application/javascript",
    }
)


def forbidden() -> ApiError:
    return ApiError(403, "forbidden", "Invalid request.")


def file_not_found() -> ApiError:
    return not_found("file is not found")


def content_disposition(file: ToolFile, as_attachment: bool) -> str | None:
    """``attachment`` when asked or for active content; ``inline`` with the name for other non-images;
    nothing for plain images (as Dify)."""
    attachment = as_attachment or file.mime_type in ACTIVE_TYPES
    if not attachment and file.is_image:
        return None
    return disposition_header(file.name, "attachment" if attachment else "inline")


def disposition_header(name: str, kind: str = "attachment") -> str:
    """``Content-Disposition`` naming ``name``: an ASCII fallback and the UTF-8 name (RFC 6266)."""
    fallback = "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name)
    return f"{kind}; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


@router.get("/files/tools/{file_name}", response_model=None)
async def get_tool_file(
    file_name: str,
    state: Annotated[AppRuntime, Depends(get_state)],
    timestamp: Annotated[str, Query()],
    nonce: Annotated[str, Query()],
    sign: Annotated[str, Query()],
    as_attachment: bool = False,
) -> StreamingResponse:
    match = _FILE_NAME.fullmatch(file_name)
    if match is None:
        raise file_not_found()
    file_id = match.group("id")
    files = await state.files()
    if not files.verify(file_id, timestamp, nonce, sign):
        raise forbidden()
    file = await files.get(file_id)
    if file is None:
        raise file_not_found()
    try:
        chunks = await files.open(file)
    except FileNotFoundError:
        raise file_not_found() from None
    headers = {"X-Content-Type-Options": "nosniff"}
    if file.size is not None:
        headers["Content-Length"] = str(file.size)
    disposition = content_disposition(file, as_attachment)
    if disposition is not None:
        headers["Content-Disposition"] = disposition
    return StreamingResponse(chunks, media_type=file.mime_type, headers=headers)
