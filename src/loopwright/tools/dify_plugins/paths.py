"""Where installed plugins live: ``<data dir>/plugins``.

The data directory is ``LOOPWRIGHT_DATA_DIR`` or, unset, the platform's user data directory
(``~/.local/share/loopwright`` on Linux). This is the one place that decides it for the plugin host, so
moving to the settings' ``data_dir`` is a change of one line.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "LOOPWRIGHT_DATA_DIR"
ENVS_DIR_ENV = "LOOPWRIGHT_PLUGIN_ENVS"  # where plugins' environments are kept (default: <plugins>/envs)
PLUGINS_DIR_NAME = "plugins"


def data_dir() -> Path:
    """The data directory (not created here)."""
    configured = os.environ.get(DATA_DIR_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    try:
        import platformdirs
    except ImportError:  # without the plugins extra: the XDG default
        return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local/share") / "loopwright"
    return Path(platformdirs.user_data_dir("loopwright", appauthor=False))


def plugins_dir(base: Path | None = None) -> Path:
    """``<data dir>/plugins`` (or ``base/plugins``)."""
    return (base if base is not None else data_dir()) / PLUGINS_DIR_NAME


def envs_dir() -> Path | None:
    """``LOOPWRIGHT_PLUGIN_ENVS`` when set: one place for the environments of several data
    directories (test runs, CI caches); None: beside the plugins."""
    configured = os.environ.get(ENVS_DIR_ENV, "").strip()
    return Path(configured).expanduser() if configured else None
