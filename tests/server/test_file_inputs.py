"""``file`` and ``file-list`` inputs of an app's form: uploads and remote URLs resolved as Dify's
``file_factory`` does (a ``HEAD`` for a remote file's name, type and size, through the SSRF guard),
stored as Dify's ``File`` mappings, listed with signed URLs, shown to the model as content and as
readable text in the instruction — and refused with Dify's messages."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from loopwright.config import Settings
from loopwright.model.entities import FilePart, ImagePart, TextPart
from loopwright.server.app import create_app
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.testing import ScriptedModel
from loopwright.tools.files.manager import ToolFiles
from loopwright.tools.files.storage import LocalFileStorage
from tests.live_server import serving
from tests.server.conftest import ServiceApp

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
VISION = ["tool-call", "stream-tool-call", "vision"]
FORM = [
    {
        "variable": "photo",
        "label": "Photo",
        "type": "file",
        "required": True,
        "allowed_file_types": ["image"],
    },
    {
        "variable": "docs",
        "label": "Docs",
        "type": "file-list",
        "max_length": 3,
        "allowed_file_types": ["document"],
        "allowed_file_upload_methods": ["remote_url"],
    },
]


@pytest.fixture
async def remote() -> AsyncIterator[tuple[str, list[str]]]:
    """A file server on 127.0.0.1 that answers HEAD as a web server would; records the methods."""
    seen: list[str] = []

    async def report(request: Request) -> Response:
        seen.append(request.method)
        headers = {"content-type": "application/pdf", "content-length": "2048"}
        if request.query_params.get("named"):
            headers["content-disposition"] = 'attachment; filename="Q3 report.pdf"'
        return Response(b"" if request.method == "HEAD" else b"%PDF", headers=headers)

    async with serving(Starlette(routes=[Route("/files/report", report, methods=["GET", "HEAD"])])) as url:
        yield url, seen


def app_with(db: Database, tmp_path: Path, *, allow: tuple[str, ...]) -> FastAPI:
    app = create_app(db, Settings(tool_allow_hosts=allow), ping_interval=0.05)
    app.state.loopwright.upload_dir = tmp_path / "uploads"
    app.state.loopwright.tool_files = ToolFiles(LocalFileStorage(tmp_path / "tool-files"), b"k")
    return app


@pytest.fixture
async def lw(db: Database, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = app_with(db, tmp_path, allow=("127.0.0.1",))  # the test's file server is on loopback
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as c:
        c.app = app  # type: ignore[attr-defined]
        yield c
    await app.state.loopwright.settled()


async def make_app(db: Database, tmp_path: Path, replies: list[Any], **config: Any) -> ServiceApp:
    script = tmp_path / f"script-{uuid.uuid4().hex}.json"
    script.write_text(json.dumps({"replies": replies, "features": VISION}), encoding="utf-8")
    full = {"model": f"scripted:{script}", "user_input_form": FORM, **config}
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "files", full)
        key = await repo.create_api_key(s, app.id)
        return ServiceApp(app.id, key.token)


async def upload(client: httpx.AsyncClient, app: ServiceApp, name: str = "dot.png") -> str:
    files = {"file": (name, PNG, "image/png")}
    r = await client.post("/v1/files/upload", data={"user": "bob"}, files=files, headers=app.headers)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def chat(client: httpx.AsyncClient, app: ServiceApp, inputs: dict[str, Any]) -> httpx.Response:
    body = {"query": "Describe them.", "user": "alice", "response_mode": "blocking", "inputs": inputs}
    return await client.post("/v1/chat-messages", json=body, headers=app.headers)


def the_model(app: FastAPI) -> ScriptedModel:
    (model,) = app.state.loopwright._models.values()
    assert isinstance(model, ScriptedModel)
    return model


async def test_file_inputs_reach_the_model_and_the_history(
    lw: httpx.AsyncClient, db: Database, tmp_path: Path, remote: tuple[str, list[str]]
) -> None:
    base, seen = remote
    app = await make_app(
        db,
        tmp_path,
        ["Two things."],
        instruction="Photo: {{photo}}\nDocs: {{docs}}",
        opening_statement="About {{photo}}.",
    )
    photo_id = await upload(lw, app)  # another end user's upload of the same app is usable, as Dify
    inputs = {
        "photo": {"transfer_method": "local_file", "upload_file_id": photo_id, "type": "image"},
        "docs": [
            {"type": "document", "transfer_method": "remote_url", "url": f"{base}/files/report?named=1"},
            {"type": "document", "transfer_method": "remote_url", "remote_url": f"{base}/files/report"},
        ],
    }
    r = await chat(lw, app, inputs)
    assert r.status_code == 200, r.text
    assert seen == ["HEAD", "HEAD"]  # looked at, not downloaded

    request = the_model(lw.app).requests[0]  # type: ignore[attr-defined]
    system = request.messages[0].content
    assert system == (
        "Photo: dot.png (image, image/png, 70 bytes)\n"
        f"Docs: Q3 report.pdf (document, application/pdf, 2048 bytes): {base}/files/report?named=1, "
        f"report (document, application/pdf, 2048 bytes): {base}/files/report"
    )
    photo, doc1, doc2, text = request.messages[-1].content
    assert (
        isinstance(photo, ImagePart)
        and photo.url == "data:image/png;base64," + base64.b64encode(PNG).decode()
    )
    assert doc1 == FilePart(f"{base}/files/report?named=1", "application/pdf", "Q3 report.pdf")
    assert isinstance(doc2, FilePart) and text == TextPart("Describe them.")

    params = {"conversation_id": r.json()["conversation_id"], "user": "alice"}
    [message] = (await lw.get("/v1/messages", params=params, headers=app.headers)).json()["data"]
    stored = message["inputs"]["photo"]
    assert stored["url"].startswith(f"/files/{photo_id}/file-preview?timestamp=")
    assert {k: v for k, v in stored.items() if k != "url"} == {
        "dify_model_identity": "__dify__file__",
        "id": None,
        "tenant_id": app.id,
        "type": "image",
        "transfer_method": "local_file",
        "remote_url": None,
        "related_id": photo_id,
        "filename": "dot.png",
        "extension": ".png",
        "mime_type": "image/png",
        "size": len(PNG),
        "upload_file_id": photo_id,
    }
    first_doc = message["inputs"]["docs"][0]
    assert (first_doc["url"], first_doc["filename"], first_doc["size"]) == (
        f"{base}/files/report?named=1",
        "Q3 report.pdf",
        2048,
    )
    preview = await lw.get(stored["url"])
    assert preview.status_code == 200 and preview.content == PNG
    [conversation] = (
        await lw.get("/v1/conversations", params={"user": "alice"}, headers=app.headers)
    ).json()["data"]
    assert (
        conversation["inputs"]["photo"]["upload_file_id"] == photo_id
        and conversation["inputs"]["photo"]["url"]
    )
    assert conversation["introduction"] == "About dot.png (image, image/png, 70 bytes)."


async def test_an_upload_may_be_meant_for_a_form_field(
    lw: httpx.AsyncClient, db: Database, tmp_path: Path
) -> None:
    app = await make_app(db, tmp_path, ["never"])  # file_upload is off; the docs field takes documents
    pdf = {"file": ("report.pdf", b"%PDF-1.4 tiny", "application/pdf")}
    r = await lw.post("/v1/files/upload", data={"user": "a"}, files=pdf, headers=app.headers)
    assert r.status_code == 201, r.text
    video = {"file": ("clip.mp4", b"\0\0\0\x18ftypmp42", "video/mp4")}
    r = await lw.post("/v1/files/upload", data={"user": "a"}, files=video, headers=app.headers)
    assert r.status_code == 201  # stored, as Dify stores any type: neither the files nor a field take it


async def test_file_inputs_are_refused_with_difys_messages(
    lw: httpx.AsyncClient, db: Database, tmp_path: Path, remote: tuple[str, list[str]]
) -> None:
    base, _ = remote
    app = await make_app(db, tmp_path, ["never"])
    photo_id = await upload(lw, app)
    other = await make_app(db, tmp_path, ["never"])
    foreign = await upload(lw, other)
    pdf = {"type": "document", "transfer_method": "remote_url", "url": f"{base}/files/report"}
    local = {"transfer_method": "local_file", "upload_file_id": photo_id, "type": "image"}

    cases: list[tuple[dict[str, Any], str]] = [
        ({"photo": {"transfer_method": "local_file", "upload_file_id": foreign}}, "Invalid upload file"),
        ({"photo": {"transfer_method": "local_file", "upload_file_id": "nope"}}, "Invalid upload file"),
        (
            {"photo": {"transfer_method": "tool_file", "tool_file_id": "x"}},
            "Invalid file transfer method: tool_file",
        ),
        ({"photo": {"transfer_method": "remote_url", "url": "ftp://x/y.png"}}, "Invalid file url"),
        ({"photo": {**local, "type": "document"}}, "File validation failed for file: dot.png"),
        ({"photo": {**local, "type": "sticker"}}, "'sticker' is not a valid FileType"),
        (
            {"photo": local, "docs": [{**pdf, "transfer_method": "local_file", "upload_file_id": photo_id}]},
            "File validation failed for file: dot.png",
        ),  # docs take remote URLs only
        ({"photo": local, "docs": [pdf] * 4}, "docs in input form must be less than 3 files"),
        ({}, "photo is required in input form"),
    ]
    for inputs, message in cases:
        r = await chat(lw, app, inputs)
        assert (r.status_code, r.json()) == (
            400,
            {"code": "invalid_param", "message": message, "status": 400},
        ), inputs
    assert (await chat(lw, app, {"photo": {**local, "type": "custom"}})).status_code == 200  # custom: any


async def test_a_remote_file_on_a_private_address_is_refused_unless_allow_listed(
    db: Database, tmp_path: Path, remote: tuple[str, list[str]]
) -> None:
    base, seen = remote
    app = app_with(db, tmp_path, allow=())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        service = await make_app(db, tmp_path, ["never"])
        photo = {"type": "image", "transfer_method": "remote_url", "url": f"{base}/files/report"}
        r = await chat(client, service, {"photo": photo})
        assert r.status_code == 400 and r.json()["code"] == "invalid_param"
        assert "the file URL cannot be used" in r.json()["message"] and "127.0.0.1" in r.json()["message"]
        assert seen == []  # never reached
        await app.state.loopwright.settled()
