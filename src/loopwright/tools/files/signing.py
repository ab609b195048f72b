"""Signed tool-file URLs, exactly as Dify signs them (reference §7.5), and the key they are signed with.

``{base}/files/tools/{id}{ext}?timestamp=…&nonce=…&sign=…`` where ``sign`` is the urlsafe base64 of
HMAC-SHA256(secret, ``file-preview|{id}|{timestamp}|{nonce}``). The extension is not signed (as in
Dify): it only helps clients guess the type; the server serves the type it stored.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import re
import secrets
import time
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

TOOL_FILES_PATH = "/files/tools"
DEFAULT_MAX_AGE = 300  # Dify's FILES_ACCESS_TIMEOUT
CLOCK_SKEW = 60  # seconds a timestamp may lie in the future (several workers, slightly different clocks)
SECRET_FILE_NAME = "secret_key"

_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_NONCE = re.compile(r"[A-Za-z0-9_-]{1,128}")


def signature(file_id: str, timestamp: str, nonce: str, secret: bytes, purpose: str = "file-preview") -> str:
    """Dify's ``sign``: urlsafe base64 (padded) of HMAC-SHA256 over ``{purpose}|id|timestamp|nonce``
    (``file-preview`` for tool files and uploads, ``image-preview`` for Dify's image URLs)."""
    message = f"{purpose}|{file_id}|{timestamp}|{nonce}".encode()
    return base64.urlsafe_b64encode(hmac.new(secret, message, hashlib.sha256).digest()).decode()


def sign_url(
    file_id: str,
    ext: str,
    *,
    secret: bytes,
    base_url: str = "",
    now: float | None = None,
    nonce: str | None = None,
) -> str:
    """A URL for the tool file ``file_id`` that :func:`verify` accepts until it expires. ``ext``
    includes its dot (``".png"``); ``base_url`` empty gives a relative URL, as Dify with no FILES_URL."""
    timestamp = str(int(time.time() if now is None else now))
    nonce = os.urandom(16).hex() if nonce is None else nonce
    sign = signature(file_id, timestamp, nonce, secret)
    # The sign goes in unquoted, as Dify writes it: '=' padding is legal in a query value.
    query = f"timestamp={timestamp}&nonce={nonce}&sign={sign}"
    return f"{base_url.rstrip('/')}{TOOL_FILES_PATH}/{file_id}{ext}?{query}"


def verify(
    file_id: str,
    timestamp: str,
    nonce: str,
    sign: str,
    *,
    secret: bytes,
    max_age: int = DEFAULT_MAX_AGE,
    now: float | None = None,
    purpose: str = "file-preview",
) -> bool:
    """Whether ``sign`` is the signature of these values and the timestamp is at most ``max_age``
    seconds old. Compared in constant time; a sign with or without its ``=`` padding is accepted."""
    if not _TIMESTAMP.fullmatch(timestamp) or not _NONCE.fullmatch(nonce):
        return False
    expected = signature(file_id, timestamp, nonce, secret, purpose).rstrip("=").encode()
    given = sign.rstrip("=").encode("utf-8", "replace")
    # Compare before looking at the age, so the time taken says nothing about the signature.
    valid = hmac.compare_digest(expected, given)
    age = int(time.time() if now is None else now) - int(timestamp)
    return valid and -CLOCK_SKEW <= age <= max_age


def is_tool_file_id(value: str) -> bool:
    """A canonical, lower-case UUID (the only ids tool files get)."""
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def tool_file_of_url(url: str) -> str | None:
    """The tool file id in one of our (signed or unsigned) URLs, ``…/files/tools/{id}{ext}?…``."""
    path = url.partition("?")[0]
    if TOOL_FILES_PATH + "/" not in path:
        return None
    file_id = path.rsplit("/", 1)[-1].split(".", 1)[0]
    return file_id if is_tool_file_id(file_id) else None


# --- the secret ------------------------------------------------------------------------------------


def load_secret(configured: str | None, data_dir: Path) -> bytes:
    """The signing key: ``configured`` (``LOOPWRIGHT_SECRET_KEY``) when set, else the key in
    ``data_dir/secret_key``, created once (random, mode 0600) so URLs stay valid across restarts.
    Blocking: call it in a thread from async code. The key itself is never logged."""
    if configured:
        return configured.encode()
    path = data_dir / SECRET_FILE_NAME
    key = _read_key(path)
    if key is None:
        key = _create_key(path)
    return key.encode()


def _read_key(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    if not text:
        raise ValueError(f"{path} is empty: delete it to have a new key made, or set LOOPWRIGHT_SECRET_KEY")
    if path.stat().st_mode & 0o077:
        log.warning("%s is readable by other users; chmod 600 it", path)
    return text


def _create_key(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(32)
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(key + "\n")
            f.flush()
            os.fsync(f.fileno())
        _publish(temp, path)
    except FileExistsError:
        winner = _read_key(path)
        if winner is None:
            raise
        return winner
    finally:
        temp.unlink(missing_ok=True)
    log.info("created a new signing key in %s", path)
    return key


def _publish(temp: Path, path: Path) -> None:
    """Move the finished key file into place without replacing one another process made meanwhile."""
    try:
        # A hard link never replaces an existing file: when two processes start at once, one key wins
        # and the other reads it.
        os.link(temp, path)
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links
        if path.exists():
            raise FileExistsError(path) from None
        os.replace(temp, path)
