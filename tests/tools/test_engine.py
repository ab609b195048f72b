"""ToolEngine: Dify's observation strings for failures, argument handling, casting, timeouts,
truncation, caching and observation rendering."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from loopwright import tool
from loopwright.model import estimate_tokens
from loopwright.tools import (
    BlobMessage,
    FileMessage,
    ImageMessage,
    JsonMessage,
    LinkMessage,
    LogMessage,
    TextMessage,
    Tool,
    ToolContext,
    ToolCredentialError,
    ToolEngine,
    ToolInvokeError,
    ToolInvokeMeta,
    ToolOutput,
    ToolParameter,
    ToolParameterValidationError,
    ToolResult,
    VariableMessage,
)
from loopwright.tools.engine import IMAGE_SENT, render_observation

# --- helpers ------------------------------------------------------------------------------------------


def recording_tool(
    *params: ToolParameter, name: str = "rec", **kwargs: Any
) -> tuple[Tool, list[dict[str, Any]]]:
    """A Tool built directly from ToolParameters that records the arguments it was invoked with."""
    calls: list[dict[str, Any]] = []

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        calls.append(dict(args))
        yield TextMessage(json.dumps(args, sort_keys=True))

    return Tool(name, "records its arguments", tuple(params), invoke, **kwargs), calls


def raising_tool(exc: BaseException, name: str = "bad") -> Tool:
    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        await asyncio.sleep(0.001)
        raise exc
        yield TextMessage("unreachable")  # pragma: no cover - makes this an async generator

    return Tool(name, "fails", (), invoke)


def outputs_tool(*outputs: ToolOutput, name: str = "out") -> Tool:
    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        for o in outputs:
            yield o

    return Tool(name, "yields fixed outputs", (), invoke)


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def validation_observation(detail: str) -> str:
    return f"tool parameters validation error: {detail}, please check your tool parameters"


# --- Dify's error observations ---------------------------------------------------------------------------


async def test_unknown_tool() -> None:
    result = await ToolEngine([echo]).invoke("nope", {"text": "x"})
    assert result.observation == "there is not a tool named nope"
    assert result.outputs == []
    assert result.meta.time_cost == 0.0
    assert result.meta.error == "there is not a tool named nope"
    assert result.meta.tool_config == {}


async def test_parameter_validation_error_raised_by_a_tool() -> None:
    engine = ToolEngine([raising_tool(ToolParameterValidationError("limit must be positive"))])
    result = await engine.invoke("bad", {})
    assert result.observation == validation_observation("limit must be positive")
    assert result.outputs == []
    assert result.meta.time_cost == 0.0
    assert result.meta.error == result.observation


async def test_parameter_validation_error_from_function_validation() -> None:
    # 3.5 passes the number cast (§6.1) but not the function's own ``int`` validation.
    result = await ToolEngine([add]).invoke("add", {"a": 3.5, "b": 2})
    assert result.observation.startswith("tool parameters validation error: a: ")
    assert result.observation.endswith(", please check your tool parameters")
    assert result.outputs == []


async def test_tool_invoke_error() -> None:
    result = await ToolEngine([raising_tool(ToolInvokeError("quota exceeded"))]).invoke("bad", {})
    assert result.observation == "tool invoke error: quota exceeded"
    assert result.outputs == []
    assert result.meta.error == "tool invoke error: quota exceeded"


async def test_credential_error() -> None:
    result = await ToolEngine([raising_tool(ToolCredentialError("bad key sk-123"))]).invoke("bad", {})
    assert result.observation == "Please check your tool provider credentials"
    assert "sk-123" not in result.observation
    assert result.outputs == []


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        (ValueError("boom"), "boom"),
        (KeyError("missing"), "'missing'"),
        (ZeroDivisionError("division by zero"), "division by zero"),
        (RuntimeError(), "RuntimeError"),
    ],
)
async def test_any_exception_inside_a_tool_becomes_a_tool_invoke_error(exc: Exception, message: str) -> None:
    result = await ToolEngine([raising_tool(exc)]).invoke("bad", {})
    assert result.observation == f"tool invoke error: {message}"
    assert result.outputs == []
    assert result.meta.time_cost > 0
    assert result.meta.error == message
    assert result.meta.tool_config == {"tool_name": "bad"}


async def test_exception_in_a_sync_function_tool() -> None:
    @tool
    def broken(x: int) -> str:
        """Broken."""
        raise LookupError(f"no record {x}")

    result = await ToolEngine([broken]).invoke("broken", {"x": 5})
    assert result.observation == "tool invoke error: no record 5"
    assert result.meta.error == "no record 5"


async def test_exception_after_some_outputs_discards_them() -> None:
    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        yield TextMessage("partial")
        raise OSError("disk full")

    result = await ToolEngine([Tool("half", "", (), invoke)]).invoke("half", {})
    assert result.observation == "tool invoke error: disk full"
    assert result.outputs == []


async def test_a_tools_own_timeout_error_keeps_its_message() -> None:
    result = await ToolEngine([raising_tool(TimeoutError("upstream API timed out after 5 s"))]).invoke(
        "bad", {}
    )
    assert result.observation == "tool invoke error: upstream API timed out after 5 s"


# --- string arguments ---------------------------------------------------------------------------------


async def test_json_object_string_arguments() -> None:
    result = await ToolEngine([add]).invoke("add", '{"a": 2, "b": 3}')
    assert result.observation == "5"


async def test_plain_string_for_a_one_parameter_tool() -> None:
    result = await ToolEngine([echo]).invoke("echo", "just some text")
    assert result.observation == "just some text"


async def test_non_object_json_string_for_a_one_parameter_tool_is_the_value() -> None:
    engine = ToolEngine([echo])
    assert (await engine.invoke("echo", "[1, 2]")).observation == "[1, 2]"
    assert (await engine.invoke("echo", "42")).observation == "42"


async def test_plain_string_for_a_two_parameter_tool_is_a_validation_error() -> None:
    result = await ToolEngine([add]).invoke("add", "two and three")
    assert result.observation.startswith("tool parameters validation error: ")
    assert result.observation.endswith(", please check your tool parameters")
    assert "two and three" in result.observation
    assert result.outputs == []


async def test_empty_string_arguments_are_no_arguments() -> None:
    t, calls = recording_tool(ToolParameter("a"), ToolParameter("b"))
    result = await ToolEngine([t]).invoke("rec", "  ")
    assert result.observation == "{}"
    assert calls == [{}]


async def test_mapping_arguments_are_copied_not_mutated() -> None:
    t, _ = recording_tool(ToolParameter("n", "number"), ToolParameter("d", default="x"))
    args = {"n": "3"}
    await ToolEngine([t]).invoke("rec", args)
    assert args == {"n": "3"}


# --- form values ----------------------------------------------------------------------------------------


async def test_form_values_override_model_arguments() -> None:
    t, calls = recording_tool(
        ToolParameter("query"),
        ToolParameter("api_base", form="form"),
        ToolParameter("limit", "number"),
    )
    configured = t.configure(api_base="https://internal.invalid", limit=5)
    assert set(configured.schema.parameters["properties"]) == {"query", "limit"}  # form params are hidden
    result = await ToolEngine([configured]).invoke(
        "rec", {"query": "q", "api_base": "https://evil.invalid", "limit": 500}
    )
    assert calls == [{"query": "q", "api_base": "https://internal.invalid", "limit": 5}]
    assert json.loads(result.observation)["api_base"] == "https://internal.invalid"


async def test_form_values_are_cast_like_model_arguments() -> None:
    t, calls = recording_tool(ToolParameter("verbose", "boolean", form="form"))
    await ToolEngine([t.configure(verbose="yes")]).invoke("rec", {})
    assert calls == [{"verbose": True}]


async def test_configure_returns_a_copy() -> None:
    t, _ = recording_tool(ToolParameter("k", form="form"))
    configured = t.configure(k="v")
    assert t.form_values == {}
    assert configured.form_values == {"k": "v"}
    assert configured.configure(j="w").form_values == {"k": "v", "j": "w"}


# --- casting (reference §6.1) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ptype", "given", "expected"),
    [
        ("boolean", "yes", True),
        ("boolean", "Y", True),
        ("boolean", "true", True),
        ("boolean", "1", True),
        ("boolean", "0", False),
        ("boolean", "no", False),
        ("boolean", "False", False),
        ("boolean", 0, False),
        ("boolean", "maybe", True),  # anything else: bool()
        ("boolean", "", False),
        ("number", "3", 3),
        ("number", "3.5", 3.5),
        ("number", 7, 7),
        ("number", 2.5, 2.5),
        ("integer", "12", 12),
        ("string", 5, "5"),
        ("string", None, ""),
        ("select", 1, "1"),
        ("secret-input", None, ""),
        ("array", '["a", "b"]', ["a", "b"]),
        ("array", ["x"], ["x"]),
        ("array", "not json", ["not json"]),
        ("array", '{"a": 1}', ['{"a": 1}']),
        ("object", '{"a": 1}', {"a": 1}),
        ("object", {"b": 2}, {"b": 2}),
        ("object", "not json", {}),
        ("object", "[1, 2]", {}),
        ("files", "f1", ["f1"]),
        ("files", ["f1", "f2"], ["f1", "f2"]),
        ("file", ["only"], "only"),
        ("any", {"k": [1]}, {"k": [1]}),
    ],
)
async def test_casting_to_declared_types(ptype: Any, given: Any, expected: Any) -> None:
    t, calls = recording_tool(ToolParameter("v", ptype), ToolParameter("other"))
    result = await ToolEngine([t]).invoke("rec", {"v": given})
    assert not result.observation.startswith("tool"), result.observation
    assert calls == [{"v": expected}]
    assert type(calls[0]["v"]) is type(expected)


@pytest.mark.parametrize(
    ("ptype", "given"),
    [("number", "three"), ("number", ""), ("integer", "1,5"), ("file", ["a", "b"])],
)
async def test_casting_failure_is_a_validation_error(ptype: Any, given: Any) -> None:
    t, calls = recording_tool(ToolParameter("v", ptype), ToolParameter("other"))
    result = await ToolEngine([t]).invoke("rec", {"v": given})
    assert result.observation.startswith(
        "tool parameters validation error: "
        f"The tool parameter value {given!r} is not in correct type of {ptype}"
    )
    assert result.observation.endswith(", please check your tool parameters")
    assert calls == []


async def test_undeclared_arguments_are_passed_uncast() -> None:
    t, calls = recording_tool(ToolParameter("n", "number"))
    await ToolEngine([t]).invoke("rec", {"n": "1", "extra": "2"})
    assert calls == [{"n": 1, "extra": "2"}]


async def test_missing_required_parameter_is_a_validation_error() -> None:
    t, calls = recording_tool(ToolParameter("query", required=True), ToolParameter("limit", "number"))
    result = await ToolEngine([t]).invoke("rec", {"limit": 3})
    assert result.observation == validation_observation("missing required parameter 'query'")
    assert calls == []


async def test_defaults_are_filled() -> None:
    t, calls = recording_tool(
        ToolParameter("query", required=True),
        ToolParameter("limit", "number", default=10),
        ToolParameter("lang", default="en"),
        ToolParameter("optional"),
    )
    await ToolEngine([t]).invoke("rec", {"query": "q"})
    await ToolEngine([t]).invoke("rec", {"query": "q", "limit": "3"})
    assert calls == [{"query": "q", "limit": 10, "lang": "en"}, {"query": "q", "limit": 3, "lang": "en"}]


async def test_required_parameter_with_a_default_is_filled() -> None:
    t, calls = recording_tool(ToolParameter("mode", "select", required=True, default="fast"))
    result = await ToolEngine([t]).invoke("rec", {})
    assert not result.observation.startswith("tool parameters validation error")
    assert calls == [{"mode": "fast"}]


# --- timeouts ---------------------------------------------------------------------------------------------


# The slow tools below wait on an event nobody sets: only the engine's timeout can end them, so no
# wall-clock bound is needed; pytest-timeout fails the test if that timeout never fires.


@tool(timeout=0.05)
async def sleepy() -> str:
    """Never finishes by itself."""
    await asyncio.Event().wait()
    return "woke up"


@pytest.mark.timeout(30)
async def test_per_tool_timeout() -> None:
    result = await ToolEngine([sleepy], default_timeout=30).invoke("sleepy", {})
    assert result.observation.startswith("tool invoke error:")
    assert "timed out" in result.observation
    assert "0.05" in result.observation
    assert result.outputs == []
    assert result.meta.error is not None and "timed out" in result.meta.error
    assert result.meta.time_cost >= 0.04


@pytest.mark.timeout(30)
async def test_engine_default_timeout() -> None:
    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        await asyncio.Event().wait()
        yield TextMessage("late")

    slow = Tool("slow", "", (), invoke)
    result = await ToolEngine([slow], default_timeout=0.05).invoke("slow", {})
    assert result.observation.startswith("tool invoke error:")
    assert "timed out" in result.observation


@pytest.mark.timeout(30)
async def test_a_cancellation_from_outside_stays_a_cancellation() -> None:
    """A call cancelled by its caller (a stopped run) is not reported as a timeout nor a failure."""
    started = asyncio.Event()

    @tool(timeout=30)
    async def waits() -> str:
        """Waits for ever."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    call = asyncio.create_task(ToolEngine([waits]).invoke("waits", {}))
    await started.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call


