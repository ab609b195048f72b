"""Real HTTP peers of the trust features, served on 127.0.0.1 (``tests.live_server.serving``): Dify's
API-based extension (moderation and external data points), an OpenAI-compatible moderation endpoint
and an OpenAI-compatible embedding endpoint. Each records what it was sent."""

from __future__ import annotations

import asyncio
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


@dataclass
class Peer:
    """What a peer received, and how it answers: ``replies`` by point (or path), ``status`` to fail,
    ``gate`` to hang until set (a timeout)."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    replies: dict[str, Any] = field(default_factory=dict)
    status: int = 200
    gate: asyncio.Event | None = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)  # set by each request


def extension_app(peer: Peer) -> FastAPI:
    """Dify's API-based extension: ``POST /`` with ``{point, params}``; the reply is
    ``peer.replies[point]`` (a dict, or a function of the params)."""
    app = FastAPI()

    @app.post("/")
    async def endpoint(request: Request) -> JSONResponse:
        body = await request.json()
        peer.requests.append(body)
        peer.headers.append(dict(request.headers))
        peer.arrived.set()
        if peer.gate is not None:
            await peer.gate.wait()
        if peer.status != 200:
            return JSONResponse({"error": "down"}, status_code=peer.status)
        reply = peer.replies.get(body["point"], {})
        return JSONResponse(reply(body["params"]) if callable(reply) else reply)

    return app


def moderation_app(peer: Peer, flagged_words: tuple[str, ...]) -> FastAPI:
    """An OpenAI-compatible ``POST /v1/moderations``: flagged when the input has one of the words."""
    app = FastAPI()

    @app.post("/v1/moderations")
    async def moderations(request: Request) -> JSONResponse:
        body = await request.json()
        peer.requests.append(body)
        peer.headers.append(dict(request.headers))
        peer.arrived.set()
        if peer.gate is not None:
            await peer.gate.wait()
        if peer.status != 200:
            return JSONResponse({"error": {"message": "down"}}, status_code=peer.status)
        text = str(body["input"]).lower()
        flagged = any(w in text for w in flagged_words)
        return JSONResponse(
            {"id": "modr-1", "model": body.get("model"), "results": [{"flagged": flagged, "categories": {}}]}
        )

    return app


DIM = 64
_WORD = re.compile(r"[a-z0-9]+")


def bag_of_words(text: str) -> list[float]:
    """A deterministic embedding: word counts hashed into ``DIM`` buckets (equal texts → equal vectors,
    shared words → similar ones)."""
    vector = [0.0] * DIM
    for word in _WORD.findall(text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIM] += 1.0
    return vector


def embedding_app(peer: Peer) -> FastAPI:
    """An OpenAI-compatible ``POST /v1/embeddings`` on :func:`bag_of_words`."""
    app = FastAPI()

    @app.post("/v1/embeddings")
    async def embeddings(request: Request) -> JSONResponse:
        body = await request.json()
        peer.requests.append(body)
        if peer.status != 200:
            return JSONResponse({"error": {"message": "down"}}, status_code=peer.status)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": bag_of_words(t)} for i, t in enumerate(texts)
        ]
        return JSONResponse({"object": "list", "data": data, "model": body.get("model"), "usage": {}})

    return app
