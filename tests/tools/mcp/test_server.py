"""MCPServer over stdio against a real MCP server from PyPI: ``mcp-server-time``."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loopwright import Agent
from loopwright.agent import ToolCallFinished
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools import JsonMessage, TextMessage, ToolEngine, ToolInvokeError
from loopwright.tools.mcp import MCPConnectionError, MCPServer

TIME_ARGS = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


def server_pids(marker: str = "mcp_server_time") -> list[int]:
    """Live (not zombie) child processes of this test process whose command line contains ``marker``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, ppid = fields[0], int(fields[1])
        if ppid == os.getpid() and state != "Z" and marker in cmdline:
            pids.append(int(entry.name))
    return pids


async def wait_for_no_servers(marker: str = "mcp_server_time") -> None:
    for _ in range(200):
        if not server_pids(marker):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"server processes still running: {server_pids(marker)}")


@pytest.fixture
async def time_server() -> AsyncIterator[MCPServer]:
    server = MCPServer.stdio(sys.executable, TIME_ARGS, name="time")
    try:
        yield server
    finally:
        await server.aclose()
    await wait_for_no_servers()


async def test_lists_the_real_servers_tools_with_their_schemas(time_server: MCPServer) -> None:
    tools = {t.name: t for t in await time_server.get_tools()}
    assert set(tools) == {"get_current_time", "convert_time"}
    schema = tools["convert_time"].schema.parameters
    assert schema["required"] == ["source_timezone", "time", "target_timezone"]
    assert schema["properties"]["time"]["type"] == "string"
    assert "24-hour" in schema["properties"]["time"]["description"]
    assert tools["get_current_time"].description == "Get current time in a specific timezone"
    # One process, started lazily by the first listing, serves later listings too.
    assert len(server_pids()) == 1
    assert [t.name for t in await time_server.get_tools()] == list(tools)
    assert len(server_pids()) == 1


async def test_calls_a_tool_and_reads_text_and_structured_content(time_server: MCPServer) -> None:
    outputs = await time_server.call_tool(
        "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    )
    text = [o for o in outputs if isinstance(o, TextMessage)]
    assert len(text) == 1
    data = json.loads(text[0].text)
    assert data["target"]["timezone"] == "Asia/Tokyo"
    assert data["target"]["datetime"].endswith("T21:00:00+09:00")
    # The structured content is the same value; it is kept for callers but not shown twice to the model.
    (structured,) = [o for o in outputs if isinstance(o, JsonMessage)]
    assert structured.data == data and structured.suppress_output


async def test_an_is_error_result_becomes_an_error_observation(time_server: MCPServer) -> None:
    with pytest.raises(ToolInvokeError, match="Invalid timezone"):
        await time_server.call_tool("get_current_time", {"timezone": "Mars/Olympus_Mons"})
    engine = ToolEngine(await time_server.get_tools())
    result = await engine.invoke("get_current_time", {"timezone": "Mars/Olympus_Mons"})
    assert result.observation.startswith("tool invoke error: ")
    assert "Invalid timezone" in result.observation
    # The session is still good.
    ok = await engine.invoke("get_current_time", {"timezone": "Europe/Paris"})
    assert '"timezone": "Europe/Paris"' in ok.observation


async def test_an_agent_calls_the_mcp_tool_and_gets_the_observation(time_server: MCPServer) -> None:
    model = ScriptedModel(
        [
            Reply.tool_calls(
                ("convert_time", {"source_timezone": "UTC", "time": "08:30", "target_timezone": "UTC"})
            ),
            Reply.text("It is 08:30 in UTC."),
        ],
        features=FC,  # type: ignore[arg-type]
    )
    agent = Agent(model=model, tools=[time_server])
    events = [e async for e in agent.stream("What time is 08:30 UTC in UTC?")]
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.name == "convert_time"
    assert json.loads(finished.observation)["target"]["datetime"].endswith("T08:30:00+00:00")
    assert events[-1].result.text == "It is 08:30 in UTC."  # type: ignore[union-attr]
    # The model was offered the server's tools with the server's schemas.
    offered = {s.name: s.parameters for s in model.requests[0].tools}
    assert offered["get_current_time"]["required"] == ["timezone"]
    # The second run reuses the session (the same process).
    pids = server_pids()
    model2 = ScriptedModel(
        [Reply.tool_calls(("get_current_time", {"timezone": "UTC"})), Reply.text("done")],
        features=FC,  # type: ignore[arg-type]
    )
    await Agent(model=model2, tools=[time_server]).run("now?")
    assert server_pids() == pids


async def test_concurrent_calls_share_one_session(time_server: MCPServer) -> None:
    zones = ["UTC", "Europe/Paris", "Asia/Tokyo", "America/New_York", "Australia/Sydney", "Africa/Cairo"]
    results = await asyncio.gather(
        *(time_server.call_tool("get_current_time", {"timezone": z}) for z in zones)
    )
    got = [json.loads(r[0].text)["timezone"] for r in results]  # type: ignore[union-attr]
    assert got == zones
    assert len(server_pids()) == 1


async def test_reconnects_once_after_the_server_process_was_killed(time_server: MCPServer) -> None:
    await time_server.connect()
    (first,) = server_pids()
    os.kill(first, signal.SIGKILL)
    outputs = await time_server.call_tool("get_current_time", {"timezone": "UTC"})
    assert json.loads(outputs[0].text)["timezone"] == "UTC"  # type: ignore[union-attr]
    (second,) = server_pids()
    assert second != first
    # The tool list survives the reconnect.
    assert {t.name for t in await time_server.get_tools()} == {"get_current_time", "convert_time"}


async def test_aclose_stops_the_process_and_connect_reopens(time_server: MCPServer) -> None:
    await time_server.connect()
    assert time_server.connected and len(server_pids()) == 1
    await time_server.aclose()
    assert not time_server.connected
    await wait_for_no_servers()
    with pytest.raises(MCPConnectionError, match="closed"):
        await time_server.call_tool("get_current_time", {"timezone": "UTC"})
    async with time_server:
        assert len(server_pids()) == 1
    await wait_for_no_servers()


async def test_a_server_that_exits_at_start_gives_its_stderr(caplog: pytest.LogCaptureFixture) -> None:
    script = "import sys; sys.stderr.write('fatal: missing API key\\n'); sys.exit(3)"
    server = MCPServer.stdio(sys.executable, ["-c", script], name="broken")
    with pytest.raises(MCPConnectionError) as info:
        await server.connect()
    message = str(info.value)
    assert "cannot connect to MCP server 'broken'" in message
    assert "closed the connection" in message
    assert "fatal: missing API key" in message
    # Through get_tools the failure is a warning and no tools.
    with caplog.at_level(logging.WARNING, logger="loopwright.tools.mcp"):
        assert await server.get_tools() == []
    assert "running without its tools" in caplog.text and "missing API key" in caplog.text
    await server.aclose()


async def test_a_missing_command_is_a_clear_error_and_the_agent_runs_without_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = MCPServer.stdio("/nonexistent/mcp-server", ["--flag"])
    with pytest.raises(MCPConnectionError, match="No such file or directory"):
        await server.connect()
    model = ScriptedModel([Reply.text("No tools, but here is an answer.")], features=FC)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="loopwright.tools.mcp"):
        result = await Agent(model=model, tools=[server]).run("hello")
    assert result.text == "No tools, but here is an answer."
    assert model.requests[0].tools == []
    assert "mcp-server --flag" in caplog.text
    await server.aclose()