@pytest.mark.timeout(30)
async def test_a_timed_out_call_leaves_its_task_uncancelled() -> None:
    """The timeout's cancellation is withdrawn once it became a TimeoutError: the run goes on."""
    result = await ToolEngine([sleepy]).invoke("sleepy", {})
    assert "timed out" in result.observation
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)  # no cancellation left to deliver


async def test_per_tool_timeout_wins_over_the_default() -> None:
    @tool(timeout=5.0)
    async def brief() -> str:
        """Sleeps briefly."""
        await asyncio.sleep(0.05)
        return "done"

    result = await ToolEngine([brief], default_timeout=0.01).invoke("brief", {})
    assert result.observation == "done"


@pytest.mark.timeout(30)
async def test_timeout_covers_a_slow_generator_between_outputs() -> None:
    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        yield TextMessage("first")
        await asyncio.Event().wait()
        yield TextMessage("second")

    slow = Tool("gen", "", (), invoke, timeout=0.05)
    result = await ToolEngine([slow]).invoke("gen", {})
    assert "timed out" in result.observation


# --- truncation ------------------------------------------------------------------------------------------


def text_tool(text: str) -> Tool:
    return outputs_tool(TextMessage(text), name="big")


async def test_long_observation_is_truncated_with_a_visible_note() -> None:
    big = "lorem ipsum dolor sit amet " * 185  # ~5,000 characters
    assert len(big) > 4900
    result = await ToolEngine([text_tool(big)], observation_token_limit=50).invoke("big", {})
    obs = result.observation
    assert "[truncated:" in obs
    visible, note = obs.split("\n[truncated:", 1)
    assert big.startswith(visible)
    assert 0 < len(visible) < 400
    assert estimate_tokens(visible) <= 50
    assert "50" in note and str(estimate_tokens(big)) in note
    assert len(obs) < 600
    # The full output stays available to the caller.
    assert result.outputs == [TextMessage(big)]


