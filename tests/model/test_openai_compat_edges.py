"""OpenAICompatModel's pure conversions and error mapping at their edges: the shapes a real server
rarely sends (a second choice, the legacy ``function_call``, draft-4 tuple ``items``) and the SDK
errors no canned server produces (a timeout, an error without a status). No server needed."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import Choice, ChoiceDelta

from loopwright.model.entities import ToolSchema, UserMessage
from loopwright.model.errors import (
    ContextTooLongError,
    ModelAuthError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelRequestError,
    ModelUnavailableError,
)
from loopwright.model.openai_compat import (
    OpenAICompatModel,
    build_request,
    convert_chunk,
    ensure_array_items,
)

_BASE = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}


def chunk(*choices: dict[str, Any], usage: dict[str, Any] | None = None) -> ChatCompletionChunk:
    data: dict[str, Any] = {**_BASE, "choices": list(choices)}
    if usage is not None:
        data["usage"] = usage
    return ChatCompletionChunk.model_validate(data)


def shape(c: Any) -> Any:
    if c is None:
        return None
    calls = None if c.tool_calls is None else [(d.index, d.id, d.name, d.arguments) for d in c.tool_calls]
    usage = (
        None if c.usage is None else (c.usage.prompt_tokens, c.usage.completion_tokens, c.usage.total_tokens)
    )
    return (c.text, calls, usage, c.finish_reason)


# --- convert_chunk ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sdk", "expected"),
    [
        # Only the first choice is ours: a second one's text, calls and finish are ignored.
        (
            chunk(
                {"index": 1, "delta": {"content": "other"}, "finish_reason": "stop"},
                {"index": 0, "delta": {"content": "mine"}},
            ),
            ("mine", None, None, None),
        ),
        (chunk({"index": 1, "delta": {"content": "other"}, "finish_reason": "stop"}), None),
        # Two entries for choice 0 (some proxies split them): texts join, the last finish wins.
        (
            chunk(
                {"index": 0, "delta": {"content": "a"}, "finish_reason": "length"},
                {"index": 0, "delta": {"content": "b"}},
            ),
            ("ab", None, None, "length"),
        ),
        # Text and tool calls in one delta; a call without a function; several calls.
        (
            chunk(
                {
                    "index": 0,
                    "delta": {
                        "content": "x",
                        "tool_calls": [
                            {"index": 0, "id": "", "function": {"name": "", "arguments": None}},
                            {"index": 3},
                        ],
                    },
                }
            ),
            ("x", [(0, None, None, ""), (3, None, None, "")], None, None),
        ),
        # The legacy single-function shape.
        (
            chunk({"index": 0, "delta": {"function_call": {"name": "f", "arguments": '{"a":'}}}),
            ("", [(0, None, "f", '{"a":')], None, None),
        ),
        (
            chunk({"index": 0, "delta": {"function_call": {"arguments": "1}"}}}),
            ("", [(0, None, None, "1}")], None, None),
        ),
        # tool_calls win over function_call; an empty tool_calls list lets function_call through.
        (
            chunk(
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [{"index": 0, "function": {"arguments": "1"}}],
                        "function_call": {"name": "g"},
                    },
                }
            ),
            ("", [(0, None, None, "1")], None, None),
        ),
        (
            chunk({"index": 0, "delta": {"tool_calls": [], "function_call": {"name": "g"}}}),
            ("", [(0, None, "g", "")], None, None),
        ),
        # A later choice-0 entry with function_call replaces the calls gathered before it.
        (
            chunk(
                {"index": 0, "delta": {"tool_calls": [{"index": 2, "function": {"arguments": "1"}}]}},
                {"index": 0, "delta": {"function_call": {"name": "h"}}},
            ),
            ("", [(0, None, "h", "")], None, None),
        ),
        # An empty content string is no text; a chunk with only an empty delta is nothing.
        (chunk({"index": 0, "delta": {"content": ""}}), None),
        (chunk(), None),
        # Usage with missing counts: zeros, the total computed.
        (
            chunk(usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 0}),
            ("", None, (3, 4, 7), None),
        ),
        (
            chunk(
                {"index": 0, "delta": {"content": "t"}, "finish_reason": "stop"},
                usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 5},
            ),
            ("t", None, (1, 2, 5), "stop"),
        ),
    ],
)
def test_chunk_edges(sdk: ChatCompletionChunk, expected: Any) -> None:
    assert shape(convert_chunk(sdk)) == expected


def test_a_chunk_without_choices_or_delta_is_read_as_nothing() -> None:
    # What a lenient server's chunk parses into without validation: choices None, a delta None.
    bare = ChatCompletionChunk.model_construct(**_BASE, choices=None, usage=None)
    assert convert_chunk(bare) is None
    no_delta = ChatCompletionChunk.model_construct(
        **_BASE, choices=[Choice.model_construct(index=0, delta=None, finish_reason="stop")], usage=None
    )
    assert shape(convert_chunk(no_delta)) == ("", None, None, "stop")
    none_index = ChatCompletionChunk.model_construct(
        **_BASE,
        choices=[
            Choice.model_construct(
                index=None, delta=ChoiceDelta.model_construct(content="z"), finish_reason=None
            )
        ],
        usage=None,
    )
    assert shape(convert_chunk(none_index)) == ("z", None, None, None)


def test_a_tool_call_without_an_index_takes_its_position() -> None:
    delta = ChoiceDelta.model_validate(
        {"tool_calls": [{"index": 0, "function": {"name": "a"}}, {"index": 0, "function": {"name": "b"}}]}
    )
    assert delta.tool_calls is not None
    delta.tool_calls[1].index = None  # type: ignore[assignment]
    sdk = ChatCompletionChunk.model_construct(
        **_BASE, choices=[Choice.model_construct(index=0, delta=delta, finish_reason=None)], usage=None
    )
    assert shape(convert_chunk(sdk)) == ("", [(0, None, "a", ""), (1, None, "b", "")], None, None)


def test_chunk_usage_is_priced() -> None:
    priced = convert_chunk(
        chunk(usage={"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}),
        (Decimal("1"), Decimal("2")),
    )
    assert priced is not None and priced.usage is not None
    assert priced.usage.total_price == Decimal("0.0000500")


# --- ensure_array_items ------------------------------------------------------------------------------


def test_array_items_in_every_schema_position() -> None:
    assert ensure_array_items("not a schema") == "not a schema"
    assert ensure_array_items(None) is None
    schema = {
        "type": "object",
        "patternProperties": {"^x": {"type": "array"}},
        "definitions": {"D": {"type": "array"}},
        "dependentSchemas": {"a": {"type": "array"}},
        "oneOf": [{"type": "array"}, True],
        "allOf": [{"type": "array", "items": {"type": "number"}}],
        "prefixItems": [{"type": "array"}],
        "not": {"type": "array"},
        "contains": {"type": "array"},
        "if": {"type": "array"},
        "then": {"type": "array"},
        "else": {"type": "array"},
        "additionalProperties": False,
        "properties": "not a map",
        "anyOf": "not a list",
    }
    fixed = ensure_array_items(schema)
    items = {"type": "string"}
    assert fixed["patternProperties"]["^x"]["items"] == items
    assert fixed["definitions"]["D"]["items"] == items
    assert fixed["dependentSchemas"]["a"]["items"] == items
    assert fixed["oneOf"] == [{"type": "array", "items": items}, True]
    assert fixed["allOf"] == [{"type": "array", "items": {"type": "number"}}]
    assert fixed["prefixItems"][0]["items"] == items
    for key in ("not", "contains", "if", "then", "else"):
        assert fixed[key] == {"type": "array", "items": items}
    assert fixed["additionalProperties"] is False
    assert fixed["properties"] == "not a map" and fixed["anyOf"] == "not a list"
    # The draft-4 tuple form of items: each position is a schema; an array with items is left alone.
    tuple_form = ensure_array_items({"type": "array", "items": [{"type": "array"}, {"type": "integer"}]})
    assert tuple_form == {"type": "array", "items": [{"type": "array", "items": items}, {"type": "integer"}]}
    # "array" among other types, or not at all.
    assert ensure_array_items({"type": ["null", "array"]})["items"] == items
    assert "items" not in ensure_array_items({"type": ["null", "string"]})
    assert "items" not in ensure_array_items({"type": "object"})


# --- build_request ---------------------------------------------------------------------------------

TOOL = ToolSchema(name="t", description="d", parameters={})


def test_build_request_edges(caplog: pytest.LogCaptureFixture) -> None:
    msgs = [UserMessage("hi")]
    # Empty or None tool_choice and extra_body are not sent; a mapping tool_choice is sent as it is.
    req = build_request("m", msgs, tools=[TOOL], params={"tool_choice": "", "extra_body": {}})
    assert set(req) == {"model", "messages", "tools"}
    assert req["tools"][0]["function"]["parameters"] == {"type": "object", "properties": {}}
    assert "tool_choice" not in build_request("m", msgs, tools=[TOOL], params={"tool_choice": None})
    given = {"type": "function", "function": {"name": "t"}}
    assert build_request("m", msgs, tools=[TOOL], params={"tool_choice": given})["tool_choice"] == given
    assert build_request("m", msgs, params={"extra_body": None}) == build_request("m", msgs)
    # parallel_tool_calls only with tools; None values never.
    with_tools = build_request("m", msgs, tools=[TOOL], params={"parallel_tool_calls": True, "seed": 1})
    assert with_tools["parallel_tool_calls"] is True and with_tools["seed"] == 1
    assert "parallel_tool_calls" not in build_request(
        "m", msgs, tools=[TOOL], params={"parallel_tool_calls": None}
    )
    # A param order does not matter; later keys do not undo earlier ones.
    extra = build_request("m", msgs, params={"extra_body": {"a": 1}, "user": "u", "stop": ["x"]})
    assert extra == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "extra_body": {"a": 1},
        "user": "u",
    }
    with caplog.at_level(logging.DEBUG, logger="loopwright.model.openai_compat"):
        build_request("m", msgs, params={"n": 2, "top_k": 3, "temperature": 0})
    assert "parameters not sent to m (put them under extra_body): n, top_k" in caplog.text
    with pytest.raises(TypeError, match=r"params\['extra_body'\] must be a mapping, not list"):
        build_request("m", msgs, params={"extra_body": [1]})
    # Stops: empty strings dropped, none left means no key.
    assert "stop" not in build_request("m", msgs, stop=["", ""])


# --- the error mapping -----------------------------------------------------------------------------

URL = "http://127.0.0.1:9/v1"
KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
REQUEST = httpx.Request("POST", URL + "/chat/completions")


def status_error(cls: type[openai.APIStatusError], status: int, message: str, code: str | None = None) -> Any:
    body = {"message": message, "type": "x", "code": code}
    response = httpx.Response(status, request=REQUEST, json={"error": body})
    return cls(message, response=response, body=body)


def stream_error(message: str, code: str | None = None) -> openai.APIError:
    error = openai.APIError(message, REQUEST, body={"message": message, "code": code})
    return error


def connection_error() -> openai.APIConnectionError:
    try:
        try:
            raise OSError("")
        except OSError as inner:
            raise ConnectionRefusedError(f"refused, key {KEY}") from inner
    except ConnectionRefusedError as cause:
        error = openai.APIConnectionError(request=REQUEST)
        error.__cause__ = cause
        return error


@pytest.mark.parametrize(
    ("exc", "error", "message", "status"),
    [
        (
            openai.APITimeoutError(request=REQUEST),
            ModelUnavailableError,
            f"cannot reach the model server at {URL}: no answer within 7 s",
            None,
        ),
        (
            connection_error(),
            ModelUnavailableError,
            f"cannot reach the model server at {URL}: refused, key ***",
            None,
        ),
        (
            openai.OpenAIError(f"The api_key client option must be set ({KEY})"),
            ModelAuthError,
            f"cannot call {URL}: The api_key client option must be set (***)",
            None,
        ),
        (
            status_error(openai.AuthenticationError, 401, "bad key"),
            ModelAuthError,
            f"the API key was rejected by {URL}: check OPENAI_API_KEY (bad key)",
            401,
        ),
        (
            status_error(openai.PermissionDeniedError, 403, "no access"),
            ModelAuthError,
            f"the API key may not use model 'm' at {URL}: no access",
            403,
        ),
        (
            status_error(openai.RateLimitError, 429, "slow down"),
            ModelRateLimitError,
            f"{URL}: rate limited: slow down",
            429,
        ),
        (
            status_error(openai.RateLimitError, 429, "pay", "insufficient_quota"),
            ModelRateLimitError,
            f"{URL}: the quota is used up: pay",
            429,
        ),
        (
            status_error(openai.NotFoundError, 404, "nope"),
            ModelNotFoundError,
            f"model 'm' not found at {URL} (nope); check the model name and that base_url is the API "
            "root (usually ending in /v1)",
            404,
        ),
        (
            stream_error("gone", "model_not_found"),
            ModelNotFoundError,
            f"model 'm' not found at {URL} (gone); check the model name and that base_url is the API "
            "root (usually ending in /v1)",
            None,
        ),
        (
            status_error(openai.APIStatusError, 413, "big"),
            ContextTooLongError,
            "the prompt is too long for model 'm' (context size 4096): big",
            413,
        ),
        (
            status_error(openai.BadRequestError, 400, "the context window is full"),
            ContextTooLongError,
            "the prompt is too long for model 'm' (context size 4096): the context window is full",
            400,
        ),
        (
            stream_error("n_ctx exceeded"),
            ContextTooLongError,
            "the prompt is too long for model 'm' (context size 4096): n_ctx exceeded",
            None,
        ),
        (
            status_error(openai.InternalServerError, 503, "the context window is full"),
            ModelUnavailableError,
            f"cannot reach the model server at {URL}: server error 503: the context window is full",
            503,
        ),
        (
            status_error(openai.APIStatusError, 408, "timeout"),
            ModelUnavailableError,
            f"cannot reach the model server at {URL}: server error 408: timeout",
            408,
        ),
        (
            status_error(openai.APIStatusError, 302, "the context window is full"),
            ModelRequestError,
            f"the model server at {URL} rejected the request (302): the context window is full",
            302,
        ),
        (
            status_error(openai.UnprocessableEntityError, 422, "bad"),
            ModelRequestError,
            f"the model server at {URL} rejected the request (422): bad",
            422,
        ),
        (
            stream_error("boom"),
            ModelRequestError,
            f"the model server at {URL} reported an error while streaming: boom",
            None,
        ),
    ],
)
def test_every_sdk_error_maps_to_one_loopwright_error(
    exc: openai.OpenAIError, error: type[Exception], message: str, status: int | None
) -> None:
    model = OpenAICompatModel("m", base_url=URL, api_key=KEY, timeout=7, context_size=4096)
    mapped = model._error(exc)
    assert type(mapped) is error
    assert str(mapped) == message
    assert getattr(mapped, "status_code", None) == status


def test_openai_itself_is_named_openai_in_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = OpenAICompatModel("gpt-4o", api_key=KEY)
    mapped = model._error(status_error(openai.RateLimitError, 429, "slow down"))
    assert str(mapped) == "OpenAI: rate limited: slow down"
    timeout = model._error(openai.APITimeoutError(request=REQUEST))
    assert str(timeout) == "cannot reach the model server at https://api.openai.com/v1: no answer within 60 s"
