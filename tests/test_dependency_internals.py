"""Canaries for the private APIs of dependencies that loopwright relies on, each against the real library:
an upgrade that moves or changes one fails here, by name, rather than somewhere downstream.

- ``dbos._core.WorkflowHandleAsyncTask`` and ``DBOS._recover_pending_workflows`` (app.durable);
- ``mcp.client._transport.TransportStreams`` (tools.mcp.connection, .http, .stdio);
- uvicorn's ``send.__self__.flow.write_paused`` (server.event_stream.writable_now);
- httpx's and httpx2's ``transport._pool._network_backend`` (tools.net, tools.mcp.http: the network guard);
- llama-cpp-python's ``Llama._ctx``, ``Llama._batch``, ``Llama._requires_eval`` and
  ``LlamaBatch.set_batch`` (model._local_choice: one decode with every position's logits, and the
  KV-only snapshot around the choice).

pyproject.toml bounds each of these libraries below its next major release.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import typing
import uuid
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

import httpcore
import httpcore2
import httpx
import httpx2
import pytest
import uvicorn

from loopwright.server.event_stream import writable_now
from loopwright.tools.net import DEFAULT_POLICY, GuardedBackend, guarded_transport

# --- dbos ------------------------------------------------------------------------------------------------


def test_dbos_recover_pending_workflows_takes_executor_ids() -> None:
    from dbos import DBOS

    recover = DBOS._recover_pending_workflows
    assert callable(recover)
    params = list(inspect.signature(recover).parameters.values())
    # app.durable calls it with one positional argument: the list of dead executors' ids
    assert params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD)
    assert all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params[1:])


async def test_dbos_start_workflow_returns_the_async_task_handle_only_to_its_starter(tmp_path: Path) -> None:
    """app.durable tells a workflow it started from one a concurrent retry had started under the same
    id by the type of handle ``DBOS.start_workflow_async`` returns: ``WorkflowHandleAsyncTask`` only
    for the call that started it."""
    from dbos import DBOS, SetWorkflowID
    from dbos._core import WorkflowHandleAsyncTask

    started = asyncio.Event()
    go = asyncio.Event()

    @DBOS.workflow(name=f"loopwright-canary-{uuid.uuid4().hex[:8]}")
    async def canary(x: int) -> int:
        started.set()
        await go.wait()
        return x + 1

    DBOS(config={"name": "loopwright-canary", "system_database_url": f"sqlite:///{tmp_path / 'dbos.db'}"})
    DBOS.launch()
    try:
        with SetWorkflowID("canary-1"):
            first = await DBOS.start_workflow_async(canary, 1)
        await asyncio.wait_for(started.wait(), 30)
        with SetWorkflowID("canary-1"):
            again = await DBOS.start_workflow_async(canary, 1)
        go.set()
        assert isinstance(first, WorkflowHandleAsyncTask)
        assert not isinstance(again, WorkflowHandleAsyncTask)
        assert await first.get_result() == 2 and await again.get_result() == 2
        assert await asyncio.to_thread(DBOS._recover_pending_workflows, ["no-such-executor"]) == []
    finally:
        go.set()
        await asyncio.to_thread(DBOS.destroy, workflow_completion_timeout_sec=5)
        # DBOS made its thread pool this loop's default executor, and has just shut it down
        from concurrent.futures import ThreadPoolExecutor

        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())


# --- mcp -------------------------------------------------------------------------------------------------


def test_mcp_transport_streams_is_what_the_sdk_clients_yield() -> None:
    """loopwright's transports type what they yield as the SDK's ``TransportStreams``: the (read, write)
    stream pair that the SDK's own stdio and streamable HTTP clients yield."""
    from mcp.client._transport import TransportStreams
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.message import SessionMessage

    assert typing.get_origin(TransportStreams) is tuple
    read, write = typing.get_args(TransportStreams)
    assert SessionMessage in typing.get_args(typing.get_args(read)[0])
    assert typing.get_args(write) == (SessionMessage,)
    for client in (stdio_client, streamable_http_client):
        yielded = typing.get_type_hints(client.__wrapped__)["return"]
        assert typing.get_origin(yielded) is AsyncGenerator
        assert typing.get_args(yielded)[0] == TransportStreams