async def test_short_observation_is_untouched() -> None:
    engine = ToolEngine([text_tool("a short answer, well under the limit")], observation_token_limit=50)
    assert (await engine.invoke("big", {})).observation == "a short answer, well under the limit"


async def test_observation_at_the_limit_is_untouched() -> None:
    text = "word " * 50  # exactly 50 estimated tokens, 250 characters
    assert estimate_tokens(text) == 50
    engine = ToolEngine([text_tool(text)], observation_token_limit=50)
    assert (await engine.invoke("big", {})).observation == text


async def test_none_disables_truncation() -> None:
    big = "x y " * 2500
    result = await ToolEngine([text_tool(big)], observation_token_limit=None).invoke("big", {})
    assert result.observation == big


async def test_default_limit_leaves_moderate_outputs_alone() -> None:
    text = "lorem ipsum " * 300
    assert (await ToolEngine([text_tool(text)]).invoke("big", {})).observation == text


async def test_truncation_respects_the_limit_when_tokens_are_unevenly_spread() -> None:
    skewed = "{" + ", ".join(f'"{i}": [{i}]' for i in range(60)) + "} " + "supercalifragilistic" * 200
    result = await ToolEngine([text_tool(skewed)], observation_token_limit=50).invoke("big", {})
    visible = result.observation.split("\n[truncated:", 1)[0]
    assert "[truncated:" in result.observation
    assert estimate_tokens(visible) <= 50


