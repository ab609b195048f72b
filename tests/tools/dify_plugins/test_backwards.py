"""A plugin's calls back into the host, with a small test plugin of our own (``plugins/lwtest``, on
SDK 0.0.1b65): storage as a key-value store per plugin, the LLM through the app's model, credential
validation refused by the plugin, and a clear error for what the host does not offer."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from loopwright.model.base import Model
from loopwright.testing import ScriptedModel
from loopwright.tools import ToolEngine
from loopwright.tools.base import JsonMessage, ToolContext, ToolCredentialError
from loopwright.tools.dify_plugins import (
    DifyPlugins,
    DifyPluginSource,
    PluginHost,
    PluginStore,
    backwards,
    protocol,
)
from loopwright.tools.dify_plugins.credentials import CredentialStore
from loopwright.tools.dify_plugins.environment import PluginInstallError, probe_interpreter
from loopwright.tools.dify_plugins.sdk_patch import MARKER
from loopwright.tools.dify_plugins.storage import PluginStorage
from loopwright.tools.dify_plugins.uploads import UploadReceiver
from loopwright.tools.files import LocalFileStorage, ToolFiles
from tests.tools.dify_plugins.conftest import ENVS_CACHE, SECRET

TEST_PLUGIN = Path(__file__).parent / "plugins" / "lwtest"


@pytest.fixture
async def lwtest(tmp_path: Path) -> AsyncIterator[tuple[DifyPlugins, ScriptedModel]]:
    store = PluginStore(tmp_path / "plugins", ENVS_CACHE)
    store.install(TEST_PLUGIN)
    model = ScriptedModel(["Paris.", "Berlin."])
    seen: list[ToolContext] = []

    async def model_for(ctx: ToolContext) -> Model | None:
        seen.append(ctx)
        return model if ctx.app_id == "app-1" else None

    plugins = DifyPlugins(
        store, CredentialStore(SECRET), PluginHost(store, model_for=model_for, call_timeout=60)
    )
    yield plugins, model
    await plugins.aclose()


async def test_storage_keeps_values_per_plugin_across_restarts(
    lwtest: tuple[DifyPlugins, ScriptedModel],
) -> None:
    plugins, _ = lwtest
    engine = ToolEngine((await plugins.toolset(DifyPluginSource(plugin="loopwright/lwtest"))).tools)
    first = await engine.invoke("remember", {"key": "colour", "value": "blue"})
    assert first.observation == "previous: (nothing)"
    await plugins.host.stop("loopwright/lwtest")  # the value is the host's, not the process's
    second = await engine.invoke("remember", {"key": "colour", "value": "green"})
    assert second.observation == "previous: blue"


async def test_the_plugin_asks_the_apps_model(lwtest: tuple[DifyPlugins, ScriptedModel]) -> None:
    plugins, model = lwtest
    engine = ToolEngine((await plugins.toolset(DifyPluginSource(plugin="loopwright/lwtest"))).tools)
    answer = await engine.invoke(
        "ask", {"question": "Capital of France?"}, ToolContext(user_id="u", app_id="app-1")
    )
    assert answer.observation == "model says: Paris."
    assert model.requests[0].messages[-1].content == "Capital of France?"  # type: ignore[union-attr]
    # No model for this app: the plugin gets a clear error at once instead of waiting.
    refused = await engine.invoke("ask", {"question": "?"}, ToolContext(user_id="u", app_id="other"))
    assert "no model is available to plugins here" in refused.observation


async def test_a_file_the_plugin_uploads_becomes_a_tool_file(tmp_path: Path) -> None:
    store = PluginStore(tmp_path / "plugins", ENVS_CACHE)
    store.install(TEST_PLUGIN)
    files = ToolFiles(LocalFileStorage(tmp_path / "files"), b"files-secret")

    async def open_files() -> ToolFiles:
        return files

    host = PluginHost(store, uploads=UploadReceiver(open_files), call_timeout=60)
    plugins = DifyPlugins(store, CredentialStore(SECRET), host)
    try:
        engine = ToolEngine((await plugins.toolset(DifyPluginSource(plugin="loopwright/lwtest"))).tools)
        ctx = ToolContext(user_id="alice", conversation_id="c1", app_id="app-1")
        result = await engine.invoke("upload", {"text": "uploaded by a plugin"}, ctx)
        assert result.meta.error is None, result.observation
        record = next(o.data for o in result.outputs if isinstance(o, JsonMessage))
        assert (record["name"], record["size"]) == ("note.txt", 20)
        stored = await files.get(record["id"])
        assert stored is not None and await files.read(stored) == b"uploaded by a plugin"
        assert (stored.user_id, stored.conversation_id, stored.mime_type) == ("alice", "c1", "text/plain")
        assert record["mime_type"] == "text/plain"
    finally:
        await plugins.aclose()


async def test_an_upload_url_works_once(tmp_path: Path) -> None:
    files = ToolFiles(LocalFileStorage(tmp_path / "files"), b"files-secret")

    async def open_files() -> ToolFiles:
        return files

    receiver = UploadReceiver(open_files)
    try:
        url = await receiver.url_for(ToolContext(user_id="u"), "a.bin", "application/octet-stream")
        assert url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient() as client:
            first = await client.post(url, files={"file": ("a.bin", b"\x00\x01", "application/octet-stream")})
            again = await client.post(url, files={"file": ("a.bin", b"\x00\x01", "application/octet-stream")})
            forged = await client.post(url.rsplit("/", 1)[0] + "/guess", files={"file": ("x", b"x")})
        assert first.status_code == 201 and first.json()["size"] == 2
        assert again.status_code == 403 and forged.status_code == 403
    finally:
        await receiver.aclose()


async def test_a_secret_a_plugin_quotes_in_an_error_is_cut_out(
    lwtest: tuple[DifyPlugins, ScriptedModel],
) -> None:
    plugins, _ = lwtest
    source = DifyPluginSource(plugin="loopwright/lwtest", credentials={"token": "sk-live-0123456789"})
    engine = ToolEngine((await plugins.toolset(source)).tools)
    result = await engine.invoke("echo", {"text": "leak"})
    assert result.observation == "tool invoke error: ValueError: the service refused token ***"
    assert "sk-live" not in repr(result) and "sk-live" not in repr(source)


async def test_the_plugin_checks_its_credentials(lwtest: tuple[DifyPlugins, ScriptedModel]) -> None:
    plugins, _ = lwtest
    plugin = plugins.store.require("loopwright/lwtest")
    with pytest.raises(ToolCredentialError, match="token rejected"):
        await plugins.set_credentials(plugin, None, {"token": "bad-token"})
    await plugins.set_credentials(plugin, None, {"token": "good-token"})
    assert plugins.credentials.get(plugin.folder, "lwtest") == {"token": "good-token"}


async def test_backwards_calls_the_host_does_not_offer_get_a_clear_error(tmp_path: Path) -> None:
    storage = PluginStorage(tmp_path)
    with pytest.raises(backwards.BackwardsError, match="does not offer 'app'"):
        [x async for x in backwards.answer("app", {}, storage, ToolContext(), None)]
    with pytest.raises(backwards.BackwardsError, match="no stored value"):
        [
            x
            async for x in backwards.answer(
                "storage", {"opt": "get", "key": "k"}, storage, ToolContext(), None
            )
        ]
    out = [
        x
        async for x in backwards.answer(
            "storage", {"opt": "set", "key": "k", "value": "6869"}, storage, ToolContext(), None
        )
    ]
    assert out == [{"data": "ok"}] and await storage.get("k") == b"hi"


async def test_a_plugin_that_cannot_start_says_why(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(TEST_PLUGIN, broken)
    (broken / "main.py").write_text('raise RuntimeError("broken on purpose")\n')
    store = PluginStore(tmp_path / "plugins", ENVS_CACHE)
    store.install(broken)
    plugins = DifyPlugins(store, CredentialStore(SECRET), PluginHost(store, call_timeout=60))
    try:
        engine = ToolEngine((await plugins.toolset(DifyPluginSource(plugin="loopwright/lwtest"))).tools)
        result = await engine.invoke("echo", {"text": "hi"})
        assert result.observation.startswith(
            "tool invoke error: plugin loopwright/lwtest stopped during the call (exit code 1)"
        )
        assert "RuntimeError: broken on purpose" in result.observation
    finally:
        await plugins.aclose()


def python_312() -> str | None:
    """A Python 3.12 or newer on this machine (``LOOPWRIGHT_TEST_PYTHON312``, ``python3.12``/``3.13`` on
    PATH, or a pyenv version), or None."""
    candidates = [os.environ.get("LOOPWRIGHT_TEST_PYTHON312", "")]
    candidates += [shutil.which(n) or "" for n in ("python3.13", "python3.12")]
    candidates += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.1[2-9]*/bin/python"))
    for path in filter(None, candidates):
        try:
            if probe_interpreter(path).version >= (3, 12):
                return path
        except PluginInstallError:
            continue
    return None


async def test_a_plugin_on_sdk_0_10_runs_on_python_312_beside_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = python_312()
    if python is None:
        pytest.skip("no Python 3.12 on this machine")
    newer = tmp_path / "newer"
    shutil.copytree(TEST_PLUGIN, newer)
    (newer / "requirements.txt").write_text("dify_plugin==0.10.2\n")  # needs Python 3.12
    monkeypatch.setenv("LOOPWRIGHT_PLUGIN_PYTHON", python)
    store = PluginStore(tmp_path / "plugins", ENVS_CACHE)
    plugin = store.install(newer)
    assert plugin.python in ("3.12", "3.13", "3.14")
    model = ScriptedModel(["Rome."])

    async def model_for(ctx: ToolContext) -> Model | None:
        return model

    plugins = DifyPlugins(
        store, CredentialStore(SECRET), PluginHost(store, model_for=model_for, call_timeout=60)
    )
    try:
        engine = ToolEngine((await plugins.toolset(DifyPluginSource(plugin="loopwright/lwtest"))).tools)
        assert (await engine.invoke("echo", {"text": "new SDK"})).observation == "new SDK"
        assert (
            await engine.invoke("remember", {"key": "a", "value": "1"})
        ).observation == "previous: (nothing)"
        assert (await engine.invoke("remember", {"key": "a", "value": "2"})).observation == "previous: 1"
        assert (
            await engine.invoke("ask", {"question": "Capital of Italy?"})
        ).observation == "model says: Rome."
    finally:
        await plugins.aclose()


async def test_a_plugin_that_ignores_terminate_is_killed(tmp_path: Path) -> None:
    stubborn = tmp_path / "stubborn"
    shutil.copytree(TEST_PLUGIN, stubborn)
    main = (stubborn / "main.py").read_text()
    (stubborn / "main.py").write_text("import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + main)
    store = PluginStore(tmp_path / "plugins", ENVS_CACHE)
    store.install(stubborn)
    host = PluginHost(store, call_timeout=60)
    try:
        plugin = store.require("loopwright/lwtest")
        request = protocol.invoke_tool("lwtest", "echo", {}, {"text": "x"}, "u")
        assert [m async for m in host.call(plugin, request)]
        proc = host.processes["loopwright/lwtest"]
        await proc.stop(grace=0.5)
        assert proc.proc is not None and proc.proc.returncode == -signal.SIGKILL
    finally:
        await host.aclose()


async def test_an_old_sdk_gets_the_linear_time_reader_and_large_inputs_arrive_whole(tmp_path: Path) -> None:
    store = PluginStore(tmp_path / "plugins", ENVS_CACHE)
    plugin = store.install(TEST_PLUGIN)  # dify_plugin 0.0.1b65: the 512-byte reader
    (reader,) = plugin.env.glob("lib/python3*/site-packages/dify_plugin/core/server/stdio/request_reader.py")
    assert MARKER in reader.read_text()
    assert reader.stat().st_nlink == 1  # its own file: uv's cache (hard-linked files) is left as it was
    host = PluginHost(store, call_timeout=60)
    try:
        text = "".join(chr(0x41 + i % 26) for i in range(2_000_000))
        request = protocol.invoke_tool("lwtest", "echo", {}, {"text": text}, "u")
        (message,) = [m async for m in host.call(plugin, request)]
        assert message["message"]["text"] == text
    finally:
        await host.aclose()