# --- uvicorn ---------------------------------------------------------------------------------------------

MAX_BYTES = 256 * 1024 * 1024  # a client that never reads has made the server pause long before this


@pytest.mark.parametrize("http", ["h11", "httptools"])
async def test_writable_now_reads_uvicorns_flow_control(http: str) -> None:
    """On a real uvicorn server: ``writable_now(send)`` is a check (not None), True while the client
    reads, and False once the client stops reading and the server's flow control pauses writing."""
    seen: dict[str, Any] = {}
    paused = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        writable = writable_now(send)
        seen["check"] = writable
        seen["at_start"] = writable() if writable else None
        await send({"type": "http.response.start", "status": 200, "headers": []})
        chunk, sent = b"x" * 65536, 0
        while writable is not None and writable() and sent < MAX_BYTES:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            sent += len(chunk)
        seen["sent"] = sent
        paused.set()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, http=http, log_level="warning", ws="none", lifespan="off"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(60):
            for _ in range(6000):  # uvicorn has no event for it
                if server.started:
                    break
                await asyncio.sleep(0.01)
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            await writer.drain()
            await paused.wait()  # the client has read nothing so far
            while await reader.read(1 << 20):  # then it reads all, and the response ends
                pass
            writer.close()
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 10)
        sock.close()
    assert seen["check"] is not None, "writable_now found no flow control on uvicorn's send"
    assert seen["at_start"] is True
    assert 0 < seen["sent"] < MAX_BYTES, "writing never paused for a client that did not read"


# --- httpx / httpx2: the network guard's hook ------------------------------------------------------------


def test_httpx_transports_keep_their_pool_and_its_network_backend() -> None:
    transport = guarded_transport(DEFAULT_POLICY)
    assert isinstance(transport._pool, httpcore.AsyncConnectionPool)
    assert isinstance(transport._pool._network_backend, GuardedBackend)
    # the same private attributes in the mcp SDK's fork
    pool2 = httpx2.AsyncHTTPTransport()._pool
    assert isinstance(pool2, httpcore2.AsyncConnectionPool)
    assert hasattr(pool2, "_network_backend")
    # the pool reads the attribute for each new connection (not a copy taken at construction)
    assert "_network_backend" in inspect.getsource(httpcore.AsyncConnectionPool.create_connection)
    assert "_network_backend" in inspect.getsource(httpcore2.AsyncConnectionPool.create_connection)
    assert isinstance(httpx.AsyncHTTPTransport()._pool, httpcore.AsyncConnectionPool)


# --- llama-cpp-python: the embedded model's choice (model._local_choice) ---------------------------------


def test_llama_cpp_keeps_the_context_batch_and_state_hooks_the_choice_uses() -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    from llama_cpp import _internals

    llama_source = inspect.getsource(llama_cpp.Llama)
    # Llama.eval decodes through self._batch / self._ctx, which _eval_all_logits drives directly
    assert "self._batch.set_batch(" in llama_source and "self._ctx.decode(self._batch)" in llama_source
    assert list(inspect.signature(_internals.LlamaBatch.set_batch).parameters)[1:] == [
        "batch",
        "n_past",
        "logits_all",
    ]
    for method in ("decode", "get_logits", "get_logits_ith", "kv_cache_seq_rm"):
        assert callable(getattr(_internals.LlamaContext, method))
    assert "self.ctx" in inspect.getsource(_internals.LlamaContext.__init__)
    # a restored context makes the next generation evaluate its prompt's last token again
    assert "self._requires_eval" in inspect.getsource(llama_cpp.Llama.generate)
    for name in ("llama_state_seq_get_size", "llama_state_seq_get_data", "llama_state_seq_set_data"):
        assert callable(getattr(llama_cpp, name))
