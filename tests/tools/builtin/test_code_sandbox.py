"""``simple_code`` and its sandbox with real child processes: results, no network, limits, errors."""

from __future__ import annotations

import shutil
import socket

import pytest

from loopwright.tools.builtin.code import code_tool
from loopwright.tools.engine import ToolEngine
from loopwright.tools.sandbox import Sandbox, SandboxLimits, network_namespace_problem

pytestmark = pytest.mark.skipif(
    network_namespace_problem() is not None,
    reason=f"no network namespace here: {network_namespace_problem()}",
)
FAST = SandboxLimits(cpu_seconds=2, wall_seconds=4.0, memory_bytes=128 * 1024 * 1024, max_output=1000)


async def run(code: str, language: str = "python3", limits: SandboxLimits = FAST) -> str:
    engine = ToolEngine([code_tool(Sandbox(limits))])
    return (await engine.invoke("simple_code", {"language": language, "code": code})).observation


async def test_python_prints_its_result() -> None:
    assert await run("import math\nprint(math.comb(10, 3))") == "120"


@pytest.mark.skipif(shutil.which("node") is None, reason="no node here")
async def test_javascript_prints_its_result() -> None:
    assert await run("console.log([1, 2, 3].map(x => x * 2).join(','))", "javascript") == "2,4,6"


async def test_there_is_no_network_even_to_this_hosts_loopback() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    try:
        code = (
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('connected')"
        )
        observation = await run(code)
    finally:
        listener.close()
    assert "connected" not in observation.splitlines()[0:1]
    assert "exit status 1" in observation and ("refused" in observation or "unreachable" in observation)


async def test_a_busy_loop_is_stopped() -> None:
    observation = await run("while True:\n    pass")
    assert (
        "stopped" in observation or "exit status" in observation
    )  # wall clock or CPU limit, whichever first


async def test_sleeping_code_is_stopped_at_the_wall_clock_limit() -> None:
    observation = await run("import time\ntime.sleep(30)", limits=SandboxLimits(wall_seconds=1.0))
    assert observation == "[stopped: the code ran longer than 1 seconds]"


async def test_memory_is_limited() -> None:
    observation = await run("x = bytearray(512 * 1024 * 1024)\nprint('allocated')")
    assert "MemoryError" in observation and "allocated" not in observation


async def test_output_is_capped() -> None:
    observation = await run("print('x' * 100000)")
    assert observation.endswith("[output truncated]") and len(observation) < 1100


async def test_site_packages_are_not_importable() -> None:
    observation = await run("import pydantic")
    assert "ModuleNotFoundError" in observation


async def test_errors_and_silence_are_explained() -> None:
    assert "ZeroDivisionError" in await run("1 / 0")
    assert await run("x = 1") == "(the code printed nothing; use print() or console.log())"
    assert "unsupported language 'ruby'" in await run("puts 1", "ruby")


async def test_without_namespaces_the_sandbox_refuses_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    import loopwright.tools.sandbox as sandbox

    monkeypatch.setattr(
        sandbox, "network_namespace_problem", lambda: "unshare failed: Operation not permitted"
    )
    observation = await run("print(1)")
    assert observation.startswith("tool invoke error")
    assert (
        "needs unprivileged user, network, mount and pid namespaces" in observation
        and "Operation not permitted" in observation
    )
