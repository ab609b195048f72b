"""A plugin's tool messages as loopwright tool outputs.

Dify's ``ToolInvokeMessage`` types map one to one: text, json, link, image / image_link (a URL),
blob (base64), variable, log, file; ``blob_chunk`` pieces of one id are joined until ``end`` and then
become one blob (the SDK sends every blob that way, 8 KB at a time); ``retriever_resources`` become
the internal citations variable. A blob's ``meta`` gives its MIME type and file name.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from loopwright.tools.base import (
    RETRIEVER_RESOURCES,
    BlobMessage,
    FileMessage,
    ImageMessage,
    JsonMessage,
    LinkMessage,
    LogMessage,
    TextMessage,
    ToolInvokeError,
    ToolOutput,
    VariableMessage,
)

MAX_BLOB_BYTES = 64 * 1024 * 1024
_LOG_STATUS = {"start": "start", "success": "success", "error": "error"}


class MessageDecoder:
    """Turns the messages of one session into outputs; keeps the blob chunks in flight."""

    def __init__(self, max_blob_bytes: int = MAX_BLOB_BYTES) -> None:
        self.max_blob_bytes = max_blob_bytes
        self._chunks: dict[str, list[bytes]] = {}
        self._sizes: dict[str, int] = {}

    def feed(self, message: Mapping[str, Any]) -> ToolOutput | None:
        """The output of one message; None for a message that is not one yet (a blob chunk) or that
        has nothing for the host. A malformed message raises :class:`ToolInvokeError`."""
        kind = message.get("type")
        body = message.get("message")
        body = body if isinstance(body, Mapping) else {}
        meta = message.get("meta")
        meta = meta if isinstance(meta, Mapping) else {}
        if kind == "blob_chunk":
            return self._chunk(body, meta)
        if kind == "blob":
            return _blob(_b64(body.get("blob")), meta)
        return _simple(str(kind), body, meta)

    def _chunk(self, body: Mapping[str, Any], meta: Mapping[str, Any]) -> ToolOutput | None:
        blob_id = str(body.get("id", ""))
        data = _b64(body.get("blob"))
        size = self._sizes.get(blob_id, 0) + len(data)
        if size > self.max_blob_bytes:
            self._chunks.pop(blob_id, None)
            raise ToolInvokeError(f"the plugin sent a file over {self.max_blob_bytes} bytes")
        self._sizes[blob_id] = size
        self._chunks.setdefault(blob_id, []).append(data)
        if not body.get("end"):
            return None
        self._sizes.pop(blob_id, None)
        return _blob(b"".join(self._chunks.pop(blob_id)), meta)


def _simple(kind: str, body: Mapping[str, Any], meta: Mapping[str, Any]) -> ToolOutput | None:
    text = body.get("text")
    if kind == "text":
        return TextMessage(str(text or ""))
    if kind == "json":
        data = body.get("json_object", body.get("json"))
        return JsonMessage(data, suppress_output=bool(body.get("suppress_output", False)))
    if kind == "link":
        return LinkMessage(str(text or ""))
    if kind in ("image", "image_link"):
        return ImageMessage(str(text or ""), _text(meta.get("mime_type")))
    if kind == "file":
        url = body.get("url") or text or meta.get("url")
        if not url:
            return None
        return FileMessage(
            str(url), _text(meta.get("mime_type")) or "application/octet-stream", _filename(meta)
        )
    if kind == "variable":
        name = str(body.get("variable_name", ""))
        return VariableMessage(name, body.get("variable_value"), stream=bool(body.get("stream", False)))
    if kind == "log":
        status = _LOG_STATUS.get(str(body.get("status", "success")), "success")
        data = body.get("data")
        return LogMessage(
            str(body.get("label", "")),
            status,  # type: ignore[arg-type]  # one of the three, by the table
            data if isinstance(data, Mapping) else {},
        )
    if kind == "retriever_resources":
        return VariableMessage(RETRIEVER_RESOURCES, body.get("retriever_resources") or [], internal=True)
    return None


def _blob(data: bytes, meta: Mapping[str, Any]) -> BlobMessage:
    mime = _text(meta.get("mime_type")) or "application/octet-stream"
    return BlobMessage(data, mime, _filename(meta))


def _b64(value: Any) -> bytes:
    if not value:
        return b""
    try:
        return base64.b64decode(str(value), validate=False)
    except (binascii.Error, ValueError):
        raise ToolInvokeError("the plugin sent a file that is not valid base64") from None


def _filename(meta: Mapping[str, Any]) -> str | None:
    name = meta.get("filename") or meta.get("file_name")
    return str(name) if name else None


def _text(value: Any) -> str | None:
    return str(value) if value else None
