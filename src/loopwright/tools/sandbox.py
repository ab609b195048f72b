"""A sandbox for code a model writes: a separate process with no network, no view of the host's files
or processes, and CPU, memory, disk, file-size, process and time limits.

The mechanism, and why:

- **Namespaces, made unprivileged** with a user namespace (``unshare --user --map-root-user --net
  --mount --pid --fork --kill-child``, util-linux). They need unprivileged user namespaces (the Linux
  default; some hardened hosts turn them off). Where ``unshare`` cannot make them, the sandbox refuses
  to run code and says why, unless it was built with ``isolation="off"`` (an operator's explicit
  choice, logged at every run).
  - **No network**: a new network namespace has only a loopback interface that is down, so every
    ``connect`` fails, whatever the language or library — unlike a seccomp filter, which must know
    every syscall path, or an import blocker, which code can get around.
  - **A private root**: a size-capped tmpfs (``disk_bytes``) that the launcher moves into (``pivot_root``),
    holding read-only binds of the system's programs and libraries (``/usr``, ``/bin``, ``/lib``…) and
    the interpreter's own installation, four device files, an empty ``/tmp`` and ``/sandbox`` (the
    code's folder). No ``/etc``, ``/home``, ``/proc``, data directory or database: what is not
    mounted cannot be read, and everything the code writes goes to the tmpfs, gone when it ends.
  - **Its own process ids**: the server's processes are not visible (nor numbered); the launcher is
    the namespace's first process, and every process in it dies with it. The namespace's own
    ``pid_max`` (Linux 6.14+) caps its processes at 300, whoever runs the server.
  - **No capability left**: the launcher drops the bounding set and every capability and sets
    ``no_new_privs`` before the code runs, so the code cannot mount, unmount or ``chroot`` its way out.
- **Limits: rlimits** set before the interpreter is executed: ``RLIMIT_CPU`` (CPU seconds;
  SIGXCPU), ``RLIMIT_AS`` (address space; Python only — V8 reserves far more address space than it
  uses, so Node gets ``--max-old-space-size`` instead), ``RLIMIT_FSIZE`` (file size), ``RLIMIT_NPROC``
  (Python only, Node needs threads; the kernel does not apply it to a server run as root — the pid
  namespace's ``pid_max`` does), ``RLIMIT_CORE`` 0. They need no privilege and hold for every process
  the code starts.
- **Time: a wall-clock limit** kills the whole process group (code that sleeps uses no CPU).
- **Nothing else to reach**: a four-variable environment (none of the server's), no stdin,
  ``python -I -S`` (no site-packages: only the standard library, as Dify's sandbox), and at most
  ``max_output`` bytes of output kept.

``tests/security/test_sandbox_escapes.py`` tries each way out; docs/security.md has the figures.
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

# Runs in the child (``python -I -S -c``), as root of its own user namespace: builds the private root
# (below), drops every capability, sets the limits, then execs the interpreter on the code file.
_LAUNCHER = r"""
import ctypes, json, os, platform, resource, shutil, signal, sys

spec = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
# statvfs flags that a remount inside a user namespace must keep (nosuid nodev noexec noatime nodiratime)
LOCKED = (2, 4, 8, 1024, 2048)
SYSCALLS = {"x86_64": (155, 126), "aarch64": (41, 91)}  # pivot_root, capset


def check(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, "sandbox: %s: %s" % (what, os.strerror(errno)))


def mount(source, target, fstype, flags, data=None):
    enc = lambda v: None if v is None else v.encode()
    done = libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    check(done, "mount " + target)


def bind(path, target, read_only):
    if os.path.isdir(path):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    mount(path, target, None, MS_BIND | MS_REC)
    if read_only:
        kept = sum(flag for flag in LOCKED if os.statvfs(path).f_flag & flag)
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | kept)


def limit_processes(root, most):
    # a pid namespace's own pid_max (Linux 6.14+): no fork bomb past it, whoever runs the server
    proc = root + "/proc"
    os.mkdir(proc)
    mount("proc", proc, "proc", MS_NOSUID | MS_NODEV)
    try:
        with open(proc + "/sys/kernel/pid_max", "w") as f:
            f.write(str(most))
    except OSError:
        pass  # an older kernel: pid_max is the host's; RLIMIT_NPROC still holds for a non-root server
    finally:
        check(libc.umount2(proc.encode(), 2), "umount " + proc)
        os.rmdir(proc)


