"""``files`` in chat requests: uploads and remote URLs reach a vision model before the text, are
listed with the message, are refused with a clear reason when the app does not allow them, and are
dropped when the app takes no files (as Dify)."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from loopwright.app.files.uploads import preview_url
from loopwright.model.entities import ImagePart, TextPart
from loopwright.testing import ScriptedModel
from loopwright.tools.files.manager import ToolFiles
from loopwright.tools.files.storage import LocalFileStorage
from tests.server.conftest import NewApp, ServiceApp

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
IMAGES = {"file_upload": {"enabled": True, "allowed_types": ["image"], "number_limits": 2}}
VISION = ["tool-call", "stream-tool-call", "vision"]


@pytest.fixture
def upload_dir(server_app: FastAPI, tmp_path: Path) -> Path:
    directory = tmp_path / "uploads"
    server_app.state.loopwright.upload_dir = directory
    # previews are signed with the tool files' key: a test key, nothing in the working directory
    server_app.state.loopwright.tool_files = ToolFiles(LocalFileStorage(tmp_path / "tool-files"), b"k")
    return directory


async def upload(client: httpx.AsyncClient, app: ServiceApp, user: str = "alice") -> str:
    files = {"file": ("dot.png", PNG, "image/png")}
    r = await client.post("/v1/files/upload", data={"user": user}, files=files, headers=app.headers)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def ask(
    client: httpx.AsyncClient, app: ServiceApp, files: list[dict[str, Any]], user: str = "alice"
) -> httpx.Response:
    body = {"query": "What is this?", "user": user, "response_mode": "blocking", "inputs": {}, "files": files}
    return await client.post("/v1/chat-messages", json=body, headers=app.headers)


def the_model(server_app: FastAPI) -> ScriptedModel:
    (model,) = server_app.state.loopwright._models.values()
    assert isinstance(model, ScriptedModel)
    return model


async def test_an_uploaded_image_and_a_remote_one_reach_a_vision_model_before_the_text(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI, upload_dir: Path
) -> None:
    app = await new_app(["A small dot."], features=VISION, **IMAGES)
    upload_id = await upload(client, app)
    files = [
        {"type": "image", "transfer_method": "local_file", "upload_file_id": upload_id},
        {"type": "image", "transfer_method": "remote_url", "url": "https://example.com/cat.png"},
    ]
    r = await ask(client, app, files)
    assert r.status_code == 200, r.text
    user_message = the_model(server_app).requests[0].messages[-1]
    first, second, text = user_message.content
    assert (
        isinstance(first, ImagePart)
        and first.url == "data:image/png;base64," + base64.b64encode(PNG).decode()
    )
    assert isinstance(second, ImagePart) and second.url == "https://example.com/cat.png"
    assert text == TextPart("What is this?")
    listed = await client.get(
        "/v1/messages",
        params={"conversation_id": r.json()["conversation_id"], "user": "alice"},
        headers=app.headers,
    )
    uploaded, remote = listed.json()["data"][0]["message_files"]
    keys = {"id", "filename", "type", "url", "mime_type", "size", "transfer_method", "belongs_to"}
    assert set(uploaded) == set(remote) == {*keys, "upload_file_id"}  # Dify's message_files item
    assert (uploaded["transfer_method"], uploaded["upload_file_id"]) == ("local_file", upload_id)
    assert (uploaded["filename"], uploaded["mime_type"], uploaded["size"]) == (
        "dot.png",
        "image/png",
        len(PNG),
    )
    assert uploaded["url"].startswith(f"/files/{upload_id}/file-preview?timestamp=")
    assert (remote["transfer_method"], remote["upload_file_id"]) == ("remote_url", None)
    assert (remote["url"], remote["filename"], remote["size"]) == (
        "https://example.com/cat.png",
        "cat.png",
        -1,
    )
    assert all(f["belongs_to"] == "user" and f["type"] == "image" for f in (uploaded, remote))
    # the signed URL serves the upload, without an API key
    r = await client.get(uploaded["url"])
    assert r.status_code == 200 and r.content == PNG and r.headers["content-type"] == "image/png"


async def test_preview_urls_need_their_own_valid_signature(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI, upload_dir: Path
) -> None:
    app = await new_app(["never"], file_upload={"enabled": True, "allowed_types": ["image", "document"]})
    upload_id = await upload(client, app)
    doc = (
        await client.post(
            "/v1/files/upload",
            data={"user": "alice"},
            files={"file": ("a.txt", b"text", "text/plain")},
            headers=app.headers,
        )
    ).json()["id"]
    files = server_app.state.loopwright.tool_files
    assert (await client.get(preview_url(files, upload_id, "image-preview"))).content == PNG
    r = await client.get(preview_url(files, doc, "image-preview"))
    assert r.status_code == 415
    r = await client.get(preview_url(files, doc) + "&as_attachment=true")
    assert r.status_code == 200 and r.headers["content-disposition"].startswith(
        'attachment; filename="a.txt"'
    )
    invalid = {"code": "not_found", "message": "File not found or signature is invalid", "status": 404}
    for url in (
        preview_url(files, upload_id).replace("file-preview", "image-preview"),  # signed for the other route
        preview_url(files, upload_id).replace("sign=", "sign=x"),
        preview_url(files, upload_id, now=0),  # expired
        f"/files/{upload_id}/file-preview",
        preview_url(files, str(uuid.uuid4())),  # valid signature, no such upload
    ):
        r = await client.get(url)
        assert (r.status_code, r.json()) == (404, invalid), url


async def test_a_model_without_vision_gets_the_text_only(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI, upload_dir: Path
) -> None:
    app = await new_app(["I cannot see."], **IMAGES)
    files = [{"type": "image", "transfer_method": "remote_url", "url": "https://example.com/cat.png"}]
    assert (await ask(client, app, files)).status_code == 200
    assert the_model(server_app).requests[0].messages[-1].content == "What is this?"


@pytest.mark.parametrize(
    ("settings", "files", "reason"),
    [
        (
            IMAGES,
            [{"transfer_method": "remote_url", "url": "https://x.test/a.png"}],  # no type: custom
            "'custom' is not allowed",
        ),
        (
            IMAGES,
            [{"type": "image", "transfer_method": "remote_url", "url": "https://x.test/a.png"}] * 3,
            "limit of 2",
        ),
        (
            IMAGES,
            [{"type": "document", "transfer_method": "remote_url", "url": "https://x.test/a.pdf"}],
            "'document' is not allowed",
        ),
        (
            IMAGES,
            [{"type": "image", "transfer_method": "remote_url", "url": "file:///etc/passwd"}],
            "http(s) URL",
        ),
        (
            IMAGES,
            [{"type": "image", "transfer_method": "local_file", "upload_file_id": "nope"}],
            "not a valid file id",
        ),
        (
            {"file_upload": {"enabled": True, "transfer_methods": ["local_file"]}},
            [{"type": "image", "transfer_method": "remote_url", "url": "https://x.test/a.png"}],
            "remote_url is not allowed",
        ),
    ],
)
async def test_files_the_app_does_not_allow_are_refused(
    client: httpx.AsyncClient,
    new_app: NewApp,
    settings: dict[str, Any],
    files: list[dict[str, Any]],
    reason: str,
) -> None:
    app = await new_app(["never"], features=VISION, **settings)
    r = await ask(client, app, files)
    assert r.status_code == 400 and r.json()["code"] == "invalid_param"
    assert reason in r.json()["message"]


async def test_files_are_dropped_when_the_app_takes_none(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI
) -> None:
    """As Dify: an app whose upload is off ignores ``files`` (no refusal, nothing recorded)."""
    app = await new_app(["Only text."], features=VISION)
    files = [{"type": "image", "transfer_method": "remote_url", "url": "https://example.com/cat.png"}]
    r = await ask(client, app, files)
    assert r.status_code == 200, r.text
    assert the_model(server_app).requests[0].messages[-1].content == "What is this?"
    listed = await client.get(
        "/v1/messages",
        params={"conversation_id": r.json()["conversation_id"], "user": "alice"},
        headers=app.headers,
    )
    assert listed.json()["data"][0]["message_files"] == []


async def test_remote_url_is_read_as_the_url(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI
) -> None:
    app = await new_app(["A cat."], features=VISION, **IMAGES)
    files = [{"type": "image", "transfer_method": "remote_url", "remote_url": "https://example.com/cat.png"}]
    assert (await ask(client, app, files)).status_code == 200
    first, _ = the_model(server_app).requests[0].messages[-1].content
    assert isinstance(first, ImagePart) and first.url == "https://example.com/cat.png"


async def test_an_upload_serves_every_user_of_its_app_only(
    client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path
) -> None:
    app = await new_app(["Bob's dot."], features=VISION, **IMAGES)
    other = await new_app(["never"], features=VISION, name="other", **IMAGES)
    upload_id = await upload(client, app, user="bob")
    entry = [{"type": "image", "transfer_method": "local_file", "upload_file_id": upload_id}]
    assert (await ask(client, app, entry, user="alice")).status_code == 200
    r = await ask(client, other, entry)
    assert r.status_code == 400 and "does not exist" in r.json()["message"]


async def test_an_upload_sent_with_a_message_is_read_back_with_the_apps_key(
    client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path
) -> None:
    app = await new_app(["A dot."], features=VISION, **IMAGES)
    other = await new_app(["A dot."], features=VISION, name="other", **IMAGES)
    unsent = await upload(client, app)
    sent = await upload(client, other)
    entry = [{"type": "image", "transfer_method": "local_file", "upload_file_id": sent}]
    assert (await ask(client, other, entry)).status_code == 200
    r = await client.get(f"/v1/files/{sent}/preview", params={"user": "alice"}, headers=other.headers)
    assert r.status_code == 200 and r.content == PNG and r.headers["content-type"] == "image/png"
    r = await client.get(f"/v1/files/{sent}/preview?as_attachment=true", headers=other.headers)
    assert r.headers["content-disposition"].startswith("attachment;")
    cases = [
        (app.headers, sent, 403, "file_access_denied", "File access denied: not owned by requesting app"),
        (app.headers, unsent, 404, "file_not_found", "File not found in message context"),
        (app.headers, str(uuid.uuid4()), 404, "file_not_found", "File not found in message context"),
    ]
    for headers, file_id, status, code, message in cases:
        r = await client.get(f"/v1/files/{file_id}/preview", headers=headers)
        assert (r.status_code, r.json()) == (status, {"code": code, "message": message, "status": status})
    assert (await client.get(f"/v1/files/{sent}/preview")).status_code == 401


async def test_custom_files_by_the_apps_allowed_extensions(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI, upload_dir: Path
) -> None:
    upload = {"enabled": True, "allowed_types": ["image"], "allowed_file_extensions": [".JSON"]}
    app = await new_app(["Read it."], file_upload=upload)
    params = (await client.get("/v1/parameters", headers=app.headers)).json()
    assert params["file_upload"]["allowed_file_extensions"] == [".JSON"]
    files = {"file": ("data.json", b'{"a": 1}', "application/json")}
    r = await client.post("/v1/files/upload", data={"user": "alice"}, files=files, headers=app.headers)
    assert r.status_code == 201, r.text  # a custom type the app takes by its extension
    upload_id = r.json()["id"]
    r = await ask(client, app, [{"transfer_method": "local_file", "upload_file_id": upload_id}])
    assert r.status_code == 200, r.text  # no type: custom, as Dify; its extension is allowed
    r = await ask(client, app, [{"transfer_method": "remote_url", "url": "https://example.com/data.xml?x=1"}])
    assert (r.status_code, r.json()["message"]) == (400, "File validation failed for file: data.xml")


async def test_signed_file_urls_answer_a_page_on_another_origin(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI
) -> None:
    app = await new_app(["hi"])
    r = await client.post(
        "/v1/files/upload",
        data={"user": "alice"},
        files={"file": ("a.png", PNG, "image/png")},
        headers=app.headers,
    )
    url = preview_url(server_app.state.loopwright.tool_files, r.json()["id"])
    page = {"Origin": "https://page.example"}
    r = await client.get(url, headers=page)  # a browser's fetch() of the preview
    assert r.status_code == 200 and r.content == PNG and r.headers["access-control-allow-origin"] == "*"
    preflight = {
        **page,
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "Content-Type",
    }
    r = await client.options(url.split("?")[0], headers=preflight)
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "*"
    # and /v1 exposes Dify's headers to the page
    r = await client.get("/v1/parameters", headers={**app.headers, **page})
    assert r.headers["access-control-expose-headers"] == "X-Version, X-Env, X-Trace-Id"
