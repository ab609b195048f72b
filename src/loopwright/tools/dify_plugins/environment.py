"""A plugin's Python environment: its requirements, the interpreter that can run them, and a virtual
environment built with ``uv`` (as Dify's plugin daemon does; ~1.5 s per plugin against ~20 s with pip).

Environments are kept by the hash of (Python version, requirements) in one directory, so plugins with
the same requirements share one, and a test suite or CI can keep them between runs. An environment is
built in a temporary directory and renamed into place, so a half-built one is never used, and two
installs of the same requirements at once both end with the one that won.

``dify_plugin`` 0.8 and later need Python 3.12; the host says so plainly when a plugin's requirements
leave nothing older and the interpreter is older.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from loopwright.errors import UserInputError
from loopwright.tools.dify_plugins.sdk_patch import speed_up_stdin_reader

log = logging.getLogger(__name__)

PYTHON_ENV = "LOOPWRIGHT_PLUGIN_PYTHON"  # the interpreter plugins' environments are built on
INSTALL_TIMEOUT = 900.0  # seconds for one environment (large plugins pull numpy, matplotlib, …)
# dify_plugin releases that run on Python 3.11; 0.8.0 and later need 3.12.
SDK_ON_311 = ("0.0.1b65", "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "0.4.4", "0.5.0", "0.6.0", "0.7.4")
SDK_NEEDS = (3, 12)


class PluginInstallError(UserInputError):
    """A plugin that cannot be installed here; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Interpreter:
    path: str
    version: tuple[int, int]

    @property
    def label(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


def read_requirements(folder: Path) -> list[str]:
    """The plugin's requirements: ``requirements.txt`` (what Dify's releases pin for the SDK they were
    built with), else the ``[project] dependencies`` of ``pyproject.toml``. Options lines (``-e``,
    ``--index-url`` …) are refused: a plugin does not choose where packages come from."""
    text_file = folder / "requirements.txt"
    if text_file.is_file():
        out = []
        for raw in text_file.read_text(encoding="utf-8").splitlines():
            line = raw.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("-"):
                raise PluginInstallError(
                    f"requirements.txt of the plugin has an option line, refused: {line!r}"
                )
            out.append(line)
        return out
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise PluginInstallError(f"pyproject.toml of the plugin is not valid TOML: {exc}") from None
        deps = data.get("project", {}).get("dependencies", [])
        if isinstance(deps, list):
            return [str(d).strip() for d in deps if str(d).strip()]
    raise PluginInstallError("the plugin has neither requirements.txt nor a pyproject.toml dependency list")


def needs_newer_python(requirements: list[str], python: Interpreter) -> bool:
    """Whether the pinned ``dify_plugin`` leaves only releases that need Python 3.12 and ``python`` is
    older."""
    if python.version >= SDK_NEEDS:
        return False
    from packaging.requirements import InvalidRequirement, Requirement

    for line in requirements:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.name.lower().replace("-", "_") == "dify_plugin":
            return not any(req.specifier.contains(v, prereleases=True) for v in SDK_ON_311)
    return False


def host_interpreter() -> Interpreter:
    """``LOOPWRIGHT_PLUGIN_PYTHON`` when set, else the interpreter running loopwright."""
    configured = os.environ.get(PYTHON_ENV, "").strip()
    if configured:
        return probe_interpreter(configured)
    return Interpreter(sys.executable, (sys.version_info.major, sys.version_info.minor))


def probe_interpreter(path: str) -> Interpreter:
    """The version of the interpreter at ``path`` (a clear error when it does not run)."""
    try:
        out = subprocess.run(
            [path, "-c", "import sys; print('%d %d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError) as exc:
        raise PluginInstallError(f"the Python interpreter {path!r} does not run: {exc}") from None
    return Interpreter(path, (int(out[0]), int(out[1])))


def newer_interpreter(uv: str | None) -> Interpreter | None:
    """A Python 3.12 or newer on this machine: ``python3.13`` / ``python3.12`` on PATH, else one ``uv``
    can find (never downloaded); None when there is none."""
    for name in ("python3.13", "python3.12"):
        path = shutil.which(name)
        if path is not None:
            try:
                return probe_interpreter(path)
            except PluginInstallError:  # a pyenv shim for a version that is not active, …
                continue
    if uv is None:
        return None
    try:
        found = subprocess.run(
            [uv, "python", "find", "--no-python-downloads", f">={SDK_NEEDS[0]}.{SDK_NEEDS[1]}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    path = found.stdout.strip()
    if found.returncode != 0 or not path:
        return None
    try:
        return probe_interpreter(path)
    except PluginInstallError:
        return None


def choose_interpreter(
    requirements: list[str], plugin_id: str, uv: str | None, *, sdk_fallback: bool = False
) -> tuple[Interpreter, bool]:
    """The interpreter for a plugin with these requirements, and whether it runs on an older SDK
    than it asks for: a newer Python found on the machine is preferred; without one, ``sdk_fallback``
    allows the newest SDK that runs on this one (``sdk_fallback.py`` checks the plugin allows it);
    else a clear error."""
    python = host_interpreter()
    if not needs_newer_python(requirements, python):
        return python, False
    newer = newer_interpreter(uv)
    if newer is not None:
        return newer, False
    if sdk_fallback:
        return python, True
    raise PluginInstallError(
        f"plugin {plugin_id} needs Python {SDK_NEEDS[0]}.{SDK_NEEDS[1]} or newer (its dify_plugin "
        f"requirement allows only SDK 0.8 or later), but the Python found is {python.label} "
        f"({python.path}); install Python {SDK_NEEDS[0]}.{SDK_NEEDS[1]} and set {PYTHON_ENV} to it, "
        "or allow the SDK fallback (loopwright plugins install --sdk-fallback)"
    )


def find_uv() -> str | None:
    """The ``uv`` executable: the one the ``uv`` package installed, else one on PATH."""
    try:
        import uv

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def environment_key(requirements: list[str], python: Interpreter) -> str:
    text = "\n".join([f"python {python.label}", *sorted(r.replace(" ", "") for r in requirements)])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def env_python(env: Path) -> Path:
    return env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_environment(
    requirements: list[str],
    python: Interpreter,
    envs_dir: Path,
    *,
    variant: str = "",
    build: Callable[[Path], None] | None = None,
) -> Path:
    """The environment for these requirements under ``envs_dir``, built when missing: by ``build``
    (given the folder to build in) when given, which ``variant`` names in the environment's key
    (``sdk_fallback.py`` builds on an older SDK), else with the requirements as they are. Blocking:
    call it in a thread from async code."""
    key_lines = [*requirements, f"# {variant}"] if variant else requirements
    env = envs_dir / environment_key(key_lines, python)
    if env_python(env).exists() and (env / ".complete").exists():
        speed_up_stdin_reader(env)  # environments built before the patch existed
        return env
    envs_dir.mkdir(parents=True, exist_ok=True)
    temp = envs_dir / f".build-{uuid.uuid4().hex}"
    try:
        if build is not None:
            build(temp)
        else:
            _build(temp, requirements, python)
        speed_up_stdin_reader(temp)
        (temp / ".complete").write_text("\n".join(requirements) + "\n", encoding="utf-8")
        try:
            temp.rename(env)
        except OSError:
            if not (env / ".complete").exists():  # not another install winning the race
                raise
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return env


def _build(target: Path, requirements: list[str], python: Interpreter) -> None:
    uv = find_uv()
    reqs = target.with_name(target.name + ".txt")
    reqs.write_text("\n".join(requirements) + "\n", encoding="utf-8")
    try:
        if uv is not None:
            run_step([uv, "venv", "--quiet", "--python", python.path, str(target)], "create the environment")
            env = {**os.environ, "VIRTUAL_ENV": str(target)}
            run_step([uv, "pip", "install", "--quiet", "-r", str(reqs)], "install the requirements", env)
        else:
            log.warning("uv is not installed: building the plugin environment with pip (much slower)")
            # --upgrade-deps: the interpreter's bundled pip may be one with known vulnerabilities
            # (PYSEC-2023-228), and a plugin's requirements are other people's text.
            run_step([python.path, "-m", "venv", "--upgrade-deps", str(target)], "create the environment")
            pip = [str(env_python(target)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
            run_step([*pip, "-r", str(reqs)], "install the requirements")
    finally:
        reqs.unlink(missing_ok=True)


def run_step(argv: list[str], what: str, env: dict[str, str] | None = None) -> None:
    """Run one step of building an environment; a :class:`PluginInstallError` with its output when
    it fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        raise PluginInstallError(f"could not {what}: no answer after {INSTALL_TIMEOUT:g} s") from None
    except OSError as exc:
        raise PluginInstallError(f"could not {what}: {exc}") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()[-2000:]
        hint = ""
        if "requires-python" in detail.lower() or "python>=3.12" in detail.replace(" ", "").lower():
            hint = f" (the plugin needs a newer Python: set {PYTHON_ENV} to Python 3.12 or newer)"
        raise PluginInstallError(f"could not {what}{hint}:\n{detail}")
