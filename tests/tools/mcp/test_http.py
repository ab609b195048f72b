"""MCPServer over streamable HTTP and legacy SSE, against the SDK's own server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator

import pytest

from loopwright import Agent
from loopwright.agent import ToolCallFinished
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools import BlobMessage, JsonMessage, LinkMessage, TextMessage, ToolEngine
from loopwright.tools.mcp import MCPConnectionError, MCPServer
from loopwright.tools.mcp.http import display_url
from loopwright.tools.net import NetworkPolicy
from tests.live_server import serving
from tests.tools.mcp.mcp_app import PNG, WAV, Record, build_server, recording_headers

LOOPBACK = NetworkPolicy.from_strings(["127.0.0.1"])
FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


@pytest.fixture
def record() -> Record:
    return Record()


@pytest.fixture
async def base_url(record: Record) -> AsyncIterator[str]:
    app = recording_headers(build_server(record).streamable_http_app(), record)
    async with serving(app) as url:
        yield url


@pytest.fixture
async def server(base_url: str) -> AsyncIterator[MCPServer]:
    mcp = MCPServer.http(f"{base_url}/mcp", bearer_token="s3cret-token", policy=LOOPBACK)
    try:
        yield mcp
    finally:
        await mcp.aclose()


async def test_lists_tools_over_streamable_http_with_the_bearer_token(
    server: MCPServer, record: Record
) -> None:
    tools = {t.name: t for t in await server.get_tools()}
    assert set(tools) == {"echo", "lookup", "draw", "weather", "assorted", "broken", "slow"}
    echo = tools["echo"].schema.parameters
    assert echo["required"] == ["text"]
    assert echo["properties"]["times"] == {"default": 1, "title": "Times", "type": "integer"}
    assert record.authorization and set(record.authorization) == {"Bearer s3cret-token"}
    assert "s3cret" not in repr(server)


async def test_text_json_text_and_structured_content(server: MCPServer) -> None:
    assert await server.call_tool("echo", {"text": "hi", "times": 2}) == [
        TextMessage("hi hi"),
        JsonMessage({"result": "hi hi"}, suppress_output=True),  # structured echo of the text
    ]
    text, data = await server.call_tool("lookup", {"key": "k"})
    assert isinstance(text, TextMessage) and text.text == '{"key": "k", "values": [1, 2, 3]}'
    assert data == JsonMessage({"key": "k", "values": [1, 2, 3]}, suppress_output=True)
    weather = await server.call_tool("weather", {"city": "Oslo"})
    assert weather == [
        TextMessage("It is 21.5 °C in Oslo."),
        JsonMessage({"city": "Oslo", "temperature": 21.5}, suppress_output=True),
    ]
    # The model reads each value once.
    result = await ToolEngine(await server.get_tools()).invoke("lookup", {"key": "k"})
    assert result.observation == '{"key": "k", "values": [1, 2, 3]}'


async def test_images_audio_resources_and_links(server: MCPServer) -> None:
    assert await server.call_tool("draw") == [BlobMessage(PNG, mime_type="image/png", filename="image.png")]
    audio, notes, pdf, link = await server.call_tool("assorted")
    assert audio == BlobMessage(WAV, mime_type="audio/wav", filename="audio.wav")
    assert notes == TextMessage("some notes")
    assert pdf == BlobMessage(b"%PDF-1.4", mime_type="application/pdf", filename="report.pdf")
    assert link == LinkMessage("https://example.com/doc")
    engine = ToolEngine(await server.get_tools())
    result = await engine.invoke("assorted", {})
    assert result.observation == (
        f"file created: audio.wav (audio/wav, {len(WAV)} bytes)some notes"
        "file created: report.pdf (application/pdf, 8 bytes)"
        "result link: https://example.com/doc. please tell user to check it."
    )
    assert len(result.files) == 2
    drawn = await engine.invoke("draw", {})
    assert drawn.files == [BlobMessage(PNG, mime_type="image/png", filename="image.png")]


async def test_an_is_error_result_is_an_error_observation(server: MCPServer) -> None:
    engine = ToolEngine(await server.get_tools())
    result = await engine.invoke("broken", {})
    assert result.observation == "tool invoke error: the disk is full"
    unknown = await server.get_tools()
    assert "broken" in {t.name for t in unknown}


async def test_a_timed_out_call_is_cancelled_and_the_session_goes_on(
    server: MCPServer, record: Record
) -> None:
    engine = ToolEngine(await server.get_tools(), default_timeout=0.3)
    result = await engine.invoke("slow", {"seconds": 30})
    assert result.observation == "tool invoke error: timed out after 0.3 s"
    assert record.slow_started.is_set()
    for _ in range(200):  # the server hears of the cancellation and stops the handler
        if record.cancelled:
            break
        await asyncio.sleep(0.01)
    assert record.cancelled == 1
    client_before = server._connection.current()
    again = await engine.invoke("echo", {"text": "still here"})
    assert again.observation == "still here"
    assert server._connection.current() is client_before  # no reconnect was needed


async def test_an_agent_runs_two_mcp_calls_in_one_round(server: MCPServer) -> None:
    model = ScriptedModel(
        [
            Reply.tool_calls(("echo", {"text": "ping"}, "c1"), ("draw", {}, "c2")),
            Reply.text("Sent you a picture."),
        ],
        features=FC,  # type: ignore[arg-type]
    )
    events = [e async for e in Agent(model=model, tools=[server]).stream("draw")]
    finished = {e.id: e for e in events if isinstance(e, ToolCallFinished)}
    assert finished["c1"].observation == "ping"
    assert finished["c2"].files == [BlobMessage(PNG, mime_type="image/png", filename="image.png")]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.text == "Sent you a picture."
    assert result.files == [BlobMessage(PNG, mime_type="image/png", filename="image.png")]


async def test_the_default_policy_refuses_loopback(
    base_url: str, record: Record, caplog: pytest.LogCaptureFixture
) -> None:
    guarded = MCPServer.http(f"{base_url}/mcp")
    with pytest.raises(MCPConnectionError) as info:
        await guarded.connect()
    assert "blocked request to 127.0.0.1: a loopback address" in str(info.value)
    assert "allow-list" in str(info.value)
    with caplog.at_level(logging.WARNING, logger="loopwright.tools.mcp"):
        assert await guarded.get_tools() == []
    assert "blocked request" in caplog.text
    assert record.authorization == []  # nothing reached the server
    await guarded.aclose()


async def test_a_refused_connection_is_a_clear_error() -> None:
    server = MCPServer.http(f"http://127.0.0.1:{free_port()}/mcp", policy=LOOPBACK)
    with pytest.raises(MCPConnectionError, match="ConnectError: All connection attempts failed"):
        await server.connect()
    await server.aclose()


async def test_a_server_that_went_away_gives_a_clear_error_after_one_retry(record: Record) -> None:
    app = recording_headers(build_server(record).streamable_http_app(), record)
    async with serving(app) as url:
        server = MCPServer.http(f"{url}/mcp", policy=LOOPBACK)
        engine = ToolEngine(await server.get_tools())
        assert (await engine.invoke("echo", {"text": "a"})).observation == "a"
    result = await engine.invoke("echo", {"text": "b"})
    assert result.observation.startswith("tool invoke error: ")
    assert "ConnectError" in result.observation
    await server.aclose()


async def test_reconnects_after_the_http_server_restarted(record: Record) -> None:
    port = free_port()
    async with serving(build_server(record).streamable_http_app(), port=port) as url:
        server = MCPServer.http(f"{url}/mcp", policy=LOOPBACK)
        engine = ToolEngine(await server.get_tools())
        assert (await engine.invoke("echo", {"text": "before"})).observation == "before"
    async with serving(build_server(record).streamable_http_app(), port=port):
        # A new server process behind the same URL: whether the negotiated revision keeps a session (and the
        # call reconnects once) or not (2026-07-28 is per request), the call succeeds.
        assert (await engine.invoke("echo", {"text": "after"})).observation == "after"
        await server.aclose()


async def test_legacy_sse_transport(record: Record) -> None:
    app = recording_headers(build_server(record).sse_app(), record)
    async with (
        serving(app) as url,
        MCPServer.http(
            f"{url}/sse", headers={"Authorization": "Token abc"}, transport="sse", policy=LOOPBACK
        ) as server,
    ):
        assert "echo" in {t.name for t in await server.get_tools()}
        outputs = await server.call_tool("echo", {"text": "over sse"})
        assert outputs[0] == TextMessage("over sse")
    assert "Token abc" in record.authorization


def test_display_url_drops_credentials_and_query() -> None:
    assert (
        display_url("https://user:pw@mcp.example.com:8443/mcp?key=abc#x")
        == "https://mcp.example.com:8443/mcp"
    )
    assert display_url("http://[::1]:9000/mcp") == "http://[::1]:9000/mcp"
    server = MCPServer.http("https://user:pw@mcp.example.com/mcp?api_key=abc")
    assert server.name == "https://mcp.example.com/mcp"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