# --- cache ------------------------------------------------------------------------------------------------


def counting_tool(cache_ttl: float | None) -> tuple[Tool, list[str]]:
    runs: list[str] = []

    @tool(cache_ttl=cache_ttl)
    def lookup(key: str) -> dict[str, str]:
        """Look up a key."""
        runs.append(key)
        return {"key": key, "run": str(len(runs))}

    return lookup, runs


async def test_cache_hit_returns_the_cached_result() -> None:
    lookup, runs = counting_tool(60)
    engine = ToolEngine([lookup])
    first = await engine.invoke("lookup", {"key": "a"})
    second = await engine.invoke("lookup", {"key": "a"})
    assert runs == ["a"]
    assert second.observation == first.observation == '{"key": "a", "run": "1"}'
    assert second.outputs == first.outputs
    assert first.meta.cached is False
    assert second.meta.cached is True
    assert second.meta.error is None


async def test_cache_key_ignores_argument_form_and_order() -> None:
    t, calls = recording_tool(ToolParameter("a"), ToolParameter("b", "number"), cache_ttl=60)
    engine = ToolEngine([t])
    await engine.invoke("rec", {"a": "x", "b": 1})
    await engine.invoke("rec", '{"b": "1", "a": "x"}')
    assert len(calls) == 1


