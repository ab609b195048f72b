"""An OpenAPI tool server on 127.0.0.1 for the durable-executor tests: each operation answers JSON;
the gated ones hang until their gate is set (an event gate, never a sleep). Every request that
arrives is counted — an execution, whether or not it gets to answer."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Operation:
    """One tool: its HTTP method, the JSON it answers and its OpenAPI parameters."""

    method: str
    answer: dict[str, Any]
    parameters: list[dict[str, Any]] = field(default_factory=list)


class GatedToolServer:
    """See the module's docstring; ``title`` is the spec's (the toolset's name)."""

    def __init__(self, title: str, operations: dict[str, Operation], gated: Iterable[str]) -> None:
        self.title = title
        self.operations = operations
        self.gates = {name: threading.Event() for name in gated}
        self.entered = {name: threading.Event() for name in self.gates}
        self.counts = dict.fromkeys(operations, 0)
        self._lock = threading.Lock()
        tools = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                name = self.path.split("?")[0].strip("/")
                with tools._lock:
                    tools.counts[name] += 1
                if name in tools.gates:
                    tools.entered[name].set()
                    tools.gates[name].wait(120)
                body = json.dumps(tools.operations[name].answer)
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body.encode())
                except OSError:
                    pass  # the worker that called was killed

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def release(self) -> None:
        """Let every gated request answer (and every later one at once)."""
        for gate in self.gates.values():
            gate.set()

    def spec(self) -> dict[str, Any]:
        paths = {
            f"/{name}": {
                op.method: {
                    "operationId": name,
                    "summary": name,
                    "parameters": op.parameters,
                    "responses": {"200": {"description": "ok"}},
                }
            }
            for name, op in self.operations.items()
        }
        return {
            "openapi": "3.0.0",
            "info": {"title": self.title, "version": "1"},
            "servers": [{"url": self.url}],
            "paths": paths,
        }


@contextmanager
def serving(tools: GatedToolServer) -> Iterator[GatedToolServer]:
    """The server running in a thread; at the end every gate is opened and the server closed."""
    thread = threading.Thread(target=tools.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield tools
    finally:
        tools.release()
        tools.server.shutdown()
        tools.server.server_close()
