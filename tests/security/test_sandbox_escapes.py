"""The code sandbox (tools.sandbox) against code that tries to get out: the network (outside and this
host's loopback), the host's files (/etc/passwd, the data directory, the database, writing outside its
folder), the server's environment and processes, its own private root, fork bombs, memory, CPU, disk
and output. Each escape is run as ``simple_code`` would run it, in a real child process, and must be
contained; the figures they print are the sandbox's measured limits (docs/security.md)."""

from __future__ import annotations

import ast
import os
import shutil
import socket
import sys
import uuid
from pathlib import Path

import pytest

from loopwright.tools.sandbox import Sandbox, SandboxLimits, SandboxResult, network_namespace_problem

pytestmark = pytest.mark.skipif(
    network_namespace_problem() is not None,
    reason=f"no namespaces here: {network_namespace_problem()}",
)
LIMITS = SandboxLimits(cpu_seconds=2, wall_seconds=8.0, memory_bytes=128 * 1024 * 1024, max_output=4096)


async def run(code: str, language: str = "python3", limits: SandboxLimits = LIMITS) -> SandboxResult:
    return await Sandbox(limits).run(language, code)  # type: ignore[arg-type]


def said(result: SandboxResult) -> str:
    return result.stdout + result.stderr


async def test_no_network_outside() -> None:
    result = await run(
        "import socket\n"
        "for host in ('1.1.1.1', '8.8.8.8'):\n"
        "    try:\n"
        "        socket.create_connection((host, 53), timeout=2); print('CONNECTED')\n"
        "    except OSError as exc:\n"
        "        print('refused', exc.errno)\n"
        "try:\n"
        "    socket.getaddrinfo('example.com', 80); print('RESOLVED')\n"
        "except OSError:\n"
        "    print('no name')\n"
    )
    assert "CONNECTED" not in result.stdout and "RESOLVED" not in result.stdout
    assert result.stdout.count("refused") == 2 and "no name" in result.stdout


async def test_no_network_to_this_hosts_loopback() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    try:
        result = await run(
            "import socket\n"
            f"for host in ('127.0.0.1', 'localhost'):\n"
            "    try:\n"
            f"        socket.create_connection((host, {port}), timeout=2); print('CONNECTED')\n"
            "    except OSError as exc:\n"
            "        print('refused', type(exc).__name__)\n"
        )
    finally:
        listener.close()
    assert "CONNECTED" not in result.stdout and result.stdout.count("refused") == 2


async def test_the_hosts_files_are_not_there(tmp_path: Path) -> None:
    database = tmp_path / "data" / "loopwright.db"
    database.parent.mkdir()
    database.write_text("SECRET-ROWS", encoding="utf-8")
    paths = [
        "/etc/passwd",
        "/etc/shadow",
        str(database),
        str(database.parent),
        os.getcwd(),
        "/proc/1/environ",
    ]
    result = await run(
        "import os\n"
        f"for path in {paths!r}:\n"
        "    try:\n"
        "        print(open(path).read()[:100] if os.path.isfile(path) else os.listdir(path))\n"
        "    except OSError as exc:\n"
        "        print('absent', type(exc).__name__)\n"
        "print(sorted(os.listdir('/')))\n"
    )
    lines = result.stdout.splitlines()
    assert lines[:-1] == ["absent FileNotFoundError"] * len(paths)
    shown = set(ast.literal_eval(lines[-1]))
    system = {"usr", "bin", "lib", "lib64", "lib32", "libx32", "sbin", "dev", "tmp", "sandbox"}
    assert shown <= system | {Path(sys.base_prefix).parts[1]}  # and the interpreter's installation
    assert "SECRET" not in said(result)


async def test_the_servers_environment_and_processes_are_not_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPWRIGHT_SECRET_KEY", "SECRET-KEY-OF-THE-SERVER")
    server = os.getpid()
    result = await run(
        "import os\n"
        "print(sorted(os.environ))\n"
        f"for path in ('/proc/{server}/environ', '/proc/self/environ', '/proc/{server}/cmdline'):\n"
        "    try:\n"
        "        print(open(path, 'rb').read()[:200])\n"
        "    except OSError as exc:\n"
        "        print('absent', type(exc).__name__)\n"
        "print('pid', os.getpid(), 'parent', os.getppid())\n"
    )
    lines = result.stdout.splitlines()
    assert lines[0] == "['HOME', 'LANG', 'PATH', 'TMPDIR']"
    assert lines[1:4] == ["absent FileNotFoundError"] * 3  # no /proc at all
    assert lines[4] == "pid 2 parent 1"  # its own process ids: the server's are not even numbered
    assert "SECRET" not in said(result)


