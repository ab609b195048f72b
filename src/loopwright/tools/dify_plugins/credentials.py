"""Plugins' provider credentials, encrypted at rest.

One file per plugin (``<plugin folder>/credentials``) holding a Fernet token (AES-128-CBC with an
HMAC-SHA256, from the ``cryptography`` package) of ``{provider: {name: value}}``. The Fernet key is
derived from the server's secret (``LOOPWRIGHT_SECRET_KEY``, else the key kept in the data directory,
the one tool-file URLs are signed with), so the file alone reveals nothing. Values never appear in
logs, reprs or errors.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loopwright.errors import UserInputError

CREDENTIALS_FILE = "credentials"
_KEY_CONTEXT = b"loopwright plugin credentials v1|"


class CredentialsError(UserInputError):
    pass


def fernet_key(secret: bytes) -> bytes:
    """The Fernet key for a server secret (a one-way derivation: the key says nothing of the secret)."""
    return base64.urlsafe_b64encode(hashlib.sha256(_KEY_CONTEXT + secret).digest())


class CredentialStore:
    """Credentials of installed plugins, by plugin folder and provider name. Blocking (small files)."""

    def __init__(self, secret: bytes) -> None:
        try:
            from cryptography.fernet import Fernet
        except ImportError:
            raise CredentialsError(
                "plugin credentials need the plugins extra: pip install 'loopwright[plugins]'"
            ) from None

        self._fernet = Fernet(fernet_key(secret))

    def __repr__(self) -> str:
        return "CredentialStore(<encrypted>)"

    def read(self, folder: Path) -> dict[str, dict[str, Any]]:
        """Every provider's credentials of the plugin in ``folder`` ({} when none were set)."""
        from cryptography.fernet import InvalidToken

        path = folder / CREDENTIALS_FILE
        try:
            token = path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(self._fernet.decrypt(token))
        except InvalidToken:
            raise CredentialsError(
                f"the credentials in {path} were encrypted with another secret key; set them again"
            ) from None
        return data if isinstance(data, dict) else {}

    def get(self, folder: Path, provider: str) -> dict[str, Any]:
        return dict(self.read(folder).get(provider, {}))

    def set(self, folder: Path, provider: str, values: Mapping[str, Any], *, replace: bool = False) -> None:
        """Store ``values`` for ``provider`` (merged into what is stored unless ``replace``; a value
        of None removes that name)."""
        data = self.read(folder)
        current = {} if replace else data.get(provider, {})
        merged = {**current, **values}
        data[provider] = {k: v for k, v in merged.items() if v is not None}
        token = self._fernet.encrypt(json.dumps(data).encode())
        path = folder / CREDENTIALS_FILE
        temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(token)
        os.replace(temp, path)


def redact(text: str, credentials: Mapping[str, Any]) -> str:
    """``text`` with every credential value of four characters or more replaced by ``***`` (a
    plugin's error may quote the key it was given)."""
    for value in credentials.values():
        if isinstance(value, str) and len(value) >= 4:
            text = text.replace(value, "***")
    return text
