"""Running a plugin on an older ``dify_plugin`` than it asks for, when the interpreter cannot run the
one it asks for — and only when the plugin's own code is checked to allow it.

Today's official plugins ask for ``dify_plugin>=0.9``, which needs Python 3.12. On an older Python the
install (``sdk_fallback=True``, the default; ``loopwright plugins install --no-sdk-fallback`` refuses
instead) builds the environment on the newest SDK release that runs on the interpreter, and checks:

1. every ``.py`` file of the plugin compiles on this interpreter (3.12-only syntax anywhere is caught,
   also in modules a tool imports late);
2. every name the plugin imports from ``dify_plugin`` exists in the SDK installed;
3. the plugin starts on that SDK: the SDK reads its manifest, provider and tool declarations, imports
   its provider and tool classes, declares each provider, and beats (what Dify's daemon waits for).

Where the plugin asks for a newer release of a package the old SDK pins (``requests>=2.34`` against the
SDK's ``requests~=2.32``), the plugin's requirement wins: the SDK's pin is lifted, and said. A plugin
that fails a check is refused with one line saying which check and where. What was checked is stored
with the install (``plugin.json``) and printed by ``loopwright plugins install``.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from loopwright.tools.dify_plugins import protocol
from loopwright.tools.dify_plugins.environment import (
    SDK_ON_311,
    Interpreter,
    PluginInstallError,
    env_python,
    run_step,
)
from loopwright.tools.dify_plugins.manifest import PluginManifest
from loopwright.tools.dify_plugins.process import plugin_environment

SDK = "dify_plugin"
FALLBACK_RECORD = ".sdk-fallback.json"  # in the environment: the SDK chosen and the pins lifted
VARIANT = "on the newest dify_plugin this Python runs"  # in the environment's key
START_TIMEOUT = 120.0  # seconds for a plugin to start (heavy ones import numpy, transformers, …)
PROBE = Path(__file__).with_name("sdk_probe.py")
_INSTALLED_TOOL = re.compile(r"Installed tool: (.+)")


@dataclass(frozen=True, slots=True)
class SdkFallback:
    """What an install on an older SDK did and checked (stored in ``plugin.json``)."""

    requested: str  # the plugin's requirement: "dify_plugin>=0.9.0"
    sdk: str  # the release installed: "0.7.4"
    python: str  # "3.11"
    lifted: tuple[str, ...]  # "requests>=2.34.2 (the SDK pins requests~=2.32.3)"
    checked: tuple[str, ...]  # one sentence per check passed

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> SdkFallback | None:
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                str(data["requested"]),
                str(data["sdk"]),
                str(data["python"]),
                tuple(str(x) for x in data.get("lifted", ())),
                tuple(str(x) for x in data.get("checked", ())),
            )
        except KeyError:
            return None

    @property
    def line(self) -> str:
        """One line for ``plugins install``."""
        lifted = f"; lifted the SDK's pins: {', '.join(self.lifted)}" if self.lifted else ""
        return (
            f"runs on dify_plugin {self.sdk}, not the {self.requested} it asks for (that needs Python 3.12; "
            f"this is {self.python}){lifted}; checked: {'; '.join(self.checked)}"
        )


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def sdk_requirement(requirements: list[str]) -> str:
    from packaging.requirements import InvalidRequirement, Requirement

    for line in requirements:
        try:
            if _canonical(Requirement(line).name) == _canonical(SDK):
                return line
        except InvalidRequirement:
            continue
    return SDK


def lifted_pins(requirements: list[str], sdk_requires: list[str]) -> list[tuple[str, str]]:
    """(the plugin's requirement, the SDK's) for each package both name where the lowest version the
    plugin accepts is outside the SDK's pin: there the plugin's requirement replaces the SDK's."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    pins: dict[str, Requirement] = {}
    for line in sdk_requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        pins[_canonical(req.name)] = req
    out = []
    for line in requirements:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        pin = pins.get(_canonical(req.name))
        if pin is None or _canonical(req.name) == _canonical(SDK):
            continue
        floors = [s.version for s in req.specifier if s.operator in (">=", ">", "==", "~=", "===")]
        try:
            if any(not pin.specifier.contains(Version(v), prereleases=True) for v in floors):
                out.append((line, f"{pin.name}{pin.specifier}"))
        except InvalidVersion:
            continue
    return out


