"""Cases run against a server: each turn is a blocking ``POST /v1/chat-messages`` with the app's API
key, its trajectory read back from ``GET /v1/messages/{id}/agent-log`` — the Service API any client
uses, so a deployed app is evaluated as it serves. The server runs the app as configured: no replay,
no version or model of the caller's choosing, and structured-output checks need the set's own schema.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from loopwright.config import Settings, build_model, load_settings
from loopwright.evals.results import ToolCall, TurnTrace
from loopwright.evals.target import EVAL_USER, EvalTargetError, load_model
from loopwright.model.base import Model

if TYPE_CHECKING:
    from loopwright.app.config import AppConfig
    from loopwright.knowledge.embeddings import Embedder

TIMEOUT = httpx.Timeout(600.0, connect=10.0)  # a blocking answer takes as long as the agent does


@dataclass
class RemoteTarget:
    """The app behind ``client`` (its base URL and the app's key)."""

    client: httpx.AsyncClient
    app_label: str
    settings: Settings
    version: int | None = None
    model: str | None = None
    replay: bool = False
    replay_tools: bool = False
    user: str = EVAL_USER
    judge_models: dict[str, Model] = field(default_factory=dict)

    @property
    def config(self) -> AppConfig | None:
        return None  # the server's: not readable with an app key

    @property
    def default_judge(self) -> str | None:
        return None  # the app's model is the server's: a judge check names its own

    async def turn(
        self, query: str, inputs: dict[str, Any], files: list[dict[str, Any]], conversation: str | None
    ) -> tuple[TurnTrace, str | None]:
        body: dict[str, Any] = {
            "query": query,
            "inputs": inputs,
            "files": files,
            "user": self.user,
            "response_mode": "blocking",
            "conversation_id": conversation or "",
        }
        started = time.perf_counter()
        try:
            sent = await self.client.post("/v1/chat-messages", json=body)
        except httpx.HTTPError as exc:
            return TurnTrace(
                query=query, error=f"the server did not answer: {type(exc).__name__}: {exc}"
            ), None
        seconds = time.perf_counter() - started
        data = _json(sent)
        if sent.status_code != 200:
            return TurnTrace(
                query=query, error=f"{sent.status_code} {data.get('message', sent.text[:200])}"
            ), None
        usage = (data.get("metadata") or {}).get("usage") or {}
        trace = TurnTrace(
            query=query,
            answer=str(data.get("answer", "")),
            tokens=int(usage.get("total_tokens") or 0),
            cost=float(usage.get("total_price") or 0),
            currency=str(usage.get("currency") or "USD"),
            seconds=seconds,
            citations=list((data.get("metadata") or {}).get("retriever_resources") or []),
            message_id=data.get("message_id"),
        )
        log = await self.client.get(f"/v1/messages/{trace.message_id}/agent-log", params={"user": self.user})
        if log.status_code == 200:
            _add_log(trace, _json(log))
        return trace, data.get("conversation_id") or conversation

    def embedder_for(self, spec: str) -> Embedder | None:
        from loopwright.knowledge.embeddings import embedder_for

        return embedder_for(spec, self.settings)

    async def judge_model(self, spec: str) -> Model:
        model = self.judge_models.get(spec)
        if model is None:
            model = build_model(spec, self.settings)
            await load_model(model)
            self.judge_models[spec] = model
        return model


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _add_log(trace: TurnTrace, log: dict[str, Any]) -> None:
    iterations = log.get("iterations") or []
    trace.tool_calls = [
        ToolCall(
            name=str(c.get("tool_name", "")),
            args=c.get("tool_input"),
            output=str(c.get("tool_output", "")),
            error=c.get("error"),
        )
        for it in iterations
        for c in it.get("tool_calls") or []
    ]
    meta = log.get("meta") or {}
    trace.rounds = int((meta.get("metrics") or {}).get("rounds") or meta.get("iterations") or len(iterations))


@asynccontextmanager
async def open_remote(
    server: str, key: str, *, settings: Settings | None = None
) -> AsyncIterator[RemoteTarget]:
    """The app whose API key ``key`` is, on the server at ``server`` (its base URL, e.g.
    ``http://127.0.0.1:8080``); its ``/v1/info`` must answer."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=server.rstrip("/"), headers=headers, timeout=TIMEOUT) as client:
        try:
            info = await client.get("/v1/info")
        except httpx.HTTPError as exc:
            raise EvalTargetError(f"cannot reach {server}: {type(exc).__name__}: {exc}") from None
        if info.status_code != 200:
            raise EvalTargetError(
                f"{server} refused the app's key: {info.status_code} {_json(info).get('message', '')}"
            )
        name = str(_json(info).get("name") or "app")
        yield RemoteTarget(client, f"{name} @ {server}", settings or load_settings())
