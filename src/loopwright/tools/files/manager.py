"""Tool files: the images, blobs and files tools produce, stored, described and given signed URLs.

Each file is two objects in a :class:`~loopwright.tools.files.storage.FileStorage`: its bytes and a small
JSON sidecar with its record (:class:`ToolFile`). The record lives beside the bytes rather than in a
database table so that the store works the same for the library (no database at all), for the server and
for object storage later; serving a file is then one metadata read and one stream, with no database on
the path. The sidecar is written after the bytes, so a record always has its bytes.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import json
import logging
import mimetypes
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Protocol
from urllib.parse import unquote, unquote_to_bytes, urlsplit

import loopwright.tools.files.signing as signing  # the module, not the package that re-exports this one
from loopwright._threads import run_sync
from loopwright.errors import ToolError
from loopwright.paths import files_dir
from loopwright.tools.base import (
    FILE_OUTPUTS,
    BlobMessage,
    FileMessage,
    ImageMessage,
    TextMessage,
    ToolContext,
    ToolOutput,
)
from loopwright.tools.files.storage import FileStorage, LocalFileStorage

if TYPE_CHECKING:
    from pydantic import SecretStr

log = logging.getLogger(__name__)

TOOL_FILES_DIR = "tool-files"
GENERIC_MIME = "application/octet-stream"
MAX_NAME_CHARS = 200

# Fixed answers for common types: mimetypes' guesses depend on the machine's /etc/mime.types.
KNOWN_EXTENSIONS = {
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/svg+xml": ".svg",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/csv": ".csv",
    "text/html": ".html",
    "application/json": ".json",
    "application/pdf": ".pdf",
    "application/zip": ".zip",
    "audio/mpeg": ".mp3",
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
    "video/mp4": ".mp4",
    GENERIC_MIME: ".bin",
}

_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,10}")  # Dify: missing or longer than 10 characters → .bin
_MIME = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,127}")
_OWN_PATH = re.compile(
    re.escape(signing.TOOL_FILES_PATH) + r"/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
    r"(?:\.[A-Za-z0-9]{1,10})?$"
)


class ToolFileError(ToolError, ValueError):
    """A file output that cannot be stored (a broken ``data:`` URL, a scheme we do not take)."""


@dataclass(frozen=True, slots=True)
class ToolFile:
    """One tool file. ``extension`` includes its dot. A file left at a remote address (an http(s) URL
    a tool returned) has ``remote_url`` set and ``size`` None: it is not stored and has no sidecar."""

    id: str
    mime_type: str
    size: int | None
    extension: str
    filename: str | None
    created_at: int
    user_id: str = ""
    conversation_id: str | None = None
    app_id: str | None = None
    message_id: str | None = None
    remote_url: str | None = None

    @property
    def name(self) -> str:
        """The name to show and download under: the tool's filename, else ``{id}{extension}``."""
        return self.filename or f"{self.id}{self.extension}"

    @property
    def is_image(self) -> bool:
        return self.mime_type.startswith("image/")

    def to_json(self) -> bytes:
        return json.dumps({"version": 1, **dataclasses.asdict(self)}, ensure_ascii=False).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> ToolFile:
        data = json.loads(raw)
        data.pop("version", None)
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True, slots=True)
class StoredFile:
    """What :meth:`ToolFiles.store_outputs` made of one file output. ``file`` is None when it could not
    be stored; ``observation`` then says why."""

    output: ToolOutput
    file: ToolFile | None
    url: str
    observation: str


# --- names, types, extensions ----------------------------------------------------------------------


def clean_mime_type(value: str | None) -> str | None:
    """``type/subtype`` in lower case without parameters, or None when it is not one."""
    if not value:
        return None
    mime = value.split(";", 1)[0].strip().lower()
    return mime if _MIME.fullmatch(mime) else None


