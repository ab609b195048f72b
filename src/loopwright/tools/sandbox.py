"""A sandbox for code a model writes: a separate process with no network and CPU, memory, file-size,
process and time limits.

The mechanism, and why:

- **No network: a new network namespace**, made unprivileged with a user namespace
  (``unshare --user --map-root-user --net``, util-linux). Inside it there is only a loopback interface
  that is down, so every ``connect`` fails, whatever the language or library — unlike a seccomp filter,
  which must know every syscall path, or an import blocker, which code can get around. It needs
  unprivileged user namespaces (the Linux default; some hardened hosts turn them off). Where
  ``unshare`` cannot make them, the sandbox refuses to run code and says why, unless it was built with
  ``isolation="off"`` (an operator's explicit choice, logged at every run).
- **Limits: rlimits** set by a small launcher inside the child before it ``exec``\\ s the interpreter:
  ``RLIMIT_CPU`` (CPU seconds), ``RLIMIT_AS`` (address space; Python only — V8 reserves far more address
  space than it uses, so Node gets ``--max-old-space-size`` instead), ``RLIMIT_FSIZE`` (file size),
  ``RLIMIT_NPROC`` (no fork bombs; Python only, Node needs threads), ``RLIMIT_CORE`` 0. They need no
  privilege and hold for every process the code starts.
- **Time: a wall-clock limit** kills the whole process group (code that sleeps uses no CPU).
- **Nothing else to reach**: an empty temporary working directory, a minimal environment, no stdin,
  ``python -I -S`` (no site-packages: only the standard library, as Dify's sandbox), and at most
  ``max_output`` bytes of output kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from loopwright._threads import run_sync
from loopwright.errors import ToolError

log = logging.getLogger(__name__)

Language = Literal["python3", "javascript"]
Isolation = Literal["required", "off"]

# Runs in the child (``python -I -S -c``): set the limits, then exec the interpreter on the code file.
_LAUNCHER = """
import json, os, resource, sys
limits = json.loads(sys.argv[1])
for name, value in limits["rlimits"].items():
    resource.setrlimit(getattr(resource, name), (value, value))
os.execv(limits["argv"][0], limits["argv"])
"""


class SandboxUnavailableError(ToolError, RuntimeError):
    """The sandbox cannot run code on this host (the message says why and what to do)."""


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 5
    wall_seconds: float = 10.0
    memory_bytes: int = 256 * 1024 * 1024
    file_bytes: int = 1024 * 1024
    processes: int = 64
    max_output: int = 64 * 1024


@dataclass(frozen=True)
class SandboxResult:
    stdout: str
    stderr: str
    exit_code: int | None  # None: killed at the wall-clock limit
    timed_out: bool = False
    truncated: bool = False  # output beyond ``max_output`` was dropped


class Sandbox:
    """Runs code in a child process (see the module's docstring); one sandbox serves many runs."""

    def __init__(self, limits: SandboxLimits | None = None, *, isolation: Isolation = "required") -> None:
        self.limits = limits or SandboxLimits()
        self.isolation = isolation

    async def run(self, language: Language, code: str) -> SandboxResult:
        """Run ``code``; :class:`SandboxUnavailableError` when it cannot be run safely here."""
        prefix = await self._isolation_prefix()
        with tempfile.TemporaryDirectory(prefix="loopwright-sandbox-") as work:
            argv, rlimits = self._interpreter(language, Path(work), code)
            spec = json.dumps({"argv": argv, "rlimits": rlimits})
            command = [*prefix, sys.executable, "-I", "-S", "-c", _LAUNCHER, spec]
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": work}
            proc = await asyncio.create_subprocess_exec(
                *command,
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group: killed as one
            )
            return await self._collect(proc)

    async def _isolation_prefix(self) -> list[str]:
        if self.isolation == "off":
            log.warning("the code sandbox runs WITHOUT network isolation (isolation='off')")
            return []
        problem = await run_sync(network_namespace_problem)  # runs a subprocess once: not on the loop
        if problem is not None:
            raise SandboxUnavailableError(
                "code cannot run in a sandbox here: it needs an unprivileged network namespace "
                f"(unshare --user --net), and {problem}"
            )
        return ["unshare", "--user", "--map-root-user", "--net", "--"]

    def _interpreter(self, language: Language, work: Path, code: str) -> tuple[list[str], dict[str, int]]:
        lim = self.limits
        rlimits = {
            "RLIMIT_CPU": lim.cpu_seconds,
            "RLIMIT_FSIZE": lim.file_bytes,
            "RLIMIT_CORE": 0,
        }
        if language == "python3":
            path = work / "main.py"
            path.write_text(code, encoding="utf-8")
            rlimits |= {"RLIMIT_AS": lim.memory_bytes, "RLIMIT_NPROC": lim.processes}
            return [sys.executable, "-I", "-S", str(path)], rlimits
        if language == "javascript":
            node = shutil.which("node")
            if node is None:
                raise SandboxUnavailableError("javascript needs Node.js (node), which is not installed here")
            path = work / "main.js"
            path.write_text(code, encoding="utf-8")
            heap = max(16, lim.memory_bytes // (1024 * 1024))
            return [node, f"--max-old-space-size={heap}", str(path)], rlimits
        raise SandboxUnavailableError(f"unsupported language {language!r}; use python3 or javascript")

    async def _collect(self, proc: asyncio.subprocess.Process) -> SandboxResult:
        assert proc.stdout is not None and proc.stderr is not None
        cap = self.limits.max_output
        reads = asyncio.gather(_read_capped(proc.stdout, cap), _read_capped(proc.stderr, cap))
        timed_out = False
        try:
            (out, out_cut), (err, err_cut) = await asyncio.wait_for(reads, self.limits.wall_seconds)
            code: int | None = await proc.wait()
        except TimeoutError:
            timed_out = True
            _kill_group(proc.pid)
            await proc.wait()
            out, err, out_cut, err_cut, code = b"", b"", False, False, None
        finally:
            if proc.returncode is None:
                _kill_group(proc.pid)
                await proc.wait()
        return SandboxResult(
            out.decode("utf-8", errors="replace"),
            err.decode("utf-8", errors="replace"),
            code,
            timed_out,
            out_cut or err_cut,
        )


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> tuple[bytes, bool]:
    """Everything the stream yields until it ends, keeping at most ``cap`` bytes (the rest is read and
    dropped, so the child never blocks on a full pipe)."""
    kept = bytearray()
    cut = False
    while chunk := await stream.read(65536):
        room = cap - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > room:
            cut = True
    return bytes(kept), cut


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


@functools.cache
def network_namespace_problem() -> str | None:
    """Why an unprivileged network namespace cannot be made here, or None when it can (checked once)."""
    if sys.platform != "linux":
        return f"this is {sys.platform}, not Linux"
    if shutil.which("unshare") is None:
        return "the unshare command (util-linux) is not installed"
    try:
        done = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--net", "--", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare failed: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
        return f"unshare failed: {reason} (unprivileged user namespaces may be disabled on this host)"
    return None
