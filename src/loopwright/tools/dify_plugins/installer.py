"""Installed plugins on disk: install from a ``.difypkg`` (a zip) or a source folder, list, find, remove.

Layout under the plugins directory::

    <author>/<name>/code/          the plugin's files, as packaged (a ``.env`` is dropped: see below)
    <author>/<name>/plugin.json    which environment it runs in, on which Python (and, for a plugin
                                   run on an older SDK than it asks for, what was checked)
    <author>/<name>/storage/       its key-value store (backwards ``storage`` calls)
    <author>/<name>/credentials    its provider credentials, encrypted
    envs/<hash>/                   virtual environments, shared by plugins with the same requirements

A ``.env`` in a plugin's folder can switch the SDK to remote debugging, so it is never installed.
Everything here blocks (files, subprocesses): async callers run it in a thread.
"""

from __future__ import annotations

import builtins
import json
import os
import re
import shutil
import stat
import time
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

from loopwright.tools.dify_plugins.environment import (
    PluginInstallError,
    choose_interpreter,
    ensure_environment,
    env_python,
    find_uv,
    read_requirements,
)
from loopwright.tools.dify_plugins.manifest import MANIFEST_FILE, PluginManifest, read_manifest
from loopwright.tools.dify_plugins.sdk_fallback import VARIANT, SdkFallback, build_on_older_sdk, check_plugin

RECORD_FILE = "plugin.json"
CODE_DIR = "code"
ENVS_DIR = "envs"
MAX_PACKAGE_BYTES = 200 * 1024 * 1024  # unpacked size of one .difypkg
MAX_PACKAGE_FILES = 10_000  # members of one .difypkg (a plugin has tens)
# A member this large that unpacks to more than this many times its packed size is a zip bomb, not
# code or an icon (source compresses 3–10 times; a megabyte of zeros, a thousand times).
MAX_RATIO_FROM_BYTES = 1024 * 1024
MAX_COMPRESSION_RATIO = 100
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


@dataclass(frozen=True, slots=True)
class InstalledPlugin:
    manifest: PluginManifest
    folder: Path  # <plugins>/<author>/<name>
    env: Path
    python: str  # "3.11"
    sdk_fallback: SdkFallback | None = None  # set when it runs on an older dify_plugin than it asks for

    @property
    def plugin_id(self) -> str:
        return self.manifest.plugin_id

    @property
    def code(self) -> Path:
        return self.folder / CODE_DIR

    @property
    def python_executable(self) -> Path:
        return env_python(self.env)