async def test_cache_miss_on_different_arguments() -> None:
    lookup, runs = counting_tool(60)
    engine = ToolEngine([lookup])
    await engine.invoke("lookup", {"key": "a"})
    other = await engine.invoke("lookup", {"key": "b"})
    assert runs == ["a", "b"]
    assert other.meta.cached is False


async def test_cache_entry_expires() -> None:
    lookup, runs = counting_tool(0.05)
    now = [100.0]
    engine = ToolEngine([lookup], clock=lambda: now[0])
    await engine.invoke("lookup", {"key": "a"})
    now[0] = 100.049
    assert (await engine.invoke("lookup", {"key": "a"})).meta.cached is True
    now[0] = 100.05  # the TTL has passed
    again = await engine.invoke("lookup", {"key": "a"})
    assert again.meta.cached is False
    assert runs == ["a", "a"]
    assert again.observation == '{"key": "a", "run": "2"}'


async def test_each_cache_entry_lives_for_its_own_tools_ttl() -> None:
    short, short_runs = counting_tool(10)
    long, long_runs = counting_tool(60)
    long = dataclasses.replace(long, name="long_lookup")
    now = [0.0]
    engine = ToolEngine([short, long], clock=lambda: now[0])
    await engine.invoke("lookup", {"key": "a"})
    await engine.invoke("long_lookup", {"key": "a"})
    now[0] = 30.0
    assert (await engine.invoke("lookup", {"key": "a"})).meta.cached is False
    assert (await engine.invoke("long_lookup", {"key": "a"})).meta.cached is True
    assert (short_runs, long_runs) == (["a", "a"], ["a"])