def clean_filename(value: str | None) -> str | None:
    """The last path segment, printable characters only, at most 200 characters (keeping the
    extension); None when nothing is left."""
    if not value:
        return None
    name = re.split(r"[\\/]", value)[-1]
    name = "".join(ch for ch in name if ch.isprintable()).strip()
    if name in ("", ".", ".."):
        return None
    if len(name) > MAX_NAME_CHARS:
        suffix = PurePosixPath(name).suffix
        keep = suffix if _EXTENSION.fullmatch(suffix) else ""
        name = name[: MAX_NAME_CHARS - len(keep)] + keep
    return name


def extension_for(mime_type: str, filename: str | None = None) -> str:
    """The file's extension with its dot: the filename's when it has a usable one, else the type's,
    else ``.bin``."""
    if filename:
        suffix = PurePosixPath(filename).suffix.lower()
        if _EXTENSION.fullmatch(suffix):
            return suffix
    ext = KNOWN_EXTENSIONS.get(mime_type) or mimetypes.guess_extension(mime_type, strict=False) or ".bin"
    return ext if _EXTENSION.fullmatch(ext) else ".bin"


def mime_type_for(declared: str | None, filename: str | None, default: str = GENERIC_MIME) -> str:
    """The declared type when it says something; else a guess from the filename; else ``default``."""
    mime = clean_mime_type(declared)
    if mime is not None and mime != GENERIC_MIME:
        return mime
    if filename:
        guessed = clean_mime_type(mimetypes.guess_type(filename, strict=False)[0])
        if guessed is not None:
            return guessed
    return mime or default