class PluginStore:
    """The plugins installed under ``root``; ``envs_dir`` (default ``root/envs``) is where their
    environments are kept — point several stores (or test runs) at one to share them."""

    def __init__(self, root: Path, envs_dir: Path | None = None) -> None:
        self.root = Path(root).absolute()
        self.envs_dir = Path(envs_dir).absolute() if envs_dir is not None else self.root / ENVS_DIR

    def install(self, source: Path, *, sdk_fallback: bool = True) -> InstalledPlugin:
        """Install (or replace) the plugin in ``source``: a ``.difypkg`` file or a folder with a
        ``manifest.yaml``. Its environment is built before the old version is replaced, so a failed
        install leaves the installed one working. ``sdk_fallback``: a plugin asking for a
        ``dify_plugin`` this Python cannot run may run on the newest one it can, when its code is
        checked to allow it (``sdk_fallback.py``); False refuses it."""
        source = Path(source)
        self.root.mkdir(parents=True, exist_ok=True)
        staging = self.root / f".staging-{uuid.uuid4().hex}"
        try:
            if source.is_dir():
                if not (source / MANIFEST_FILE).is_file():
                    raise PluginInstallError(f"{source} has no {MANIFEST_FILE}: not a Dify plugin folder")
                shutil.copytree(
                    source, staging, ignore=shutil.ignore_patterns(".env", "__pycache__", ".venv")
                )
            elif source.is_file():
                _unpack(source, staging)
            else:
                raise PluginInstallError(f"no such plugin file or folder: {source}")
            (staging / ".env").unlink(missing_ok=True)
            manifest = read_manifest(staging)
            _check_name(manifest)
            requirements = read_requirements(staging)
            uv = find_uv()
            python, fallback = choose_interpreter(
                requirements, manifest.plugin_id, uv, sdk_fallback=sdk_fallback
            )
            if not fallback:
                env = ensure_environment(requirements, python, self.envs_dir)
                return self._place(manifest, staging, env, python.label, None)
            env = ensure_environment(
                requirements,
                python,
                self.envs_dir,
                variant=VARIANT,
                build=lambda target: build_on_older_sdk(target, requirements, python, uv),
            )
            checked = check_plugin(manifest, staging, env, python)
            return self._place(manifest, staging, env, python.label, checked)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _place(
        self, manifest: PluginManifest, staging: Path, env: Path, python: str, checked: SdkFallback | None
    ) -> InstalledPlugin:
        folder = self.root / manifest.author / manifest.name
        folder.mkdir(parents=True, exist_ok=True)
        code = folder / CODE_DIR
        old = folder / f".old-{uuid.uuid4().hex}"
        if code.exists():
            code.rename(old)
        staging.rename(code)
        shutil.rmtree(old, ignore_errors=True)
        record: dict[str, object] = {
            "env": str(env),
            "python": python,
            "version": manifest.version,
            "installed_at": int(time.time()),
        }
        if checked is not None:
            record["sdk_fallback"] = checked.to_json()
        _write_json(folder / RECORD_FILE, record)
        return InstalledPlugin(read_manifest(code), folder, env, python, checked)

    def get(self, plugin_id: str) -> InstalledPlugin | None:
        """The installed plugin ``author/name`` (or ``author/name/provider``, or a bare unique
        ``name``), or None."""
        folder = self._folder(plugin_id)
        return self._load(folder) if folder is not None else None

    def has(self, plugin_id: str) -> bool:
        """Whether a plugin of this id is installed (its install record is there; nothing is read)."""
        return self._folder(plugin_id) is not None

    def require(self, plugin_id: str) -> InstalledPlugin:
        plugin = self.get(plugin_id)
        if plugin is None:
            raise PluginInstallError(
                f"plugin {plugin_id} is not installed; install it with: loopwright plugins install PATH"
            )
        return plugin

    def list(self) -> list[InstalledPlugin]:  # noqa: A003
        out: list[InstalledPlugin] = []
        if not self.root.is_dir():
            return out
        for record in sorted(self.root.glob(f"*/*/{RECORD_FILE}")):
            plugin = self._load(record.parent)
            if plugin is not None:
                out.append(plugin)
        return out

    def remove(self, plugin_id: str) -> bool:
        """Remove an installed plugin with its storage and credentials; its environment stays while
        another plugin uses it (``prune_environments`` removes unused ones)."""
        folder = self._folder(plugin_id)
        if folder is None:
            return False
        shutil.rmtree(folder)
        if not any(folder.parent.iterdir()):
            folder.parent.rmdir()
        self.prune_environments()
        return True

    def prune_environments(self) -> builtins.list[Path]:
        """Delete the environments no installed plugin uses; the ones deleted."""
        used = {p.env.resolve() for p in self.list()}
        removed = []
        if self.envs_dir.is_dir() and self.envs_dir.resolve().is_relative_to(self.root.resolve()):
            for env in self.envs_dir.iterdir():
                if env.is_dir() and not env.name.startswith(".") and env.resolve() not in used:
                    shutil.rmtree(env, ignore_errors=True)
                    removed.append(env)
        return removed

    def _folder(self, plugin_id: str) -> Path | None:
        parts = [p for p in plugin_id.strip().split("/") if p]
        if len(parts) >= 2 and all(_NAME.fullmatch(p) for p in parts[:2]):
            folder = self.root / parts[0] / parts[1]
            return folder if (folder / RECORD_FILE).is_file() else None
        if len(parts) == 1 and _NAME.fullmatch(parts[0]):
            found = [r.parent for r in self.root.glob(f"*/{parts[0]}/{RECORD_FILE}")]
            return found[0] if len(found) == 1 else None
        return None

    def _load(self, folder: Path) -> InstalledPlugin | None:
        try:
            record = json.loads((folder / RECORD_FILE).read_text(encoding="utf-8"))
            manifest = read_manifest(folder / CODE_DIR)
        except (OSError, ValueError):
            return None
        return InstalledPlugin(
            manifest,
            folder,
            Path(record["env"]),
            str(record.get("python", "")),
            SdkFallback.from_json(record.get("sdk_fallback")),
        )


def _check_name(manifest: PluginManifest) -> None:
    for part in (manifest.author, manifest.name):
        if not _NAME.fullmatch(part):
            raise PluginInstallError(f"plugin author and name must be plain names, not {part!r}")


def _unpack(package: Path, target: Path) -> None:
    """Extract a ``.difypkg`` refusing members that would land outside ``target``, symbolic links,
    more than ``MAX_PACKAGE_FILES`` members, more than ``MAX_PACKAGE_BYTES`` unpacked, and a member
    compressed past ``MAX_COMPRESSION_RATIO`` (a zip bomb) — all before anything is written."""
    try:
        with zipfile.ZipFile(package) as archive:
            members = archive.infolist()
            _check_members(package.name, members)
            target.mkdir(parents=True)
            root = target.resolve()
            for m in members:
                dest = (target / m.filename).resolve()
                if not dest.is_relative_to(root) or os.path.isabs(m.filename):
                    raise PluginInstallError(f"{package.name} has a file outside the package: {m.filename!r}")
            archive.extractall(target)
    except zipfile.BadZipFile:
        raise PluginInstallError(f"{package.name} is not a .difypkg (zip) file") from None
    if not (target / MANIFEST_FILE).is_file():
        raise PluginInstallError(f"{package.name} has no {MANIFEST_FILE} at its top")


def _check_members(name: str, members: list[zipfile.ZipInfo]) -> None:
    if len(members) > MAX_PACKAGE_FILES:
        raise PluginInstallError(f"{name} has more than {MAX_PACKAGE_FILES} files")
    if sum(m.file_size for m in members) > MAX_PACKAGE_BYTES:
        raise PluginInstallError(f"{name} unpacks to more than {MAX_PACKAGE_BYTES} bytes")
    for m in members:
        if stat.S_ISLNK(m.external_attr >> 16):
            raise PluginInstallError(f"{name} has a symbolic link: {m.filename!r}")
        packed = max(m.compress_size, 1)
        if m.file_size > MAX_RATIO_FROM_BYTES and m.file_size / packed > MAX_COMPRESSION_RATIO:
            raise PluginInstallError(
                f"{name}: {m.filename!r} unpacks to {m.file_size // packed} times its size (a zip bomb?)"
            )


def _write_json(path: Path, data: dict[str, object]) -> None:
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    temp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(temp, path)
