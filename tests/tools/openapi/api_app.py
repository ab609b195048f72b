"""A small FastAPI app that serves its own OpenAPI spec, for the OpenAPI tool tests (live on 127.0.0.1)."""

from __future__ import annotations

import asyncio
from enum import StrEnum
from typing import Annotated, Any

from fastapi import Cookie, FastAPI, File, Form, Header, HTTPException, Query, Request, UploadFile
from fastapi.responses import PlainTextResponse, RedirectResponse, Response
from pydantic import BaseModel, Field

TOKEN = "s3cret-token-9f8e7d"
QUERY_KEY = "qk-5a4b3c2d1e"


class Kind(StrEnum):
    cat = "cat"
    dog = "dog"
    bird = "bird"


class Pet(BaseModel):
    name: str = Field(description="The pet's name.")
    kind: Kind = Field(description="What sort of animal.")
    age: int | None = Field(default=None, description="Age in years.")
    tags: list[str] = Field(default_factory=list)


class Seen:
    """What the app received, for assertions."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []


def make_app(seen: Seen | None = None) -> FastAPI:
    seen = seen or Seen()
    app = FastAPI(title="Pet Store", version="1.0.0")

    @app.middleware("http")
    async def record(request: Request, call_next: Any) -> Any:
        seen.requests.append(
            {"path": request.url.path, "query": str(request.url.query), "headers": dict(request.headers)}
        )
        return await call_next(request)

    _pet_routes(app)
    _other_routes(app)
    return app


def _pet_routes(app: FastAPI) -> None:
    @app.get("/pets/{pet_id}", operation_id="get_pet", summary="Get one pet by id.")
    async def get_pet(
        pet_id: int,
        verbose: Annotated[bool, Query(description="Include details.")] = False,
        x_trace: Annotated[str | None, Header(description="A trace id.")] = None,
        session: Annotated[str | None, Cookie()] = None,
    ) -> dict[str, Any]:
        if pet_id == 404:
            raise HTTPException(404, "no pet with id 404")
        return {"id": pet_id, "verbose": verbose, "trace": x_trace, "session": session}

    @app.get("/pets", operation_id="list_pets", description="List pets, filtered by kind and tags.")
    async def list_pets(
        kind: Annotated[Kind, Query(description="Only this kind.")],
        limit: Annotated[int, Query(ge=1, le=100)] = 10,
        tags: Annotated[list[str] | None, Query()] = None,
    ) -> list[dict[str, Any]]:
        return [{"kind": kind.value, "limit": limit, "tags": tags or []}]

    @app.post("/pets", operation_id="create_pet", status_code=201)
    async def create_pet(pet: Pet) -> dict[str, Any]:
        return {"created": pet.model_dump(mode="json")}


def _other_routes(app: FastAPI) -> None:
    @app.post("/login", operation_id="login")
    async def login(username: Annotated[str, Form()], password: Annotated[str, Form()]) -> dict[str, Any]:
        return {"user": username, "password_length": len(password)}

    @app.post("/upload", operation_id="upload")
    async def upload(
        file: Annotated[UploadFile, File()], note: Annotated[str, Form()] = ""
    ) -> dict[str, Any]:
        data = await file.read()
        return {"filename": file.filename, "content": data.decode(), "note": note}

    @app.get("/secure", operation_id="secure")
    async def secure(authorization: Annotated[str | None, Header()] = None) -> dict[str, Any]:
        if authorization != f"Bearer {TOKEN}":
            raise HTTPException(401, f"bad credentials: {authorization}")
        return {"ok": True, "you_sent": authorization}

    @app.get("/secure-query", operation_id="secure_query")
    async def secure_query(request: Request, api_key: str = "") -> dict[str, Any]:
        if api_key != QUERY_KEY:
            raise HTTPException(401, "bad key")
        return {"ok": True, "query": str(request.url.query)}

    @app.get("/text", operation_id="get_text", response_class=PlainTextResponse)
    async def text() -> str:
        return "just some text"

    @app.get("/fail", operation_id="fail")
    async def fail() -> Response:
        return PlainTextResponse("boom " * 400, status_code=500)

    @app.get("/image", operation_id="get_image")
    async def image() -> Response:
        return Response(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32, media_type="image/png")

    @app.get("/go-elsewhere", operation_id="go_elsewhere")
    async def go_elsewhere(to: str) -> Response:
        return RedirectResponse(to, status_code=302)

    @app.get("/slow", operation_id="slow")
    async def slow() -> dict[str, Any]:
        await asyncio.sleep(2)
        return {"late": True}

    @app.get("/.well-known/ai-plugin.json", include_in_schema=False)
    async def manifest() -> dict[str, Any]:
        return {
            "schema_version": "v1",
            "name_for_model": "petstore",
            "name_for_human": "Pet Store",
            "description_for_model": "Pets.",
            "auth": {"type": "none"},
            "api": {"type": "openapi", "url": "/openapi.json"},
        }
