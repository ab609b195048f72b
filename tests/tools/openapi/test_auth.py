"""Credentials: header (basic / bearer / custom) and query keys; secrets never in observations, errors,
logs or reprs, and never sent to another origin."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from loopwright.tools.engine import ToolEngine
from loopwright.tools.net import NetworkPolicy
from loopwright.tools.openapi import APIAuth, OpenAPIToolset
from tests.live_server import serving
from tests.tools.openapi.api_app import QUERY_KEY, TOKEN, Seen, make_app

LOCAL = NetworkPolicy.from_strings(["127.0.0.1"])


async def engine_for(url: str, auth: APIAuth, policy: NetworkPolicy = LOCAL) -> ToolEngine:
    toolset = OpenAPIToolset.from_file(f"{url}/openapi.json", auth=auth, policy=policy)
    return ToolEngine(await toolset.get_tools())


def test_header_values() -> None:
    assert APIAuth.api_key_header("k", prefix="bearer").header_value == "Bearer k"
    assert APIAuth.api_key_header("k", prefix="basic").header_value == "Basic k"
    assert APIAuth.api_key_header("k").header_value == "k"


def test_apply_leaves_the_original_request_alone() -> None:
    request = httpx.Request("GET", "https://api.example/x?a=1", headers={"X-A": "1"})
    header = APIAuth.api_key_header("secret-1", header="X-API-Key").apply(request)
    assert header.headers["X-API-Key"] == "secret-1" and "X-API-Key" not in request.headers
    query = APIAuth.api_key_query("secret-2", param="token").apply(request)
    assert str(query.url) == "https://api.example/x?a=1&token=secret-2" and "token" not in str(request.url)
    assert APIAuth().apply(request) is request


def test_a_key_is_required() -> None:
    with pytest.raises(ValueError, match="needs an API key"):
        APIAuth("api_key_header")
    with pytest.raises(ValueError, match="query parameter name"):
        APIAuth.api_key_query("k", param=" ")


def test_repr_and_redaction_hide_the_key() -> None:
    auth = APIAuth.api_key_query("a b&c/secret", param="key")
    assert "secret" not in repr(auth) and "secret" not in str(auth)
    assert auth.redact("url ?key=a+b%26c%2Fsecret and a b&c/secret") == "url ?key=*** and ***"
    assert auth.redact_data({"k": ["a b&c/secret"], "a b&c/secret": 1}) == {"k": ["***"], "***": 1}
    assert APIAuth.api_key_header("abc").redact("abc") == "abc"  # too short to scrub safely


async def test_bearer_header(served: tuple[str, Seen], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    url, seen = served
    engine = await engine_for(url, APIAuth.api_key_header(TOKEN, prefix="bearer"))
    result = await engine.invoke("secure", {})
    assert result.observation == '{"ok": true, "you_sent": "Bearer ***"}'  # the echo is scrubbed
    assert seen.requests[-1]["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in repr(result.outputs) and TOKEN not in caplog.text


async def test_wrong_key_error_does_not_echo_it(
    served: tuple[str, Seen], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "wrong-key-123456"
    engine = await engine_for(served[0], APIAuth.api_key_header(wrong, prefix="bearer"))
    result = await engine.invoke("secure", {})
    assert result.observation == (
        'tool invoke error: Request failed with status code 401 and {"detail":"bad credentials: Bearer ***"}'
    )
    assert wrong not in caplog.text and wrong not in str(result.meta.to_dict())


async def test_custom_and_basic_headers(served: tuple[str, Seen]) -> None:
    url, seen = served
    engine = await engine_for(url, APIAuth.api_key_header("custom-key-77", header="X-API-Key"))
    await engine.invoke("get_text", {})
    assert seen.requests[-1]["headers"]["x-api-key"] == "custom-key-77"
    engine = await engine_for(url, APIAuth.api_key_header("dXNlcjpwYXNz", prefix="basic"))
    await engine.invoke("get_text", {})
    assert seen.requests[-1]["headers"]["authorization"] == "Basic dXNlcjpwYXNz"


async def test_query_key(served: tuple[str, Seen], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    url, seen = served
    engine = await engine_for(url, APIAuth.api_key_query(QUERY_KEY, param="api_key"))
    result = await engine.invoke("secure_query", {})
    assert result.observation == '{"ok": true, "query": "api_key=***"}'
    assert seen.requests[-1]["query"] == f"api_key={QUERY_KEY}"
    assert QUERY_KEY not in caplog.text and "HTTP Request: GET" in caplog.text  # httpx logged, no key


async def test_no_credentials_for_another_origin(served: tuple[str, Seen]) -> None:
    url, seen = served
    other_seen = Seen()
    async with serving(make_app(other_seen), host="127.0.0.2") as other:
        policy = NetworkPolicy.from_strings(["127.0.0.0/8"])
        for auth in (
            APIAuth.api_key_header("hdr-secret-1", header="X-API-Key"),
            APIAuth.api_key_query("qry-secret-2", param="api_key"),
        ):
            engine = await engine_for(url, auth, policy)
            result = await engine.invoke("go_elsewhere", {"to": f"{other}/text"})
            assert result.observation == "just some text"  # the redirect was followed
            assert seen.requests[-1]["path"] == "/go-elsewhere"
            sent = other_seen.requests[-1]
            assert sent["path"] == "/text"
            assert "x-api-key" not in sent["headers"] and "secret" not in sent["query"]
        first_hop: dict[str, Any] = seen.requests[-1]
        assert first_hop["query"].endswith("api_key=qry-secret-2")  # the API itself got the key
