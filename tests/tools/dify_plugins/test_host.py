"""The plugin host with real plugins: two SDK generations side by side, sessions sharing a process,
a crash mid-call, a hang, an idle plugin stopped, a silent one killed — and calls after each."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import pytest

from loopwright.tools.base import BlobMessage, TextMessage
from loopwright.tools.dify_plugins import PluginCallError, PluginHost, PluginStore, protocol
from loopwright.tools.dify_plugins.messages import MessageDecoder
from tests.tools.dify_plugins.conftest import SearxngServer


async def call(
    host: PluginHost, store: PluginStore, plugin: str, tool: str, params: dict[str, Any], **kw: Any
) -> list[Any]:
    installed = store.require(plugin)
    provider = installed.manifest.provider().name
    decoder = MessageDecoder()
    request = protocol.invoke_tool(provider, tool, kw.pop("credentials", {}), params, "tester")
    outputs = []
    async for message in host.call(installed, request, **kw):
        output = decoder.feed(message)
        if output is not None:
            outputs.append(output)
    return outputs


def sdk_version(store: PluginStore, plugin: str) -> str:
    env = store.require(plugin).env
    found = list(env.glob("lib/python*/site-packages/dify_plugin-*.dist-info"))
    assert len(found) == 1
    return found[0].name.removeprefix("dify_plugin-").removesuffix(".dist-info")


async def test_two_sdk_generations_run_side_by_side(host: PluginHost, store: PluginStore) -> None:
    assert sdk_version(store, "langgenius/json_process") == "0.0.1b65"
    assert sdk_version(store, "langgenius/qrcode").startswith("0.4")
    parsed, qr = await asyncio.gather(
        call(
            host,
            store,
            "langgenius/json_process",
            "parse",
            {"content": '{"a": {"b": [1, 2, 3]}}', "json_filter": "$.a.b[1]", "ensure_ascii": True},
        ),
        call(
            host,
            store,
            "langgenius/qrcode",
            "qrcode_generator",
            {"content": "https://loopwright.dev", "error_correction": "M", "border": 2},
        ),
    )
    assert parsed == [TextMessage("2")]
    (image,) = qr
    assert isinstance(image, BlobMessage) and image.mime_type == "image/png"
    assert image.data.startswith(b"\x89PNG\r\n\x1a\n") and len(image.data) > 200
    assert {"langgenius/json_process", "langgenius/qrcode"} <= set(host.processes)
    assert all(p.alive for p in host.processes.values())
    # The declaration the plugin wrote on start was read, not taken for a session message.
    assert any(d.get("name") == "json_process" for d in host.processes["langgenius/json_process"].declaration)


async def test_concurrent_calls_share_one_warm_process(host: PluginHost, store: PluginStore) -> None:
    exprs = [f"{i} * 7" for i in range(12)]
    results = await asyncio.gather(
        *(call(host, store, "langgenius/maths", "eval_expression", {"expression": e}) for e in exprs)
    )
    assert [r[0].text for r in results] == [
        f'The result of the expression "{e}" is {i * 7}' for i, e in enumerate(exprs)
    ]
    pid = host.processes["langgenius/maths"].pid
    await call(host, store, "langgenius/maths", "eval_expression", {"expression": "1+1"})
    assert host.processes["langgenius/maths"].pid == pid  # kept warm


async def test_a_plugin_error_is_a_clear_call_error_and_the_plugin_goes_on(
    host: PluginHost, store: PluginStore
) -> None:
    with pytest.raises(PluginCallError, match="Tool `nope` not found"):
        await call(host, store, "langgenius/json_process", "nope", {})
    assert (
        await call(
            host,
            store,
            "langgenius/json_process",
            "parse",
            {"content": '{"x": 5}', "json_filter": "x", "ensure_ascii": True},
        )
    )[0].text == "5"


async def test_a_plugin_that_dies_mid_call_fails_that_call_and_is_started_again(
    host: PluginHost, store: PluginStore, searxng: SearxngServer
) -> None:
    searxng.gate = asyncio.Event()
    creds = {"searxng_base_url": searxng.url}
    params = {"query": "loopwright", "search_type": "general"}
    pending = asyncio.create_task(
        call(host, store, "langgenius/searxng", "searxng_search", params, credentials=creds)
    )
    await asyncio.wait_for(searxng.arrived.wait(), 60)  # the plugin is inside the call
    first = host.processes["langgenius/searxng"]
    assert first.pid is not None
    os.kill(first.pid, signal.SIGKILL)
    with pytest.raises(PluginCallError, match=r"stopped during the call \(exit code -9\)"):
        await asyncio.wait_for(pending, 30)
    searxng.gate.set()
    outputs = await call(host, store, "langgenius/searxng", "searxng_search", params, credentials=creds)
    assert host.processes["langgenius/searxng"].pid != first.pid
    assert [o.data["title"] for o in outputs] == ["loopwright result 1", "loopwright result 2"]
    assert searxng.queries[-1] == {
        "q": "loopwright",
        "time_range": "day",
        "format": "json",
        "categories": "general",
    }


async def test_a_call_that_hangs_ends_at_its_deadline_and_others_still_run(
    host: PluginHost, store: PluginStore, searxng: SearxngServer
) -> None:
    searxng.gate = asyncio.Event()  # the search engine never answers
    creds = {"searxng_base_url": searxng.url}
    with pytest.raises(PluginCallError, match="did not answer within 1 s"):
        await call(
            host, store, "langgenius/searxng", "searxng_search", {"query": "x"}, credentials=creds, timeout=1
        )
    assert not host.processes["langgenius/searxng"].sessions  # the session was given up
    searxng.gate.set()
    assert await call(host, store, "langgenius/searxng", "searxng_search", {"query": "y"}, credentials=creds)


async def test_an_idle_plugin_is_stopped_and_started_again_on_the_next_call(store: PluginStore) -> None:
    now = [1000.0]
    host = PluginHost(store, idle_timeout=300, heartbeat_timeout=10_000, clock=lambda: now[0])
    try:
        await call(
            host, store, "langgenius/regex", "regex_extract", {"content": "a1b22", "expression": r"\d+"}
        )
        proc = host.processes["langgenius/regex"]
        now[0] += 299
        await host.check()
        assert proc.alive
        now[0] += 2
        await host.check()
        assert "langgenius/regex" not in host.processes and not proc.alive
        assert proc.proc is not None and proc.proc.returncode is not None  # really ended
        out = await call(
            host, store, "langgenius/regex", "regex_extract", {"content": "x9", "expression": r"\d"}
        )
        assert out and host.processes["langgenius/regex"] is not proc
    finally:
        await host.aclose()


async def test_a_plugin_that_goes_silent_is_killed_and_its_call_says_so(
    store: PluginStore, searxng: SearxngServer
) -> None:
    now = [0.0]
    host = PluginHost(store, heartbeat_timeout=30, clock=lambda: now[0])
    searxng.gate = asyncio.Event()
    creds = {"searxng_base_url": searxng.url}
    try:
        pending = asyncio.create_task(
            call(host, store, "langgenius/searxng", "searxng_search", {"query": "q"}, credentials=creds)
        )
        await asyncio.wait_for(searxng.arrived.wait(), 60)
        now[0] += 31  # no line from the plugin for 31 s by the host's clock
        await host.check()
        with pytest.raises(PluginCallError, match="stopped answering"):
            await asyncio.wait_for(pending, 30)
    finally:
        searxng.gate.set()
        await host.aclose()


async def test_closing_the_host_stops_every_plugin(store: PluginStore) -> None:
    host = PluginHost(store)
    await call(host, store, "langgenius/echarts", "bar_chart", {"data": "1;2;3", "x_axis": "a;b;c"})
    procs = list(host.processes.values())
    await host.aclose()
    assert procs and all(p.proc is not None and p.proc.returncode is not None for p in procs)
    with pytest.raises(PluginCallError, match="closed"):
        await call(host, store, "langgenius/echarts", "bar_chart", {"data": "1"})