async def test_a_server_that_never_answers_times_out() -> None:
    server = MCPServer.stdio(sys.executable, ["-c", "import time; time.sleep(30)"], connect_timeout=0.5)
    with pytest.raises(MCPConnectionError, match=r"no answer within 0\.5 s"):
        await server.connect()
    await server.aclose()
    await wait_for_no_servers("time.sleep(30)")


# A tiny stdio server written with the SDK: reads its environment, takes its time.
SCRIPT = """
import os
import anyio
from mcp.server.mcpserver import MCPServer
s = MCPServer('scripted', log_level='ERROR')

@s.tool()
def read_env(name: str) -> str:
    return os.environ.get(name, '<unset>')

@s.tool()
async def wait(seconds: float) -> str:
    await anyio.sleep(seconds)
    return 'waited'

s.run()
"""


async def test_prefix_and_env_reach_the_server() -> None:
    server = MCPServer.stdio(
        sys.executable, ["-c", SCRIPT], env={"LW_TEST_VALUE": "forty-two"}, prefix="env_", name="env"
    )
    async with server:
        tools = {t.name: t for t in await server.get_tools()}
        assert set(tools) == {"env_read_env", "env_wait"}
        result = await ToolEngine(tools.values()).invoke("env_read_env", {"name": "LW_TEST_VALUE"})
        assert result.observation.startswith("forty-two")
        # Only a minimal environment is inherited, not all of ours.
        leaked = await ToolEngine(tools.values()).invoke("env_read_env", {"name": "PYTEST_CURRENT_TEST"})
        assert leaked.observation.startswith("<unset>")
    await wait_for_no_servers("scripted")


async def test_a_timed_out_stdio_call_leaves_the_session_usable() -> None:
    async with MCPServer.stdio(sys.executable, ["-c", SCRIPT], name="scripted", tool_timeout=0.3) as server:
        engine = ToolEngine(await server.get_tools())
        client = server._connection.current()
        slow = await engine.invoke("wait", {"seconds": 30})
        assert slow.observation == "tool invoke error: timed out after 0.3 s"
        quick = await engine.invoke("wait", {"seconds": 0})
        assert quick.observation.startswith("waited")
        assert server._connection.current() is client
    await wait_for_no_servers("scripted")


async def test_a_caller_cancelled_while_connecting_does_not_leak_the_session() -> None:
    server = MCPServer.stdio(sys.executable, ["-c", SCRIPT], name="scripted")
    first = asyncio.create_task(server.connect())
    await asyncio.sleep(0.05)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await server.connect()  # the attempt the cancelled caller started goes on and is used
    assert len(server_pids("scripted")) == 1
    await server.aclose()
    await wait_for_no_servers("scripted")


async def test_aclose_while_connecting_stops_the_attempt_and_the_process() -> None:
    server = MCPServer.stdio(sys.executable, ["-c", SCRIPT], name="scripted")
    attempt = asyncio.create_task(server.connect())
    await asyncio.sleep(0.1)
    await server.aclose()
    with pytest.raises(MCPConnectionError, match="cancelled"):
        await attempt
    await wait_for_no_servers("scripted")


async def test_after_a_failure_runs_do_not_retry_at_once_but_connect_does(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    script = f"open({str(starts)!r}, 'a').write('x'); raise SystemExit(1)"
    server = MCPServer.stdio(sys.executable, ["-c", script], name="flaky")
    with pytest.raises(MCPConnectionError):
        await server.connect()
    assert starts.read_text() == "x"
    for _ in range(3):  # each agent run asks for the tools: no new process each time
        assert await server.get_tools() == []
    with pytest.raises(MCPConnectionError, match="closed the connection"):
        await server.call_tool("anything")
    assert starts.read_text() == "x"
    with pytest.raises(MCPConnectionError):
        await server.connect()  # an explicit connect tries again
    assert starts.read_text() == "xx"
    await server.aclose()
