"""The DSL version of a Dify export: which versions the importer reads, and what it says about the rest.

Dify stamps every export with ``version`` (its ``CURRENT_APP_DSL_VERSION``) and ``kind: app``. The
versions of a chat-type app's ``model_config`` have kept one shape from 0.1.0 to 0.7.0 (the changes
between them are in workflow graphs, plugin ``dependencies``, and 0.7.0's ``agent`` mode with its
``agent_packages``), so every version up to the newest reads the same way here. Dify's own rule
(``services/dsl_version.py``) decides what needs a person's confirmation: a newer export than the
importer's, or an older major. Here such an export is read the same way, with a warning saying so.
An export without ``version`` is Dify's 0.1.0, as Dify reads it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from loopwright.errors import UserInputError

# Dify 1.16's ``CURRENT_APP_DSL_VERSION``: the newest DSL this importer was written against.
NEWEST_DSL_VERSION = "0.7.0"
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


class DslVersionError(UserInputError):
    """An export whose ``version`` or ``kind`` says it is not an app export this importer can read."""


def dsl_version(data: Mapping[str, Any]) -> tuple[int, int, int]:
    """The export's DSL version as numbers (0.1.0 when it has none, as Dify reads it)."""
    raw = data.get("version")
    if raw is None or raw == "":
        return (0, 1, 0)
    match = _VERSION.match(str(raw).strip()) if isinstance(raw, str | int | float) else None
    if match is None:
        raise DslVersionError(f"the export's DSL version {raw!r} is not a version (Dify writes e.g. 0.7.0)")
    major, minor, patch = match.groups()
    return (int(major), int(minor), int(patch or 0))


def version_warnings(data: Mapping[str, Any]) -> list[str]:
    """What the export's ``version`` and ``kind`` call for: a warning for a DSL newer than the newest
    known here (read as that one), :class:`DslVersionError` for a document that is not an app export."""
    kind = data.get("kind")
    if kind not in (None, "", "app"):
        raise DslVersionError(
            f"this is a Dify {kind!r} export, not an app export (kind: app): only apps import"
        )
    version = dsl_version(data)
    newest = dsl_version({"version": NEWEST_DSL_VERSION})
    if version <= newest:
        return []
    shown = ".".join(map(str, version))
    if version[0] > newest[0]:
        return [
            f"the export is DSL {shown}, a newer major version than the newest known here "
            f"({NEWEST_DSL_VERSION}): it was read as {NEWEST_DSL_VERSION}; check the app before use"
        ]
    return [
        f"the export is DSL {shown}, newer than the newest known here ({NEWEST_DSL_VERSION}): "
        f"it was read as {NEWEST_DSL_VERSION}, and parts added since may be missing"
    ]
