"""Files a plugin uploads (the SDK's ``session.file.upload``), kept as tool files.

The SDK asks the host for an upload URL (a backwards ``upload_file`` call), then POSTs the file to it
as multipart ``file`` and expects ``201`` with the file's record. The host answers with a URL on a small
HTTP endpoint of its own on 127.0.0.1 (started on the first upload), valid once and for one minute; the
file is stored through ``ToolFiles`` for the user and conversation of the call that made it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any

from loopwright.tools.base import ToolContext
from loopwright.tools.files.manager import ToolFiles

log = logging.getLogger(__name__)

MAX_UPLOAD_BYTES = 64 * 1024 * 1024
URL_TTL = 60.0
READ_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class _Slot:
    ctx: ToolContext
    filename: str
    mime_type: str
    expires: float


class UploadReceiver:
    """The loopback endpoint plugins upload to (see the module's docstring). ``files`` opens the tool
    files when the first upload arrives."""

    def __init__(self, files: Callable[[], Awaitable[ToolFiles]], max_bytes: int = MAX_UPLOAD_BYTES) -> None:
        self._files = files
        self.max_bytes = max_bytes
        self._slots: dict[str, _Slot] = {}
        self._server: asyncio.Server | None = None
        self._port = 0
        self._lock = asyncio.Lock()

    async def url_for(self, ctx: ToolContext, filename: str, mime_type: str) -> str:
        """A one-time URL for one file of the call ``ctx`` describes."""
        async with self._lock:
            if self._server is None:
                self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
                self._port = self._server.sockets[0].getsockname()[1]
        now = time.monotonic()
        self._slots = {k: s for k, s in self._slots.items() if s.expires > now}
        token = secrets.token_urlsafe(24)
        self._slots[token] = _Slot(ctx, filename, mime_type, now + URL_TTL)
        return f"http://127.0.0.1:{self._port}/upload/{token}"

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, body = await asyncio.wait_for(self._receive(reader), READ_TIMEOUT)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            status, body = 400, {"error": f"bad upload: {exc}"}
        except Exception as exc:  # the file could not be stored
            log.warning("storing a plugin's upload failed: %s", exc)
            status, body = 500, {"error": "the file could not be stored"}
        data = json.dumps(body).encode()
        reason = {201: "Created", 400: "Bad Request", 403: "Forbidden", 413: "Payload Too Large"}.get(
            status, "Error"
        )
        head = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
        )
        with contextlib.suppress(ConnectionError):
            writer.write(head.encode() + data)
            await writer.drain()
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()

    async def _receive(self, reader: asyncio.StreamReader) -> tuple[int, dict[str, Any]]:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, _, rest = lines[0].partition(" ")
        path = rest.partition(" ")[0]
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
        slot = self._slots.pop(path.removeprefix("/upload/"), None) if method == "POST" else None
        if slot is None or slot.expires < time.monotonic():
            return 403, {"error": "unknown or expired upload URL"}
        length = int(headers.get("content-length", "-1"))
        if length < 0:
            return 400, {"error": "Content-Length is required"}
        if length > self.max_bytes:
            return 413, {"error": f"a file may have at most {self.max_bytes} bytes"}
        part = _file_part(headers.get("content-type", ""), await reader.readexactly(length))
        if part is None:
            return 400, {"error": "no multipart 'file' part"}
        data = part.get_payload(decode=True)
        assert isinstance(data, bytes)
        files = await self._files()
        mime = part.get_content_type() if part.get("content-type") else slot.mime_type
        file = await files.save_bytes(
            data, mime_type=mime, filename=part.get_filename() or slot.filename, ctx=slot.ctx
        )
        kind = next(
            (k for k in ("image", "video", "audio") if file.mime_type.startswith(k + "/")), "document"
        )
        return 201, {
            "id": file.id,
            "name": file.name,
            "size": file.size,
            "extension": file.extension.lstrip("."),
            "mime_type": file.mime_type,
            "type": kind,
            "preview_url": files.url_for(file),
        }


def _file_part(content_type: str, body: bytes) -> EmailMessage | None:
    if not content_type.lower().startswith("multipart/form-data"):
        return None
    message = BytesParser(policy=policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    assert isinstance(message, EmailMessage)
    for part in message.iter_parts():
        if isinstance(part, EmailMessage) and part.get_param("name", header="content-disposition") == "file":
            return part
    return None
