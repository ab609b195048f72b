"""OpenAPIToolset and OpenAPISource: loading, filtering, and an agent run that calls an OpenAPI tool."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pydantic
import pytest

from loopwright import Agent
from loopwright.agent.events import ToolCallFinished
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools.base import Toolset
from loopwright.tools.net import NetworkPolicy
from loopwright.tools.openapi import OpenAPISource, OpenAPIToolset, SpecError
from tests.tools.openapi.api_app import TOKEN

LOCAL = NetworkPolicy.from_strings(["127.0.0.1"])
FIXTURES = Path(__file__).parent / "fixtures"


async def test_from_text_validates_at_once() -> None:
    with pytest.raises(SpecError, match="invalid spec"):
        OpenAPIToolset.from_text('{"openapi": "3.0.3", "info": {}, "paths": {}}')
    toolset = OpenAPIToolset.from_text((FIXTURES / "swagger2.yaml").read_text(), source="legacy.yaml")
    assert isinstance(toolset, Toolset)
    tools = await toolset.get_tools()
    assert [t.name for t in tools] == ["getPet", "pets_post", "uploadPhoto"]
    assert tools[0].label == "GET /pets/{petId}" and tools[0].description == "Get a pet."
    assert toolset.spec is not None and toolset.spec.title == "Legacy Pets"


async def test_from_file_path_is_loaded_on_first_use(tmp_path: Path) -> None:
    path = tmp_path / "tree.yaml"
    toolset = OpenAPIToolset.from_file(path)  # nothing read yet
    path.write_text((FIXTURES / "openapi30.yaml").read_text())
    assert {t.name for t in await toolset.get_tools()} == {
        "root_get",
        "nodesidchildren_post",
        "search_nodes_v2",
        "putRaw",
    }
    assert await toolset.get_tools() is await toolset.get_tools()  # loaded once


async def test_include_filters_operations(api: str) -> None:
    toolset = OpenAPIToolset.from_file(f"{api}/openapi.json", policy=LOCAL, include=["get_pet", "login"])
    assert [t.name for t in await toolset.get_tools()] == ["get_pet", "login"]
    bad = OpenAPIToolset.from_file(f"{api}/openapi.json", policy=LOCAL, include=["nope"])
    with pytest.raises(ValueError, match="no operation named 'nope'"):
        await bad.get_tools()


async def test_plugin_manifest_toolset(api: str) -> None:
    toolset = OpenAPIToolset.from_file(f"{api}/.well-known/ai-plugin.json", policy=LOCAL)
    tools = {t.name: t for t in await toolset.get_tools()}
    assert "get_pet" in tools  # servers come from the spec's URL (FastAPI writes none)
    manifest = json.dumps({"schema_version": "v1", "api": {"type": "openapi", "url": f"{api}/openapi.json"}})
    from_text = OpenAPIToolset.from_text(manifest, policy=LOCAL)
    assert "create_pet" in {t.name for t in await from_text.get_tools()}


async def test_agent_calls_an_openapi_tool(api: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    source = OpenAPISource(
        spec=f"{api}/openapi.json",
        auth_type="api_key_header",
        api_key=TOKEN,
        api_key_header_prefix="bearer",
        allow_hosts=["127.0.0.1"],
    )
    model = ScriptedModel(
        [
            Reply.tool_calls(("get_pet", {"pet_id": 42, "verbose": True}), ("secure", {})),
            Reply.text("Pet 42 is there."),
        ],
        features=["tool-call", "multi-tool-call"],
    )
    agent = Agent(model=model, tools=[source.build()])
    events = [e async for e in agent.stream("Look up pet 42")]
    finished = {e.name: e.observation for e in events if isinstance(e, ToolCallFinished)}
    assert finished["get_pet"] == '{"id": 42, "verbose": true, "trace": null, "session": null}'
    assert finished["secure"] == '{"ok": true, "you_sent": "Bearer ***"}'
    offered = {t.name: t.parameters for t in model.requests[0].tools}
    assert offered["get_pet"]["required"] == ["pet_id"]
    assert offered["create_pet"]["properties"]["kind"]["enum"] == ["cat", "dog", "bird"]
    second_prompt = json.dumps([repr(m) for m in model.requests[1].messages])
    assert '\\"id\\": 42' in second_prompt or '"id": 42' in second_prompt
    assert TOKEN not in second_prompt and TOKEN not in caplog.text
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.text == "Pet 42 is there."


def test_source_validation() -> None:
    with pytest.raises(pydantic.ValidationError, match="needs api_key or api_key_env"):
        OpenAPISource(spec="x.yaml", auth_type="api_key_query")
    with pytest.raises(pydantic.ValidationError, match="not an IP address, network or host name"):
        OpenAPISource(spec="x.yaml", allow_hosts=["not a host"])
    with pytest.raises(pydantic.ValidationError, match="absolute"):
        OpenAPISource(spec="x.yaml", server_url="/api")
    with pytest.raises(pydantic.ValidationError):
        OpenAPISource(spec="x.yaml", unknown=1)  # type: ignore[call-arg]
    source = OpenAPISource.model_validate(
        {"type": "openapi", "spec": "x.yaml", "auth_type": "api_key", "api_key": "k"}
    )
    assert source.auth_type == "api_key_header"  # Dify's older name


def test_source_hides_the_key_but_stores_it() -> None:
    source = OpenAPISource(spec="x.yaml", auth_type="api_key_query", api_key="very-secret-key")
    assert "very-secret-key" not in repr(source) and "very-secret-key" not in str(source)
    assert source.model_dump()["api_key"] == "very-secret-key"  # the app's stored configuration
    assert "very-secret-key" not in repr(source.build())


def test_source_key_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    source = OpenAPISource(spec="x.yaml", auth_type="api_key_header", api_key_env="PETS_KEY")
    with pytest.raises(ValueError, match="PETS_KEY"):
        source.auth()
    monkeypatch.setenv("PETS_KEY", "from-env-123")
    auth = source.auth()
    assert auth.api_key == "from-env-123"
    assert "from-env-123" not in source.model_dump_json()  # the stored configuration holds no secret


async def test_source_allow_hosts_extend_the_policy(api: str) -> None:
    blocked = OpenAPISource(spec=f"{api}/openapi.json").build()
    with pytest.raises(Exception, match="blocked request to 127.0.0.1"):
        await blocked.get_tools()
    allowed = OpenAPISource(spec=f"{api}/openapi.json", allow_hosts=["127.0.0.1"]).build()
    assert await allowed.get_tools()
    global_policy = OpenAPISource(spec=f"{api}/openapi.json").build(LOCAL)
    assert await global_policy.get_tools()
