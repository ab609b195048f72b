"""Plugin tools as loopwright tools: schemas from Dify's parameter types, form presets, credentials
(encrypted at rest, validated by the plugin against a SearXNG-like server on 127.0.0.1)."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import pytest

from loopwright.errors import UserInputError
from loopwright.tools import ToolEngine
from loopwright.tools.base import JsonMessage, ToolCredentialError
from loopwright.tools.dify_plugins import DifyPlugins, DifyPluginSource, PluginStore
from loopwright.tools.dify_plugins.credentials import CredentialsError, CredentialStore, redact
from loopwright.tools.dify_plugins.messages import MessageDecoder
from loopwright.tools.dify_plugins.protocol import End, Heartbeat, Invoke, SessionError, Stream, parse_line
from tests.tools.dify_plugins.conftest import SearxngServer


async def test_parameter_schemas_follow_difys_types_and_forms(plugins: DifyPlugins) -> None:
    qr = (await plugins.toolset(DifyPluginSource(plugin="langgenius/qrcode"))).tools[0]
    assert qr.name == "qrcode_generator" and qr.label == "Generate QR Code"
    # Only the llm-form, non-file parameters reach the model.
    assert qr.schema.parameters == {
        "type": "object",
        "properties": {
            "content": {"type": "string", "description": "content text for QR code"},
            "output_filename": {"type": "string", "description": "Filename of the output file"},
        },
        "required": ["content"],
    }
    border = next(p for p in qr.parameters if p.name == "border")
    assert (border.type, border.form, border.default) == ("number", "form", 2)
    assert border.json_schema()["maximum"] == 100.0
    level = next(p for p in qr.parameters if p.name == "error_correction")
    assert level.options == ("L", "M", "Q", "H") and level.default == "M"
    search = (
        await plugins.toolset(
            DifyPluginSource(
                plugin="langgenius/searxng", parameters={"searxng_search": {"search_type": "news"}}
            )
        )
    ).tools[0]
    assert search.form_values == {"search_type": "news"}
    assert list(search.schema.parameters["properties"]) == ["query"]


async def test_a_toolset_picks_tools_and_refuses_unknown_names(
    plugins: DifyPlugins, caplog: pytest.LogCaptureFixture
) -> None:
    chart = await plugins.toolset(
        DifyPluginSource(plugin="langgenius/chart", tools=["bar_chart"], prefix="mpl_")
    )
    assert [t.name for t in chart.tools] == ["mpl_bar_chart"] and chart.labels() == {
        "mpl_bar_chart": "Bar Chart"
    }
    with pytest.raises(UserInputError, match="has no tool 'radar'.*line_chart, bar_chart, pie_chart"):
        await plugins.toolset(DifyPluginSource(plugin="langgenius/chart", tools=["radar"]))
    # A preset for a parameter the plugin does not have is ignored with a warning, as Dify does.
    with caplog.at_level(logging.WARNING):
        stale = await plugins.toolset(
            DifyPluginSource(plugin="langgenius/chart", parameters={"bar_chart": {"colour": "red"}})
        )
    assert "has no parameter 'colour'" in caplog.text
    assert all("colour" not in t.form_values for t in stale.tools)
    with pytest.raises(UserInputError, match="not installed.*loopwright plugins install"):
        await plugins.toolset(DifyPluginSource(plugin="langgenius/google"))
    with pytest.raises(UserInputError, match="no tool provider 'other'"):
        await plugins.toolset(DifyPluginSource(plugin="langgenius/chart", provider="other"))
    assert DifyPluginSource(plugin="langgenius/searxng/searxng").plugin == "langgenius/searxng"
    loose = DifyPluginSource.model_validate(
        {
            "type": "dify_plugin",
            "plugin": "langgenius/chart",
            "provider": None,
            "tools": None,
            "parameters": {"bar_chart": None, "pie_chart": {"data": None}},
            "credentials": None,
        }
    )
    assert loose.parameters == {"bar_chart": {}, "pie_chart": {"data": None}}
    assert len((await plugins.toolset(loose)).tools) == 3
    with pytest.raises(ValueError, match="author/name"):
        DifyPluginSource(plugin="../../etc")


async def test_a_search_runs_through_the_engine_with_stored_credentials(
    plugins: DifyPlugins, store: PluginStore, searxng: SearxngServer
) -> None:
    toolset = await plugins.toolset(DifyPluginSource(plugin="langgenius/searxng"))
    engine = ToolEngine(toolset.tools)
    missing = await engine.invoke("searxng_search", {"query": "dify"})
    assert missing.observation == "Please check your tool provider credentials"
    with pytest.raises(
        ToolCredentialError, match="searxng_base_url.*loopwright plugins credentials langgenius/searxng"
    ):
        await toolset.credentials()
    await plugins.set_credentials(
        store.require("langgenius/searxng"), None, {"searxng_base_url": searxng.url}
    )
    result = await engine.invoke("searxng_search", {"query": "dify"})
    assert [o.data["title"] for o in result.outputs if isinstance(o, JsonMessage)] == [
        "dify result 1",
        "dify result 2",
    ]
    assert '"title": "dify result 1"' in result.observation
    # the select's default ("general") was filled in before the call, as Dify's host does
    assert searxng.queries[-1]["categories"] == "general"


async def test_credentials_are_validated_by_the_plugin(
    plugins: DifyPlugins, store: PluginStore, searxng: SearxngServer
) -> None:
    plugin = store.require("langgenius/searxng")
    toolset = await plugins.toolset(DifyPluginSource(plugin="langgenius/searxng"))
    await toolset.validate_credentials({"searxng_base_url": searxng.url})
    assert searxng.queries[-1]["q"] == "SearXNG"  # the plugin's own check searched once
    searxng.status = 500
    with pytest.raises(ToolCredentialError, match="Error 500: engine failure"):
        await toolset.validate_credentials({"searxng_base_url": searxng.url})
    with pytest.raises(ToolCredentialError):
        await plugins.set_credentials(plugin, None, {"searxng_base_url": searxng.url})
    assert plugins.credentials.get(plugin.folder, "searxng") == {}  # refused: nothing stored
    # A provider without credentials has nothing to check (the plugins' own check fails for them).
    json_tools = await plugins.toolset(DifyPluginSource(plugin="langgenius/json_process"))
    await json_tools.validate_credentials({})


def test_credentials_are_encrypted_at_rest(tmp_path: Path) -> None:
    store = CredentialStore(b"server secret")
    store.set(tmp_path, "google", {"api_key": "sk-very-secret-1234", "region": "eu"})
    raw = (tmp_path / "credentials").read_bytes()
    assert b"sk-very-secret" not in raw and b"api_key" not in raw
    assert (tmp_path / "credentials").stat().st_mode & 0o077 == 0
    assert store.get(tmp_path, "google") == {"api_key": "sk-very-secret-1234", "region": "eu"}
    store.set(tmp_path, "google", {"region": None})
    assert store.get(tmp_path, "google") == {"api_key": "sk-very-secret-1234"}
    assert "secret" not in repr(store)
    with pytest.raises(CredentialsError, match="another secret key"):
        CredentialStore(b"another secret").get(tmp_path, "google")
    assert (
        redact("bad key sk-very-secret-1234 given", {"api_key": "sk-very-secret-1234"}) == "bad key *** given"
    )


def test_protocol_lines_decode_to_events() -> None:
    assert parse_line(b"\n") is None
    assert isinstance(parse_line(b'{"event":"heartbeat","session_id":null,"data":{}}'), Heartbeat)
    stream = parse_line(
        b'{"event":"session","session_id":"s","data":{"type":"stream","data":{"type":"text","message":{"text":"hi"}}}}'
    )
    assert isinstance(stream, Stream) and stream.message["message"] == {"text": "hi"}
    assert parse_line(b'{"event":"session","session_id":"s","data":{"type":"end","data":{}}}') == End("s")
    error = parse_line(
        b'{"event":"session","session_id":"s","data":{"type":"error","data":{"error_type":"ValueError","message":"bad"}}}'
    )
    assert error == SessionError("s", "ValueError", "bad")
    invoke = parse_line(
        b'{"event":"session","session_id":"s","data":{"type":"invoke","data":{"type":"storage","backwards_request_id":"r","request":{"opt":"get","key":"k"}}}}'
    )
    assert invoke == Invoke("s", "storage", "r", {"opt": "get", "key": "k"})


def test_blob_chunks_are_joined_into_one_file() -> None:
    png = b"\x89PNG" + bytes(range(256)) * 40
    decoder = MessageDecoder()
    meta = {"mime_type": "image/png", "filename": "qr.png"}
    pieces = [png[i : i + 8192] for i in range(0, len(png), 8192)]
    outputs = [
        decoder.feed(
            {
                "type": "blob_chunk",
                "message": {
                    "id": "b1",
                    "sequence": i,
                    "total_length": len(png),
                    "blob": base64.b64encode(p).decode(),
                    "end": False,
                },
                "meta": meta,
            }
        )
        for i, p in enumerate(pieces)
    ]
    assert outputs == [None] * len(pieces)
    blob = decoder.feed(
        {
            "type": "blob_chunk",
            "message": {
                "id": "b1",
                "sequence": len(pieces),
                "total_length": len(png),
                "blob": "",
                "end": True,
            },
            "meta": meta,
        }
    )
    assert (
        blob is not None and blob.data == png and (blob.mime_type, blob.filename) == ("image/png", "qr.png")
    )  # type: ignore[union-attr]
    assert json.loads(json.dumps({"ok": True}))  # the decoder keeps nothing once a blob ends
    assert not decoder._chunks


async def test_problems_say_what_keeps_a_toolset_from_working(
    plugins: DifyPlugins, store: PluginStore, searxng: SearxngServer
) -> None:
    assert await plugins.problems(DifyPluginSource(plugin="langgenius/qrcode")) == []
    missing = await plugins.problems(DifyPluginSource(plugin="langgenius/google"))
    assert missing == ["plugin langgenius/google is not installed (loopwright plugins install PATH)"]
    (creds,) = await plugins.problems(DifyPluginSource(plugin="langgenius/searxng"))
    assert "needs credentials for searxng: searxng_base_url" in creds
    assert (
        await plugins.problems(
            DifyPluginSource(plugin="langgenius/searxng", credentials={"searxng_base_url": searxng.url})
        )
        == []
    )
    (tool,) = await plugins.problems(DifyPluginSource(plugin="langgenius/chart", tools=["radar"]))
    assert "has no tool 'radar'" in tool