def private_root(spec):
    root = spec["root"]
    pivot_root, capset = SYSCALLS[platform.machine()]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=755" % spec["disk_bytes"])
    limit_processes(root, spec["pid_max"])
    for path in spec["read_only"]:
        if os.path.islink(path):
            os.makedirs(os.path.dirname(root + path), exist_ok=True)
            os.symlink(os.readlink(path), root + path)
        elif os.path.exists(path):
            bind(path, root + path, True)
    for device in ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"):
        bind(device, root + device, False)
    os.mkdir(root + "/tmp", 0o1777)
    os.mkdir(root + "/sandbox")
    shutil.copy(spec["code"], root + "/sandbox/")
    os.chdir(root)
    check(libc.syscall(pivot_root, b".", b"."), "pivot_root")
    check(libc.umount2(b".", 2), "umount the old root")
    os.chdir("/sandbox")
    cap = 0
    while libc.prctl(24, cap, 0, 0, 0) == 0:  # PR_CAPBSET_DROP: no capability comes back on exec
        cap += 1
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    check(libc.syscall(capset, header, (ctypes.c_uint32 * 6)()), "capset")
    check(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")


def run(spec):
    for name, value in spec["rlimits"].items():
        # CPU: SIGXCPU at the limit (named in the output), SIGKILL a second later if it is caught
        hard = value + 1 if name == "RLIMIT_CPU" else value
        resource.setrlimit(getattr(resource, name), (value, hard))
    os.execve(spec["argv"][0], spec["argv"], spec["env"])


if spec["root"] is None:
    run(spec)
private_root(spec)
# The code runs in a child: this process stays the namespace's first (its end ends every process in
# it) and says which signal ended the code (unshare reports its own status, not the code's).
child = os.fork()
if child == 0:
    run(spec)
_, status = os.waitpid(child, 0)
if os.WIFSIGNALED(status):
    sys.stderr.write("killed by %s\n" % signal.Signals(os.WTERMSIG(status)).name)
    sys.stderr.flush()
    os._exit(128 + os.WTERMSIG(status))
os._exit(os.WEXITSTATUS(status))
"""

# What the private root shows, read-only: the system's programs and libraries, and the interpreters'
# own installations (sys.base_prefix: Python's standard library; Node's prefix). Nothing else of the
# host: no /etc, /home, /root, /proc, /var, no data directory, database or server files.
_SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/libx32", "/sbin")
# The unshare flags: a user namespace (privileges only over what it makes), no network, private mounts,
# its own process ids (every process in it dies with the first: --kill-child).
_UNSHARE = ["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid", "--fork", "--kill-child"]


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
    disk_bytes: int = 32 * 1024 * 1024  # the private root's tmpfs: everything the code may write


# The kernel's least pid_max: a pid namespace holds at most this many processes less one
PID_MAX_MIN = 301


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
        isolated = bool(prefix)
        with tempfile.TemporaryDirectory(prefix="loopwright-sandbox-") as temp:
            work = Path(temp) / "work"
            work.mkdir()
            argv, rlimits, read_only = self._interpreter(language, work, code, isolated)
            home = "/sandbox" if isolated else str(work)
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home, "TMPDIR": "/tmp"}
            spec = {
                "argv": argv,
                "rlimits": rlimits,
                "env": env,
                "root": str(Path(temp) / "root") if isolated else None,
                "code": str(work / Path(argv[-1]).name),  # copied into the private root
                "read_only": read_only,
                "disk_bytes": self.limits.disk_bytes,
                "pid_max": max(PID_MAX_MIN, self.limits.processes + 1),
            }
            if isolated:
                (Path(temp) / "root").mkdir()
            command = [*prefix, _real(sys.executable), "-I", "-S", "-c", _LAUNCHER, json.dumps(spec)]
            proc = await asyncio.create_subprocess_exec(
                *command,
                cwd=work,
                env={"PATH": env["PATH"], "LANG": env["LANG"]},  # none of the server's own variables
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group: killed as one
            )
            return await self._collect(proc)

    async def _isolation_prefix(self) -> list[str]:
        if self.isolation == "off":
            log.warning("the code sandbox runs WITHOUT isolation (isolation='off')")
            return []
        problem = await run_sync(network_namespace_problem)  # runs a subprocess once: not on the loop
        if problem is not None:
            raise SandboxUnavailableError(
                "code cannot run in a sandbox here: it needs unprivileged user, network, mount and pid "
                f"namespaces (unshare --user --net --mount --pid), and {problem}"
            )
        return [*_UNSHARE, "--"]

    def _interpreter(
        self, language: Language, work: Path, code: str, isolated: bool
    ) -> tuple[list[str], dict[str, int], list[str]]:
        """The interpreter's argv (as seen inside), its rlimits, and the folders it needs read-only."""
        lim = self.limits
        rlimits = {
            "RLIMIT_CPU": lim.cpu_seconds,
            "RLIMIT_FSIZE": lim.file_bytes,
            "RLIMIT_CORE": 0,
        }
        inside = Path("/sandbox") if isolated else work
        if language == "python3":
            (work / "main.py").write_text(code, encoding="utf-8")
            rlimits |= {"RLIMIT_AS": lim.memory_bytes, "RLIMIT_NPROC": lim.processes}
            python = _real(sys.executable)
            return [python, "-I", "-S", str(inside / "main.py")], rlimits, [*_SYSTEM_DIRS, sys.base_prefix]
        if language == "javascript":
            node = shutil.which("node")
            if node is None:
                raise SandboxUnavailableError("javascript needs Node.js (node), which is not installed here")
            (work / "main.js").write_text(code, encoding="utf-8")
            heap = max(16, lim.memory_bytes // (1024 * 1024))
            node = _real(node)
            prefix = str(Path(node).parent.parent)  # its installation (…/bin/node → …)
            argv = [node, f"--max-old-space-size={heap}", str(inside / "main.js")]
            return argv, rlimits, [*_SYSTEM_DIRS, prefix]
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


def _real(path: str) -> str:
    """``path`` with its symbolic links resolved (a virtual environment's python is a link to the
    installation's, which is what the private root shows)."""
    return os.path.realpath(path)


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
            [*_UNSHARE, "--", "true"],
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
