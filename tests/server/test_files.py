"""POST /v1/files/upload through the ASGI app: stored file and row, and Dify's error codes."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from loopwright.server.routes_files import part_names
from loopwright.store.db import Database
from loopwright.store.models import EndUser, UploadFile
from tests.server.conftest import NewApp, ServiceApp

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x01\x02pixels" * 10
DOCS = {"file_upload": {"enabled": True, "allowed_types": ["image", "document"]}}


@pytest.fixture
def upload_dir(server_app: FastAPI, tmp_path: Path) -> Path:
    directory = tmp_path / "uploads"
    server_app.state.loopwright.upload_dir = directory
    return directory


def stored_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file()) if directory.exists() else []


async def upload(
    client: httpx.AsyncClient, headers: dict[str, str], *, user: str | None = "alice", **files: Any
) -> httpx.Response:
    data = {"user": user} if user is not None else {}
    return await client.post("/v1/files/upload", data=data, files=files or None, headers=headers)


async def row_count(db: Database) -> int:
    async with db.transaction() as s:
        return int(await s.scalar(select(func.count()).select_from(UploadFile)) or 0)


async def test_upload_stores_the_file_and_a_row(
    client: httpx.AsyncClient, new_app: NewApp, db: Database, upload_dir: Path
) -> None:
    app = await new_app(["hi"])
    r = await upload(client, app.headers, file=("cat.PNG", PNG, "image/png"))
    assert r.status_code == 201, r.text
    body = r.json()
    assert set(body) == {
        "id",
        "name",
        "size",
        "extension",
        "mime_type",
        "created_by",
        "created_at",
        # Dify's file_fields: the rest, null where loopwright has no such thing
        "preview_url",
        "source_url",
        "original_url",
        "user_id",
        "tenant_id",
        "conversation_id",
        "file_key",
    }
    assert body["source_url"].startswith(f"/files/{body['id']}/file-preview?timestamp=")
    assert (body["user_id"], body["tenant_id"]) == (body["created_by"], app.id)
    preview = await client.get(body["source_url"])
    assert preview.status_code == 200 and preview.content == PNG
    assert (body["name"], body["size"], body["extension"], body["mime_type"]) == (
        "cat.PNG",
        len(PNG),
        "png",
        "image/png",
    )
    assert isinstance(body["created_at"], int)
    async with db.transaction() as s:
        row = await s.get(UploadFile, body["id"])
        assert row is not None
        assert (row.app_id, row.name, row.size, row.mime_type) == (app.id, "cat.PNG", len(PNG), "image/png")
        end_user = await s.get(EndUser, row.end_user_id)
        assert end_user is not None and end_user.session_id == "alice" and body["created_by"] == end_user.id
        assert row.storage_key == f"{app.id}/{row.id}"  # never the client's name
    assert stored_files(upload_dir) == [upload_dir / row.storage_key]
    assert (upload_dir / row.storage_key).read_bytes() == PNG


async def test_a_large_binary_document_arrives_intact(
    client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path
) -> None:
    app = await new_app(["hi"], **DOCS)
    # boundary-like bytes inside the content, across many network-sized chunks
    content = (os.urandom(70_000) + b"\r\n--\r\n\r\n--x") * 5
    r = await upload(client, app.headers, file=("report.pdf", content, "application/pdf"))
    assert r.status_code == 201, r.text
    assert r.json()["size"] == len(content) and r.json()["extension"] == "pdf"
    [path] = stored_files(upload_dir)
    assert path.read_bytes() == content


async def test_the_clients_filename_never_becomes_a_path(
    client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path
) -> None:
    app = await new_app(["hi"])
    for name in ("../../evil/../x.png", "dir\\x.png"):  # refused, with Dify's text
        r = await upload(client, app.headers, file=(name, PNG, "image/png"))
        assert (r.status_code, r.json()["message"]) == (400, "Filename contains invalid characters")
    assert stored_files(upload_dir) == []
    r = await upload(client, app.headers, file=("x.png", PNG, "image/png"))
    assert r.status_code == 201, r.text
    [path] = stored_files(upload_dir)
    assert path.parent == upload_dir / app.id and path.name == r.json()["id"]


async def test_a_missing_type_is_guessed_from_the_extension(
    client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path
) -> None:
    app = await new_app(["hi"], **DOCS)
    r = await upload(client, app.headers, file=("notes.md", b"# Notes\n", "application/octet-stream"))
    assert r.status_code == 201, r.text
    assert r.json()["mime_type"] == "text/markdown"


async def test_missing_file(client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path) -> None:
    app = await new_app(["hi"])
    expected = {"code": "no_file_uploaded", "message": "Please upload your file.", "status": 400}
    # a multipart form without a file
    r = await client.post("/v1/files/upload", files={"user": (None, "alice")}, headers=app.headers)
    assert (r.status_code, r.json()) == (400, expected)
    # "file" as a plain field is not a file
    form = {"user": (None, "alice"), "file": (None, "not a file")}
    r = await client.post("/v1/files/upload", files=form, headers=app.headers)
    assert (r.status_code, r.json()) == (400, expected)
    # not multipart at all
    r = await client.post("/v1/files/upload", json={"user": "alice"}, headers=app.headers)
    assert (r.status_code, r.json()) == (400, expected)
    assert stored_files(upload_dir) == []


async def test_too_large(
    client: httpx.AsyncClient, new_app: NewApp, db: Database, server_app: FastAPI, upload_dir: Path
) -> None:
    server_app.state.loopwright.upload_max_bytes = 1000
    app = await new_app(["hi"])
    r = await upload(client, app.headers, file=("big.png", b"x" * 1001, "image/png"))
    assert r.status_code == 413, r.text
    assert r.json()["code"] == "file_too_large" and r.json()["status"] == 413
    assert stored_files(upload_dir) == [] and await row_count(db) == 0
    r = await upload(client, app.headers, file=("fits.png", b"x" * 1000, "image/png"))
    assert r.status_code == 201 and r.json()["size"] == 1000


async def test_any_type_is_stored_as_dify_stores_it(
    client: httpx.AsyncClient, new_app: NewApp, db: Database, upload_dir: Path
) -> None:
    images_only = await new_app(["hi", "hi"])  # allowed_types defaults to ["image"]
    docs = await new_app(["hi"], **DOCS)
    for name, mime in [("a.txt", "text/plain"), ("a.pdf", "application/pdf"), ("a.zip", "application/zip")]:
        r = await upload(client, images_only.headers, file=(name, b"PK\x03\x04", mime))
        assert r.status_code == 201, (name, r.text)
        assert r.json()["mime_type"] == mime
    assert len(stored_files(upload_dir)) == 3 and await row_count(db) == 3
    # whether it may be used is decided where it is used: this app's messages take images and documents
    r = await upload(client, docs.headers, file=("b.zip", b"PK\x03\x04", "application/zip"))
    file = {"type": "custom", "transfer_method": "local_file", "upload_file_id": r.json()["id"]}
    body = {"query": "hi", "inputs": {}, "user": "alice", "files": [file], "response_mode": "blocking"}
    r = await client.post("/v1/chat-messages", json=body, headers=docs.headers)
    assert r.status_code == 400 and "'custom' is not allowed" in r.json()["message"], r.text


async def test_a_filename_with_a_character_dify_refuses(
    client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path
) -> None:
    app = await new_app(["hi"])
    for name in ("a:b.png", "a*.png", "a?.png", "a<b>.png", "a|b.png"):  # (httpx escapes a quote)
        r = await upload(client, app.headers, file=(name, PNG, "image/png"))
        assert (r.status_code, r.json()["message"]) == (400, "Filename contains invalid characters"), name
    assert stored_files(upload_dir) == []


async def test_auth_required(client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path) -> None:
    await new_app(["hi"])
    r = await upload(client, {}, file=("a.png", PNG, "image/png"))
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"
    r = await upload(client, {"Authorization": "Bearer app-nope"}, file=("a.png", PNG, "image/png"))
    assert r.status_code == 401 and r.json()["message"] == "Access token is invalid"
    assert stored_files(upload_dir) == []


async def test_without_user_the_default_end_user_uploads(
    client: httpx.AsyncClient, new_app: NewApp, db: Database, upload_dir: Path
) -> None:
    """As Dify: ``user`` is optional; a missing or blank one is the ``DEFAULT-USER`` end user."""
    app = await new_app(["hi"])
    creators = set()
    for user in (None, "", "  ", "DEFAULT-USER"):
        r = await upload(client, app.headers, user=user, file=("a.png", PNG, "image/png"))
        assert r.status_code == 201, r.text
        creators.add(r.json()["created_by"])
    assert len(creators) == 1 and len(stored_files(upload_dir)) == 4 and await row_count(db) == 4


async def test_only_one_file(
    client: httpx.AsyncClient, new_app: NewApp, db: Database, upload_dir: Path
) -> None:
    app = await new_app(["hi"])
    files = [("file", ("a.png", PNG, "image/png")), ("other", ("b.png", PNG, "image/png"))]
    r = await client.post("/v1/files/upload", data={"user": "alice"}, files=files, headers=app.headers)
    assert r.status_code == 400 and r.json()["code"] == "too_many_files"
    assert stored_files(upload_dir) == [] and await row_count(db) == 0


async def test_malformed_body(client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path) -> None:
    app = await new_app(["hi"])
    body = b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\ntruncated'
    headers = {**app.headers, "Content-Type": "multipart/form-data; boundary=b"}
    r = await client.post("/v1/files/upload", content=body, headers=headers)
    assert r.status_code == 400 and r.json()["code"] == "invalid_param"
    assert stored_files(upload_dir) == []


# --- bodies written by hand, fed in pieces (python-multipart keeps state across chunks) ---


def form_body(boundary: bytes, *parts: tuple[bytes, bytes]) -> bytes:
    """A multipart body from (header lines, content) pairs."""
    body = b"".join(b"--%s\r\n%s\r\n\r\n%s\r\n" % (boundary, head, content) for head, content in parts)
    return body + b"--%s--\r\n" % boundary


def file_part(params: bytes, content: bytes, mime: bytes = b"image/png") -> tuple[bytes, bytes]:
    return b"Content-Disposition: form-data; " + params + b"\r\nContent-Type: " + mime, content


USER_PART = (b'Content-Disposition: form-data; name="user"', b"alice")


async def pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


def form_headers(app: ServiceApp, content_type: str) -> dict[str, str]:
    return {**app.headers, "Content-Type": content_type}


async def test_a_body_in_tiny_chunks(client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path) -> None:
    app = await new_app(["hi"])
    # near-delimiters and CRLFs inside the content; every header, the delimiters and the closing
    # boundary get split at every possible point
    content = PNG + b"\r\n--b0undar\r\n\r\n--b0undarX\r\n-\r" + PNG + b"\r\n--b0und"
    body = form_body(b"b0undary", USER_PART, file_part(b'name="file"; filename="split.png"', content))
    for size in (1, 2, 3, 7, 64):
        r = await client.post(
            "/v1/files/upload",
            content=pieces(body, size),
            headers=form_headers(app, "multipart/form-data; boundary=b0undary"),
        )
        assert r.status_code == 201, (size, r.text)
        assert (r.json()["name"], r.json()["size"]) == ("split.png", len(content))
        path = upload_dir / app.id / r.json()["id"]
        assert path.read_bytes() == content


async def test_a_quoted_boundary(client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path) -> None:
    app = await new_app(["hi"])
    boundary = b"x:y=z (1)"  # legal boundary characters that need quoting in the header
    body = form_body(boundary, USER_PART, file_part(b'name="file"; filename="q.png"', PNG))
    headers = form_headers(app, 'multipart/form-data; boundary="x:y=z (1)"; charset=utf-8')
    r = await client.post("/v1/files/upload", content=pieces(body, 5), headers=headers)
    assert r.status_code == 201, r.text
    assert (upload_dir / app.id / r.json()["id"]).read_bytes() == PNG


async def test_filename_parameters(client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path) -> None:
    app = await new_app(["hi"])
    headers = form_headers(app, "multipart/form-data; boundary=fn")
    cases = [
        ('name="file"; filename="猫 ü.png"'.encode(), "猫 ü.png"),  # raw UTF-8, as browsers send it
        # RFC 5987 filename*= wins over filename (as in werkzeug/Dify; .NET clients send both)
        (b"name=file; filename=\"=?utf-8?B?54yrLnBuZw==?=\"; filename*=UTF-8''%E7%8C%AB.png", "猫.png"),
        (b"name=\"file\"; filename*=utf-8''only%20star.png", "only star.png"),
        (b'name="file"; filename="ok.png"; filename*=bogus-charset\'\'%78.png', "ok.png"),
    ]
    for params, name in cases:
        body = form_body(b"fn", USER_PART, file_part(params, PNG))
        r = await client.post("/v1/files/upload", content=body, headers=headers)
        assert r.status_code == 201, (params, r.text)
        assert (r.json()["name"], r.json()["extension"]) == (name, "png")


@pytest.mark.parametrize(
    ("disposition", "names"),
    [
        # RFC 5987: UTF-8, percent-encoded, wins over the plain filename
        (
            b'form-data; name="file"; filename="a.png"; filename*=UTF-8\'\'%E2%82%AC%20rates.png',
            "€ rates.png",
        ),
        (b"form-data; name=\"file\"; filename*=utf-8'fr'%C3%A9t%C3%A9.txt", "été.txt"),  # a language tag
        (b'form-data; name="file"; filename*="UTF-8\'\'%E7%8C%AB.png"', "猫.png"),  # quoted
        (b"form-data; name=\"file\"; filename*=iso-8859-1''caf%E9.txt", "café.txt"),  # another charset
        (b'form-data; name="file"; filename="x.png"; filename*=UTF-8\'\'%E2.png', "x.png"),  # not UTF-8
        (b'form-data; name="file"; filename="plain.png"', "plain.png"),
    ],
)
def test_part_names_decode_an_extended_filename(disposition: bytes, names: str) -> None:
    assert part_names(disposition) == ("file", names)
    # quoted-pair escapes, ';' inside (a name Dify then refuses for its '"')
    assert part_names(b'form-data; name="file"; filename="a \\"b\\";c.png"') == ("file", 'a "b";c.png')
    assert part_names(b'form-data; name="user"') == ("user", None)  # a plain field


async def test_the_file_streams_to_disk_and_the_limit_stops_it_early(
    client: httpx.AsyncClient, new_app: NewApp, db: Database, server_app: FastAPI, upload_dir: Path
) -> None:
    chunk = 64 * 1024
    server_app.state.loopwright.upload_max_bytes = 10 * chunk
    app = await new_app(["hi"])
    head, tail = form_body(b"big", USER_PART, file_part(b'name="file"; filename="big.png"', b"@")).split(b"@")
    on_disk: list[int] = []  # bytes stored (in the temporary file) each time the server asks for more

    async def body() -> AsyncIterator[bytes]:
        yield head
        for _ in range(30):
            on_disk.append(sum(p.stat().st_size for p in stored_files(upload_dir)))
            yield b"x" * chunk
        yield tail

    r = await client.post(
        "/v1/files/upload", content=body(), headers=form_headers(app, "multipart/form-data; boundary=big")
    )
    assert (r.status_code, r.json()["code"]) == (413, "file_too_large")
    # written as it arrived (never the whole body in memory) …
    assert on_disk[10] >= 9 * chunk
    # … and the partial file was gone as soon as chunk 11 crossed the limit, while the rest still came in
    assert len(on_disk) == 30 and on_disk[11:] == [0] * 19
    assert stored_files(upload_dir) == [] and await row_count(db) == 0


async def test_more_malformed_bodies(client: httpx.AsyncClient, new_app: NewApp, upload_dir: Path) -> None:
    app = await new_app(["hi"])
    headers = form_headers(app, "multipart/form-data; boundary=m")
    good_file = file_part(b'name="file"; filename="a.png"', PNG)
    bodies = [
        form_body(b"m", USER_PART, good_file)[:-20],  # cut inside the file's content
        form_body(b"m", USER_PART, good_file)[:60],  # cut inside a part's headers
        form_body(
            b"m", USER_PART, (b"Content-Disposition form-data", b"x"), good_file
        ),  # a header with no ':'
        form_body(b"m", *[(b'Content-Disposition: form-data; name="f"', b"v")] * 65, USER_PART, good_file),
        form_body(b"other", USER_PART, good_file),  # not the announced boundary
    ]
    for body in bodies:
        r = await client.post("/v1/files/upload", content=pieces(body, 16), headers=headers)
        assert (r.status_code, r.json()["code"]) == (400, "invalid_param"), body[:80]
        assert r.json()["message"].startswith("malformed multipart body: ")
    assert stored_files(upload_dir) == []