def build_on_older_sdk(target: Path, requirements: list[str], python: Interpreter, uv: str | None) -> None:
    """Build the environment at ``target`` with the newest SDK that runs on ``python`` in place of
    the one the plugin asks for; its choice and the lifted pins go to ``FALLBACK_RECORD`` in it."""
    run = run_step
    if uv is None:
        raise PluginInstallError("running a plugin on an older dify_plugin needs uv (pip install uv)")
    requested = sdk_requirement(requirements)
    env = {**os.environ, "VIRTUAL_ENV": str(target)}
    run([uv, "venv", "--quiet", "--python", python.path, str(target)], "create the environment", None)
    # The resolver keeps to releases whose Requires-Python admits this interpreter: the newest of those.
    run([uv, "pip", "install", "--quiet", f"{SDK}>={SDK_ON_311[-1]}"], "install dify_plugin", env)
    sdk, sdk_requires = _sdk_metadata(target)
    lifts = lifted_pins(requirements, sdk_requires)
    others = [r for r in requirements if r != requested]
    reqs = target / ".plugin-requirements.txt"
    overrides = target / ".plugin-overrides.txt"
    reqs.write_text("\n".join([f"{SDK}=={sdk}", *others]) + "\n", encoding="utf-8")
    overrides.write_text("".join(f"{plugin}\n" for plugin, _ in lifts), encoding="utf-8")
    argv = [uv, "pip", "install", "--quiet", "-r", str(reqs)]
    if lifts:
        argv += ["--override", str(overrides)]
    try:
        run(argv, f"install the requirements on dify_plugin {sdk}", env)
    except PluginInstallError as exc:
        raise PluginInstallError(
            f"could not install its requirements on dify_plugin {sdk}: {resolver_reason(str(exc))}"
        ) from None
    record = {
        "requested": requested,
        "sdk": sdk,
        "lifted": [f"{plugin} (the SDK pins {pin})" for plugin, pin in lifts],
    }
    (target / FALLBACK_RECORD).write_text(json.dumps(record) + "\n", encoding="utf-8")


