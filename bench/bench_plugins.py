"""Dify plugins over stdio: cold start, warm round trip per tool call, memory per plugin process.

For each plugin (the test plugin's trivial ``echo`` on SDK 0.0.1b65, and real official plugins:
json_process ``parse`` on 0.0.1b65, maths ``eval_expression`` on 0.0.1b65, qrcode ``qrcode_generator``
on 0.4):

- cold start: from spawning the plugin to the first call's answer (the process is stopped between
  repeats; the first start of a fresh environment also compiles its .pyc files and is left out);
- warm round trip: sequential calls on the warm process, p50 / p95, through the host
  (``PluginHost.call``: protocol, session, messages) and through the tool engine (``ToolEngine.invoke``:
  argument casting and the observation as well);
- RSS of the plugin process after the warm calls (``/proc/<pid>/status``).

Environments come from the test cache (``.cache/plugin-envs`` or ``LOOPWRIGHT_PLUGIN_ENVS``), built
on first use. Run:
    .venv/bin/python bench/bench_plugins.py [--calls 300] [--cold 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from loopwright.tools import ToolEngine
from loopwright.tools.dify_plugins import (
    DifyPlugins,
    DifyPluginSource,
    InstalledPlugin,
    PluginHost,
    PluginStore,
    protocol,
)
from loopwright.tools.dify_plugins.credentials import CredentialStore

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("LOOPWRIGHT_DIFY_PLUGIN_FIXTURES", REPO / "tests/fixtures/dify-plugins"))
ENVS = Path(os.environ.get("LOOPWRIGHT_PLUGIN_ENVS", REPO / ".cache/plugin-envs"))
TEST_PLUGIN = REPO / "tests/tools/dify_plugins/plugins/lwtest"

CASES: list[tuple[str, Path, str, dict[str, Any]]] = [
    ("loopwright/lwtest", TEST_PLUGIN, "echo", {"text": "hello"}),
    (
        "langgenius/json_process",
        FIXTURES / "json_process",
        "parse",
        {"content": '{"a": {"b": [1, 2, 3]}}', "json_filter": "$.a.b[1]", "ensure_ascii": True},
    ),
    ("langgenius/maths", FIXTURES / "maths", "eval_expression", {"expression": "(3 + 4) * 12 / 7"}),
    (
        "langgenius/qrcode",
        FIXTURES / "qrcode",
        "qrcode_generator",
        {"content": "https://loopwright.dev", "error_correction": "M", "border": 2},
    ),
]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def one_call(host: PluginHost, plugin: InstalledPlugin, tool: str, params: dict[str, Any]) -> None:
    request = protocol.invoke_tool(plugin.manifest.provider().name, tool, {}, params, "bench")
    async for _ in host.call(plugin, request):
        pass


async def bench(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = PluginStore(Path(tmp) / "plugins", ENVS)
        for _, source, _, _ in CASES:
            store.install(source)
        plugins = DifyPlugins(store, CredentialStore(b"bench"), PluginHost(store))
        host = plugins.host
        head = f"{'cold start s':>13} {'host p50/p95 ms':>17} {'engine p50/p95 ms':>19} {'RSS MB':>7}"
        print(f"{'plugin / tool':44} {head}")
        for plugin_id, _, tool, params in CASES:
            plugin = store.require(plugin_id)
            await one_call(host, plugin, tool, params)  # a first start writes the .pyc files
            colds = []
            for _ in range(args.cold):
                await host.stop(plugin_id)
                started = time.perf_counter()
                await one_call(host, plugin, tool, params)
                colds.append(time.perf_counter() - started)
            for _ in range(20):
                await one_call(host, plugin, tool, params)
            raw = []
            for _ in range(args.calls):
                started = time.perf_counter()
                await one_call(host, plugin, tool, params)
                raw.append((time.perf_counter() - started) * 1000)
            toolset = await plugins.toolset(DifyPluginSource(plugin=plugin_id, tools=[tool]))
            engine = ToolEngine(toolset.tools)
            through = []
            for _ in range(args.calls):
                started = time.perf_counter()
                result = await engine.invoke(tool, params)
                through.append((time.perf_counter() - started) * 1000)
                assert result.meta.error is None, result.observation
            pid = host.processes[plugin_id].pid
            assert pid is not None
            print(
                f"{plugin_id + ' ' + tool:44} {statistics.median(colds):13.2f} "
                f"{pct(raw, 0.5):8.2f}/{pct(raw, 0.95):<8.2f} "
                f"{pct(through, 0.5):9.2f}/{pct(through, 0.95):<9.2f} "
                f"{rss_mb(pid):7.0f}"
            )
        await plugins.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=300, help="warm calls per plugin")
    parser.add_argument("--cold", type=int, default=3, help="cold starts per plugin")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
