"""Where installed plugins live: ``<data dir>/plugins`` (the data directory of :mod:`loopwright.paths`),
with the credentials' key the one tool-file URLs are signed with (``<data dir>/files/secret_key``,
unless ``LOOPWRIGHT_SECRET_KEY`` is set)."""

from __future__ import annotations

import os
from pathlib import Path

from loopwright.paths import data_dir, files_dir

__all__ = ["ENVS_DIR_ENV", "PLUGINS_DIR_NAME", "data_dir", "envs_dir", "files_dir", "plugins_dir"]

ENVS_DIR_ENV = "LOOPWRIGHT_PLUGIN_ENVS"  # where plugins' environments are kept (default: <plugins>/envs)
PLUGINS_DIR_NAME = "plugins"


def plugins_dir(base: Path | None = None) -> Path:
    """``<data dir>/plugins`` (or ``base/plugins``)."""
    return (base if base is not None else data_dir()) / PLUGINS_DIR_NAME


def envs_dir() -> Path | None:
    """``LOOPWRIGHT_PLUGIN_ENVS`` when set: one place for the environments of several data
    directories (test runs, CI caches); None: beside the plugins."""
    configured = os.environ.get(ENVS_DIR_ENV, "").strip()
    return Path(configured).expanduser() if configured else None