def resolver_reason(output: str) -> str:
    """One line of an installer's failure: its ``error:`` line and the first ``cause:`` under it
    (uv's resolver says there which requirement cannot be met and why)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    error = next((line.removeprefix("error:").strip() for line in lines if line.startswith("error:")), "")
    cause = next((line.removeprefix("cause:").strip() for line in lines if line.startswith("cause:")), "")
    text = ": ".join(part for part in (error, cause) if part) or (lines[-1] if lines else "no output")
    return text[:400]


def _sdk_metadata(env: Path) -> tuple[str, list[str]]:
    code = (
        "import importlib.metadata as m, json; "
        "print(json.dumps([m.version('dify_plugin'), m.requires('dify_plugin') or []]))"
    )
    done = subprocess.run([str(env_python(env)), "-c", code], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise PluginInstallError(f"could not read the installed dify_plugin: {done.stderr.strip()[-500:]}")
    version, requires = json.loads(done.stdout.strip().splitlines()[-1])
    return str(version), [str(r) for r in requires]


def check_plugin(
    manifest: PluginManifest, code: Path, env: Path, python: Interpreter, start_timeout: float = START_TIMEOUT
) -> SdkFallback:
    """Check the plugin in ``code`` against the older SDK in ``env`` (see the module's docstring);
    the statement of what was checked, or a :class:`PluginInstallError` with one line saying why not."""
    record = json.loads((env / FALLBACK_RECORD).read_text(encoding="utf-8"))
    sdk, requested = str(record["sdk"]), str(record["requested"])
    refused = (
        f"plugin {manifest.plugin_id} asks for {requested} (Python 3.12+) and cannot run on dify_plugin {sdk}"
    )
    probe = _probe(code, env)
    if probe["syntax"]:
        raise PluginInstallError(
            f"{refused}: its code uses syntax Python {python.label} does not have ({probe['syntax'][0]})"
        )
    if probe["missing"]:
        raise PluginInstallError(f"{refused}: the SDK lacks what it imports ({probe['missing'][0]})")
    providers = start_and_read_declaration(manifest, code, env, start_timeout)
    missing = [p.name for p in manifest.providers if p.name not in providers]
    if missing:
        raise PluginInstallError(f"{refused}: it started but did not declare its provider {missing[0]}")
    tools = sum(len(p.tools) for p in manifest.providers)
    names = ", ".join(p.name for p in manifest.providers)
    return SdkFallback(
        requested=requested,
        sdk=sdk,
        python=python.label,
        lifted=tuple(str(x) for x in record.get("lifted", [])),
        checked=(
            f"{probe['files']} Python files compile on Python {python.label}",
            f"{probe['names']} imports from dify_plugin resolve in {sdk}",
            f"it starts on {sdk}, loading its classes and declaring {names} ({tools} tools)",
        ),
    )


def _probe(code: Path, env: Path) -> dict[str, Any]:
    try:
        done = subprocess.run(
            [str(env_python(env)), str(PROBE), str(code)],
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT,
            cwd=code,
            env=plugin_environment(),
        )
    except subprocess.TimeoutExpired:
        raise PluginInstallError(f"checking the plugin's code took over {START_TIMEOUT:g} s") from None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise PluginInstallError(f"checking the plugin's code failed: {done.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def start_and_read_declaration(
    manifest: PluginManifest, code: Path, env: Path, timeout: float = START_TIMEOUT
) -> set[str]:
    """Start the plugin as the host does, read until its first heartbeat (the SDK beats once its
    declaration is written), stop it; the providers it declared. Blocking."""
    proc = subprocess.Popen(
        [str(env_python(env)), "-m", manifest.entrypoint],
        cwd=code,
        env=plugin_environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    lines: queue.Queue[bytes] = queue.Queue()
    stderr: list[str] = []
    pumps = [
        threading.Thread(target=_pump, args=(proc.stdout, lines.put), daemon=True),
        threading.Thread(
            target=_pump,
            args=(proc.stderr, lambda b: stderr.append(b.decode("utf-8", "replace"))),
            daemon=True,
        ),
    ]
    for pump in pumps:
        pump.start()
    declared, providers = False, set()
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                if proc.poll() is not None or time.monotonic() >= deadline:
                    break
                continue
            if not line:  # the plugin closed its output: it ended
                break
            event = protocol.parse_line(line)
            if isinstance(event, protocol.Declaration):
                declared = True
            elif isinstance(event, protocol.Log) and (m := _INSTALLED_TOOL.search(event.message)):
                providers.add(m.group(1).strip())
            elif isinstance(event, protocol.Heartbeat) and declared:
                return providers
    finally:
        _stop(proc, pumps)
    if proc.returncode not in (None, 0, -15, -9) or not declared:
        # The error is the last line of the first traceback; gevent's noise at exit comes after it.
        text = "".join(stderr).split("Exception ignored in", 1)[0]
        tail = [s.strip() for s in text.splitlines() if s.strip()]
        why = tail[-1] if tail else f"no declaration within {timeout:g} s"
        raise PluginInstallError(
            f"plugin {manifest.plugin_id} did not start on the installed dify_plugin: {why[:300]}"
        )
    return providers


def _pump(stream: Any, put: Any) -> None:
    for line in iter(stream.readline, b""):
        put(line)
    put(b"")


def _stop(proc: subprocess.Popen[bytes], pumps: list[threading.Thread]) -> None:
    """Terminate the plugin (kill it after 3 s), let the readers reach the end, close the pipes."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for pump in pumps:
        pump.join(5)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