async def test_nothing_is_written_outside_and_the_root_stays_put() -> None:
    name = f"loopwright-escape-{uuid.uuid4().hex}"
    marker = f"/tmp/{name}"
    result = await run(
        "import ctypes, os\n"
        f"open({marker!r}, 'w').write('x'); print('private tmp', os.path.exists({marker!r}))\n"
        "for path in ('/usr/escape', '/bin/escape', '/sandbox/../usr/lib/escape'):\n"
        "    try:\n"
        "        open(path, 'w'); print('WROTE', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', exc.errno)\n"
        "for attempt in (lambda: os.chroot('/tmp'), lambda: os.mkdir('/tmp/x') or os.chroot('/tmp/x')):\n"
        "    try:\n"
        "        attempt(); print('CHROOTED')\n"
        "    except OSError as exc:\n"
        "        print('refused', exc.errno)\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('mount', libc.mount(None, b'/usr', None, 32 | 4096, None), ctypes.get_errno())\n"
        "print('umount', libc.umount2(b'/usr', 2), ctypes.get_errno())\n"
    )
    lines = result.stdout.splitlines()
    assert lines[0] == "private tmp True"
    assert lines[1:4] == ["refused 30"] * 3  # EROFS: the system is read-only
    assert lines[4:6] == ["refused 1", "refused 1"]  # EPERM: no capability left
    assert lines[6:] == ["mount -1 1", "umount -1 1"]
    assert name not in os.listdir("/tmp")  # its /tmp was its own


def _sandbox_processes() -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"/sandbox/main.py" in (entry / "cmdline").read_bytes():
                count += 1
        except OSError:
            continue
    return count


async def test_a_fork_bomb_is_contained_and_every_process_killed() -> None:
    wide = await run(
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    while True:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(60); os._exit(0)\n"
        "        n += 1\n"
        "except OSError as exc:\n"
        "    print('forks', n, exc.errno)\n"
    )
    _, forks, errno = wide.stdout.split()
    assert 0 < int(forks) < 301 and errno == "11"  # EAGAIN: the namespace's pid_max (or RLIMIT_NPROC)
    bomb = await run("import os\nwhile True:\n    os.fork()\n", limits=SandboxLimits(wall_seconds=3.0))
    assert bomb.timed_out or bomb.exit_code
    assert _sandbox_processes() == 0  # the sleepers and the bomb's processes died with it


async def test_memory_cpu_disk_and_output_are_capped() -> None:
    memory = await run("x = bytearray(512 * 1024 * 1024)\nprint('ALLOCATED')")
    assert "MemoryError" in memory.stderr and "ALLOCATED" not in memory.stdout
    cpu = await run("while True:\n    pass", limits=SandboxLimits(cpu_seconds=1, wall_seconds=30.0))
    assert not cpu.timed_out and cpu.exit_code == 128 + 24  # SIGXCPU at the CPU limit, long before the wall
    assert "killed by SIGXCPU" in cpu.stderr
    disk = await run(
        "import os\n"
        "n = 0\n"
        "try:\n"
        "    while True:\n"
        "        with open(f'/tmp/f{n}', 'wb') as f:\n"
        "            f.write(b'x' * 1024 * 1024)\n"
        "        n += 1\n"
        "except OSError as exc:\n"
        "    print('files', n, exc.errno)\n"
    )
    _, files, errno = disk.stdout.split()
    assert int(files) <= LIMITS.disk_bytes // (1024 * 1024) and errno == "28"  # ENOSPC: its tmpfs is full
    big = await run("import os\nf = open('big', 'wb')\nf.write(b'x' * 2 * 1024 * 1024)\nprint('WROTE')")
    assert "WROTE" not in big.stdout and big.exit_code  # SIGXFSZ / EFBIG at the file-size limit
    output = await run("import sys\nfor _ in range(1000):\n    sys.stdout.write('x' * 10000)\n")
    assert output.truncated and len(output.stdout) == LIMITS.max_output


@pytest.mark.skipif(shutil.which("node") is None, reason="no node here")
async def test_javascript_is_held_the_same() -> None:
    result = await run(
        "const fs = require('fs'); const net = require('net');\n"
        "for (const p of ['/etc/passwd', '/proc/1/environ']) {\n"
        "  try { fs.readFileSync(p); console.log('READ', p) } catch (e) { console.log('absent', e.code) }\n"
        "}\n"
        "console.log(Object.keys(process.env).sort().join(','));\n"
        "const s = net.connect(53, '1.1.1.1');\n"
        "s.on('connect', () => console.log('CONNECTED'));\n"
        "s.on('error', (e) => console.log('refused', e.code));\n",
        "javascript",
    )
    lines = result.stdout.splitlines()
    assert lines[:3] == ["absent ENOENT", "absent ENOENT", "HOME,LANG,PATH,TMPDIR"]
    assert lines[3] in ("refused ENETUNREACH", "refused EHOSTUNREACH")