async def test_no_cache_without_ttl() -> None:
    lookup, runs = counting_tool(None)
    engine = ToolEngine([lookup])
    await engine.invoke("lookup", {"key": "a"})
    result = await engine.invoke("lookup", {"key": "a"})
    assert runs == ["a", "a"]
    assert result.meta.cached is False


async def test_errors_are_not_cached() -> None:
    attempts: list[int] = []

    @tool(cache_ttl=60)
    def flaky(q: str) -> str:
        """Fails the first time."""
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("try again")
        return "ok"

    engine = ToolEngine([flaky])
    assert (await engine.invoke("flaky", {"q": "x"})).observation == "tool invoke error: try again"
    assert (await engine.invoke("flaky", {"q": "x"})).observation == "ok"
    assert len(attempts) == 2


async def test_cache_is_per_engine() -> None:
    lookup, runs = counting_tool(60)
    await ToolEngine([lookup]).invoke("lookup", {"key": "a"})
    await ToolEngine([lookup]).invoke("lookup", {"key": "a"})
    assert runs == ["a", "a"]


# --- observation rendering -----------------------------------------------------------------------------


def test_text_parts_are_concatenated_without_separator() -> None:
    assert render_observation([TextMessage("a"), TextMessage("b"), TextMessage("c")]) == "abc"
    assert render_observation([]) == ""


def test_link() -> None:
    assert (
        render_observation([LinkMessage("https://example.invalid/r")])
        == "result link: https://example.invalid/r. please tell user to check it."
    )


def test_image_is_difys_fixed_sentence() -> None:
    assert IMAGE_SENT == (
        "image has been created and sent to user already, you do not need to create it, "
        "just tell the user to check it now."
    )
    assert render_observation([ImageMessage("https://example.invalid/cat.png")]) == IMAGE_SENT
    assert render_observation([BlobMessage(b"\x89PNG", mime_type="image/png")]) == IMAGE_SENT
    assert (
        render_observation([FileMessage("https://example.invalid/f.jpg", mime_type="image/jpeg")])
        == IMAGE_SENT
    )


def test_json_goes_after_text() -> None:
    obs = render_observation([JsonMessage({"a": 1, "名": "値"}), TextMessage("summary. ")])
    assert obs == 'summary. {"a": 1, "名": "値"}'


def test_json_identical_to_a_text_part_is_skipped() -> None:
    assert render_observation([TextMessage('{"a": 1}'), JsonMessage({"a": 1})]) == '{"a": 1}'


def test_suppressed_json_is_skipped() -> None:
    obs = render_observation([TextMessage("answer"), JsonMessage({"raw": "x"}, suppress_output=True)])
    assert obs == "answer"


def test_variable() -> None:
    obs = render_observation([VariableMessage("result", {"a": 1}), VariableMessage("n", 3)])
    assert obs == 'result: {"a": 1}n: 3'


def test_blob_and_file_are_readable_lines() -> None:
    obs = render_observation(
        [BlobMessage(b"%PDF-1.7 ...", mime_type="application/pdf", filename="report.pdf")]
    )
    assert obs == "file created: report.pdf (application/pdf, 12 bytes)"
    unnamed = render_observation([BlobMessage(b"abc")])
    assert unnamed.startswith("file created: ")
    assert "application/octet-stream" in unnamed and "3 bytes" in unnamed
    file_obs = render_observation([FileMessage("https://example.invalid/d.csv", "text/csv", "d.csv")])
    assert file_obs.startswith("file created: d.csv")
    assert "text/csv" in file_obs


def test_log_messages_are_omitted() -> None:
    obs = render_observation([LogMessage("fetching", "start", {"url": "x"}), TextMessage("done")])
    assert obs == "done"