def decode_data_url(url: str) -> tuple[str, bytes]:
    """``(mime type, bytes)`` of a ``data:`` URL (RFC 2397; base64 with or without padding, standard or
    urlsafe alphabet). Raises :class:`ToolFileError` when it does not decode."""
    if url[:5].lower() != "data:":
        raise ToolFileError("not a data: URL")
    head, comma, payload = url[5:].partition(",")
    if not comma:
        raise ToolFileError("a data: URL needs a ',' before its data")
    params = [p.strip().lower() for p in head.split(";")]
    mime = clean_mime_type(params[0]) or "text/plain"
    if "base64" not in params[1:]:
        return mime, unquote_to_bytes(payload)
    text = re.sub(r"\s+", "", unquote(payload))
    text += "=" * (-len(text) % 4)
    altchars = b"-_" if ("-" in text or "_" in text) else None
    try:
        return mime, base64.b64decode(text, altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        raise ToolFileError("the data: URL's base64 data does not decode") from None


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def observation_for(file: ToolFile, url: str) -> str:
    """What the model is told about a file a tool made: its name, type, size and URL."""
    kind = "image" if file.is_image else "file"
    size = f", {human_size(file.size)}" if file.size is not None else ""
    return (
        f'The {kind} "{file.name}" ({file.mime_type}{size}) has been created and sent to the user; '
        f"you do not need to create it again, just tell the user to check it. URL: {url}"
    )


def with_file_observations(outputs: Sequence[ToolOutput], stored: Sequence[StoredFile]) -> list[ToolOutput]:
    """``outputs`` with each file output replaced by a text message of its observation (in order), so
    the engine's usual rendering tells the model about the files. ``stored`` is what
    :meth:`ToolFiles.store_outputs` returned for the same outputs. Each observation ends with a newline:
    Dify joins observation parts with nothing, which would glue the next text to the URL."""
    by_position = iter(stored)
    result: list[ToolOutput] = []
    for output in outputs:
        if isinstance(output, FILE_OUTPUTS):
            item = next(by_position, None)
            if item is None or item.output is not output:
                raise ValueError("stored files do not match the outputs (use store_outputs on the same list)")
            # On a line of its own: Dify joins observation parts with nothing.
            after_text = (
                bool(result) and isinstance(result[-1], TextMessage) and not result[-1].text.endswith("\n")
            )
            result.append(TextMessage(("\n" if after_text else "") + item.observation + "\n"))
        else:
            result.append(output)
    return result


def _keys(file_id: str) -> tuple[str, str]:
    """Storage keys of a file's bytes and sidecar; two characters of fan-out keep directories small."""
    return f"{file_id[:2]}/{file_id}", f"{file_id[:2]}/{file_id}.json"


# --- the manager -----------------------------------------------------------------------------------


class FileSettings(Protocol):
    """What tool files read from the configuration (``loopwright.config.Settings`` has it)."""

    @property
    def secret_key(self) -> SecretStr | None: ...
    @property
    def files_url(self) -> str: ...
    @property
    def files_url_ttl(self) -> int: ...


@dataclass(frozen=True)
class ToolFiles:
    """Stores tool files in ``storage`` and signs their URLs with ``secret``; a URL is valid for
    ``ttl`` seconds. ``base_url`` prefixes the URLs (empty: relative, ``/files/tools/…``). ``clock``
    (seconds since the epoch) is what links are signed and checked against; tests move it."""

    storage: FileStorage
    secret: bytes = field(repr=False)
    base_url: str = ""
    ttl: int = signing.DEFAULT_MAX_AGE
    clock: Callable[[], float] = field(default=time.time, repr=False, compare=False)

    @classmethod
    def from_settings(cls, settings: FileSettings, data_dir: Path | None = None) -> ToolFiles:
        """Local storage in ``data_dir/tool-files`` (default ``files/`` in the data directory, see
        :mod:`loopwright.paths`); the settings' ``secret_key``, else the key kept in ``data_dir``.
        Blocking (it may create the key file): async code uses :func:`load_tool_files`."""
        directory = files_dir() if data_dir is None else data_dir
        key = settings.secret_key.get_secret_value() if settings.secret_key else None
        return cls(
            storage=LocalFileStorage(directory / TOOL_FILES_DIR),
            secret=signing.load_secret(key, directory),
            base_url=settings.files_url.rstrip("/"),
            ttl=settings.files_url_ttl,
        )

    # -- storing --

    async def save_bytes(
        self,
        data: bytes,
        *,
        mime_type: str | None = None,
        filename: str | None = None,
        ctx: ToolContext | None = None,
    ) -> ToolFile:
        """Store ``data`` as a new tool file (a fresh uuid4 id) and return its record."""
        name = clean_filename(filename)
        mime = mime_type_for(mime_type, name)
        file = _new_file(mime, name, len(data), ctx or ToolContext())
        blob_key, meta_key = _keys(file.id)
        await self.storage.save(blob_key, bytes(data))
        await self.storage.save(meta_key, file.to_json())
        return file

    async def save_output(
        self, output: ImageMessage | BlobMessage | FileMessage, ctx: ToolContext
    ) -> ToolFile:
        """The tool file of one output. Blobs and ``data:`` URLs are stored; a URL of one of our own tool
        files gives that file; an http(s) URL is **not fetched** (that would let a tool make the server
        download anything) and stays a link (``remote_url``). Other schemes raise :class:`ToolFileError`."""
        if isinstance(output, BlobMessage):
            return await self.save_bytes(
                output.data, mime_type=output.mime_type, filename=output.filename, ctx=ctx
            )
        is_image = isinstance(output, ImageMessage)
        filename = None if isinstance(output, ImageMessage) else output.filename
        url = output.url.strip()
        if url[:5].lower() == "data:":
            data_mime, data = decode_data_url(url)
            declared = clean_mime_type(output.mime_type)
            mime = declared if declared not in (None, GENERIC_MIME) else data_mime
            return await self.save_bytes(data, mime_type=mime, filename=filename, ctx=ctx)
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("", "http", "https") or (not scheme and not url.startswith("/")):
            raise ToolFileError(
                f"unsupported file URL (only http, https and data URLs are taken): {url[:80]}"
            )
        own = _OWN_PATH.search(parts.path)
        if own is not None:
            existing = await self.get(own.group(1))
            if existing is not None:
                return existing
        if not scheme:
            raise ToolFileError(f"no such tool file: {url[:80]}")
        return _remote(url, output.mime_type, filename, "image/png" if is_image else GENERIC_MIME, ctx)

    async def store_outputs(self, outputs: Sequence[ToolOutput], ctx: ToolContext) -> list[StoredFile]:
        """Every file output of a tool call (images, blobs, files; other outputs are skipped), in order,
        stored concurrently, each with its URL and observation. Never raises for a bad output: its
        ``StoredFile`` has ``file=None`` and an observation saying what went wrong."""
        files = [o for o in outputs if isinstance(o, FILE_OUTPUTS)]
        return list(await asyncio.gather(*(self._store_one(o, ctx) for o in files)))

    async def _store_one(
        self, output: ImageMessage | BlobMessage | FileMessage, ctx: ToolContext
    ) -> StoredFile:
        try:
            file = await self.save_output(output, ctx)
        except ToolFileError as exc:
            return StoredFile(output, None, "", f"failed to store the tool's file: {exc}")
        except OSError as exc:
            log.exception("storing a tool file failed")
            return StoredFile(
                output, None, "", f"failed to store the tool's file: {exc.strerror or 'I/O error'}"
            )
        url = self.url_for(file)
        return StoredFile(output, file, url, observation_for(file, url))

    # -- reading --

    async def get(self, file_id: str) -> ToolFile | None:
        """The record of a stored file, or None (also for ids that are not tool-file ids)."""
        if not signing.is_tool_file_id(file_id):
            return None
        try:
            raw = await self.storage.read(_keys(file_id)[1])
        except FileNotFoundError:
            return None
        try:
            return ToolFile.from_json(raw)
        except (ValueError, TypeError):
            log.warning("tool file %s has an unreadable record", file_id)
            return None

    async def open(self, file: ToolFile) -> AsyncIterator[bytes]:
        """The stored bytes of ``file`` in chunks (``FileNotFoundError`` when they are gone)."""
        return await self.storage.open(_keys(file.id)[0])

    async def read(self, file: ToolFile) -> bytes:
        return await self.storage.read(_keys(file.id)[0])

    async def delete(self, file_id: str) -> bool:
        """Remove a stored file; False when there was none. The record goes first, so a half-deleted
        file is never served."""
        if not signing.is_tool_file_id(file_id):
            return False
        blob_key, meta_key = _keys(file_id)
        found = await self.storage.delete(meta_key)
        return await self.storage.delete(blob_key) or found

    # -- URLs --

    def url_for(self, file: ToolFile, *, base_url: str | None = None, now: float | None = None) -> str:
        """A signed URL for a stored file (valid ``ttl`` seconds from ``now``), or the remote URL."""
        if file.remote_url is not None:
            return file.remote_url
        base = self.base_url if base_url is None else base_url
        now = self.clock() if now is None else now
        return signing.sign_url(file.id, file.extension, secret=self.secret, base_url=base, now=now)

    def verify(
        self, file_id: str, timestamp: str, nonce: str, sign: str, *, now: float | None = None
    ) -> bool:
        now = self.clock() if now is None else now
        return signing.verify(file_id, timestamp, nonce, sign, secret=self.secret, max_age=self.ttl, now=now)


async def load_tool_files(settings: FileSettings, data_dir: Path | None = None) -> ToolFiles:
    """:meth:`ToolFiles.from_settings` off the event loop."""
    return await run_sync(ToolFiles.from_settings, settings, data_dir)


def _remote(url: str, declared: str | None, filename: str | None, default: str, ctx: ToolContext) -> ToolFile:
    """The record of a file left at its http(s) address (named after the URL's last segment)."""
    name = clean_filename(filename or unquote(urlsplit(url).path.rpartition("/")[2]))
    return _new_file(mime_type_for(declared, name, default), name, None, ctx, remote_url=url)


def _new_file(
    mime: str, name: str | None, size: int | None, ctx: ToolContext, remote_url: str | None = None
) -> ToolFile:
    """A fresh record (new uuid4 id, created now) owned by the call ``ctx`` describes."""
    return ToolFile(
        id=str(uuid.uuid4()),
        mime_type=mime,
        size=size,
        extension=extension_for(mime, name),
        filename=name,
        created_at=int(time.time()),
        user_id=ctx.user_id,
        conversation_id=ctx.conversation_id,
        app_id=ctx.app_id,
        message_id=ctx.message_id,
        remote_url=remote_url,
    )