def test_no_repr_anywhere_in_a_mixed_observation() -> None:
    outputs: list[ToolOutput] = [
        TextMessage("t"),
        LinkMessage("https://example.invalid"),
        ImageMessage("https://example.invalid/i.png"),
        JsonMessage({"k": "v"}),
        BlobMessage(b"data", filename="x.bin"),
        FileMessage("https://example.invalid/y.txt", "text/plain"),
        VariableMessage("v", [1, 2]),
        LogMessage("log"),
    ]
    obs = render_observation(outputs)
    assert "type=" not in obs
    assert "Message(" not in obs
    assert "b'" not in obs
    assert obs.startswith("tresult link: https://example.invalid. please tell user to check it.")
    assert obs.endswith('{"k": "v"}')


async def test_engine_renders_tool_outputs() -> None:
    engine = ToolEngine(
        [outputs_tool(TextMessage("Found it. "), LinkMessage("https://example.invalid/x"), JsonMessage([1]))]
    )
    result = await engine.invoke("out", {})
    assert result.observation == (
        "Found it. result link: https://example.invalid/x. please tell user to check it.[1]"
    )
    assert result.meta.error is None
    assert result.meta.time_cost >= 0
    assert result.meta.tool_config == {"tool_name": "out"}


# --- ToolResult and ToolInvokeMeta ------------------------------------------------------------------------


async def test_tool_result_files() -> None:
    image = ImageMessage("https://example.invalid/i.png")
    blob = BlobMessage(b"x", filename="x.bin")
    file = FileMessage("https://example.invalid/f.txt", "text/plain")
    engine = ToolEngine(
        [outputs_tool(TextMessage("t"), image, JsonMessage({}), blob, LinkMessage("https://l.invalid"), file)]
    )
    result = await engine.invoke("out", {})
    assert isinstance(result, ToolResult)
    assert result.files == [image, blob, file]
    assert ToolResult("x", [TextMessage("x")], ToolInvokeMeta()).files == []


def test_tool_invoke_meta_to_dict_has_exactly_difys_keys() -> None:
    meta = ToolInvokeMeta(time_cost=0.5, error="e", tool_config={"tool_name": "t"}, cached=True)
    assert meta.to_dict() == {"time_cost": 0.5, "error": "e", "tool_config": {"tool_name": "t"}}
    assert set(ToolInvokeMeta().to_dict()) == {"time_cost", "error", "tool_config"}


# --- the engine itself --------------------------------------------------------------------------------------


async def test_context_is_passed_to_the_tool() -> None:
    seen: list[ToolContext] = []

    @tool
    def who(ctx: ToolContext) -> str:
        """Who."""
        seen.append(ctx)
        return ctx.user_id

    engine = ToolEngine([who])
    ctx = ToolContext(user_id="alice")
    assert (await engine.invoke("who", {}, ctx)).observation == "alice"
    assert (await engine.invoke("who", {})).observation == ""
    assert seen[0] is ctx
    assert seen[1] == ToolContext()


async def test_duplicate_names_keep_the_later_tool(caplog: pytest.LogCaptureFixture) -> None:
    first = outputs_tool(TextMessage("first"), name="dup")
    second = outputs_tool(TextMessage("second"), name="dup")
    engine = ToolEngine([first, second])
    assert (await engine.invoke("dup", {})).observation == "second"
    assert "dup" in caplog.text


@pytest.mark.parametrize(
    "make_exc",
    [
        lambda: ToolParameterValidationError("v"),
        lambda: ToolInvokeError("i"),
        lambda: ToolCredentialError("c"),
        lambda: RuntimeError("r"),
        lambda: TypeError("t"),
    ],
)
async def test_invoke_never_raises(make_exc: Callable[[], Exception]) -> None:
    result = await ToolEngine([raising_tool(make_exc())]).invoke("bad", "{}")
    assert isinstance(result, ToolResult)
    assert result.observation
    assert result.outputs == []


async def test_many_concurrent_calls() -> None:
    @tool
    async def double(n: int) -> str:
        """Double."""
        await asyncio.sleep(0.01)
        return str(2 * n)

    engine = ToolEngine([double])
    results = await asyncio.gather(*(engine.invoke("double", {"n": i}) for i in range(20)))
    assert [r.observation for r in results] == [str(2 * i) for i in range(20)]
