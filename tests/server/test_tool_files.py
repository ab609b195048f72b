"""GET /files/tools/{id}{ext} through the ASGI app: signed access, Dify's 403/404 bodies, headers."""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from fastapi import FastAPI

from loopwright.tools.files import LocalFileStorage, ToolFile, ToolFiles
from loopwright.tools.files.signing import signature

SECRET = b"route-test-secret"
PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(2000)
FORBIDDEN = {"code": "forbidden", "message": "Invalid request.", "status": 403}
NOT_FOUND = {"code": "not_found", "message": "file is not found", "status": 404}


@pytest.fixture
def files(server_app: FastAPI, tmp_path: Path) -> ToolFiles:
    manager = ToolFiles(LocalFileStorage(tmp_path / "tool-files"), SECRET, ttl=300)
    server_app.state.loopwright.tool_files = manager
    return manager


def split(url: str) -> tuple[str, dict[str, str]]:
    parts = urlsplit(url)
    return parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}


def signed_query(file_id: str, timestamp: int, nonce: str = "ab12") -> dict[str, str]:
    return {
        "timestamp": str(timestamp),
        "nonce": nonce,
        "sign": signature(file_id, str(timestamp), nonce, SECRET),
    }


async def test_a_signed_url_serves_the_image(client: httpx.AsyncClient, files: ToolFiles) -> None:
    file = await files.save_bytes(PNG, mime_type="image/png", filename="chart.png")
    url = files.url_for(file)
    assert url.startswith(f"/files/tools/{file.id}.png?timestamp=")
    r = await client.get(url)  # the URL exactly as signed, '=' padding unquoted (as Dify writes it)
    assert r.status_code == 200, r.text
    assert r.content == PNG
    assert r.headers["content-type"] == "image/png"
    assert r.headers["content-length"] == str(len(PNG))
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "content-disposition" not in r.headers  # an image shows inline, as in Dify
    attached = await client.get(url + "&as_attachment=true")
    assert attached.headers["content-disposition"] == (
        "attachment; filename=\"chart.png\"; filename*=UTF-8''chart.png"
    )


async def test_a_binary_file_is_served_with_its_name(client: httpx.AsyncClient, files: ToolFiles) -> None:
    data = os.urandom(300_000)  # several chunks
    file = await files.save_bytes(data, mime_type="application/octet-stream", filename="résumé data.bin")
    r = await client.get(files.url_for(file))
    assert r.status_code == 200 and r.content == data
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["content-disposition"] == (
        "inline; filename=\"r_sum_ data.bin\"; filename*=UTF-8''r%C3%A9sum%C3%A9%20data.bin"
    )
    r = await client.get(files.url_for(file) + "&as_attachment=1")
    assert r.headers["content-disposition"].startswith("attachment; ")


async def test_a_pdf_without_a_name_is_named_after_its_id(
    client: httpx.AsyncClient, files: ToolFiles
) -> None:
    file = await files.save_bytes(b"%PDF-1.7", mime_type="application/pdf")
    r = await client.get(files.url_for(file))
    assert r.headers["content-type"] == "application/pdf"
    assert f'filename="{file.id}.pdf"' in r.headers["content-disposition"]


@pytest.mark.parametrize("mime", ["text/html", "image/svg+xml", "application/xhtml+xml"])
async def test_active_content_is_always_downloaded(
    client: httpx.AsyncClient, files: ToolFiles, mime: str
) -> None:
    file = await files.save_bytes(b"<script>alert(1)</script>", mime_type=mime)
    r = await client.get(files.url_for(file))
    assert r.status_code == 200
    assert r.headers["content-disposition"].startswith("attachment; ")
    assert r.headers["x-content-type-options"] == "nosniff"


async def test_an_expired_url_is_refused(client: httpx.AsyncClient, files: ToolFiles) -> None:
    file = await files.save_bytes(PNG, mime_type="image/png")
    old = files.url_for(file, now=time.time() - 301)
    r = await client.get(old)
    assert r.status_code == 403 and r.json() == FORBIDDEN
    fresh = files.url_for(file, now=time.time() - 200)
    assert (await client.get(fresh)).status_code == 200


async def test_tampered_urls_are_refused(client: httpx.AsyncClient, files: ToolFiles) -> None:
    mine = await files.save_bytes(PNG, mime_type="image/png")
    other = await files.save_bytes(b"someone else's", mime_type="text/plain")
    path, q = split(files.url_for(mine))
    assert (await client.get(path, params=q)).status_code == 200
    variants = [
        (f"/files/tools/{other.id}.txt", q),  # another file with my signature
        (path, {**q, "timestamp": str(int(q["timestamp"]) + 1)}),
        (path, {**q, "nonce": q["nonce"][::-1]}),
        (path, {**q, "sign": ("B" if q["sign"][0] == "A" else "A") + q["sign"][1:]}),
        (path, {**q, "sign": signature(mine.id, q["timestamp"], q["nonce"], b"wrong key")}),
    ]
    for p, params in variants:
        r = await client.get(p, params=params)
        assert r.status_code == 403, (p, params)
        assert r.json() == FORBIDDEN


async def test_missing_signature_fields_are_a_bad_request(
    client: httpx.AsyncClient, files: ToolFiles
) -> None:
    file = await files.save_bytes(PNG, mime_type="image/png")
    path, q = split(files.url_for(file))
    for missing in ("timestamp", "nonce", "sign"):
        r = await client.get(path, params={k: v for k, v in q.items() if k != missing})
        assert r.status_code == 400
        assert r.json() == {"code": "invalid_param", "message": f"{missing} is required", "status": 400}


async def test_unknown_ids_are_not_found(client: httpx.AsyncClient, files: ToolFiles) -> None:
    unknown = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
    r = await client.get(f"/files/tools/{unknown}.png", params=signed_query(unknown, int(time.time())))
    assert r.status_code == 404 and r.json() == NOT_FOUND


async def test_a_file_whose_bytes_are_gone_is_not_found(
    client: httpx.AsyncClient, files: ToolFiles, tmp_path: Path
) -> None:
    file = await files.save_bytes(PNG, mime_type="image/png")
    (tmp_path / "tool-files" / file.id[:2] / file.id).unlink()
    r = await client.get(files.url_for(file))
    assert r.status_code == 404 and r.json() == NOT_FOUND


async def test_remote_links_have_nothing_to_serve(client: httpx.AsyncClient, files: ToolFiles) -> None:
    from loopwright.tools.base import ImageMessage, ToolContext

    remote = await files.save_output(ImageMessage("https://img.example/x.png"), ToolContext())
    r = await client.get(f"/files/tools/{remote.id}.png", params=signed_query(remote.id, int(time.time())))
    assert r.status_code == 404


@pytest.mark.parametrize(
    "raw_path",
    [
        "/files/tools/..%2F..%2Fsecret_key",
        "/files/tools/%2e%2e%2fsecret_key",
        "/files/tools/..%5Csecret_key",
        "/files/tools/secret_key",
        "/files/tools/{id}.png%2F..%2F..%2Fsecret_key",
        "/files/tools/{id}.png.exe",
        "/files/tools/{id}..png",
        "/files/tools/{ID}.png",  # upper case: not the canonical id
        "/files/tools/{id}.averyveryverylongext",
        "/files/tools/{id}%00.png",
        "/files/tools/{id[:2]}%2F{id}",
    ],
)
async def test_traversal_and_malformed_names_never_reach_other_files(
    client: httpx.AsyncClient, files: ToolFiles, tmp_path: Path, raw_path: str
) -> None:
    (tmp_path / "secret_key").write_text("top secret")
    file = await files.save_bytes(b"the file", mime_type="text/plain")
    path = raw_path.replace("{id[:2]}", file.id[:2]).replace("{id}", file.id).replace("{ID}", file.id.upper())
    # Signed for the real id, so only the name check stands between the request and the disk.
    query = urlencode(signed_query(file.id, int(time.time())))
    r = await client.send(client.build_request("GET", httpx.URL(f"http://testserver{path}?{query}")))
    assert r.status_code == 404, path
    assert r.json()["code"] == "not_found"  # no route for a name with a '/', or our own answer


async def test_the_extension_is_not_signed_and_never_picks_the_record(
    client: httpx.AsyncClient, files: ToolFiles
) -> None:
    file = await files.save_bytes(b"the file", mime_type="text/plain")
    path, q = split(files.url_for(file))
    for ext in ("", ".json", ".png"):
        r = await client.get(f"/files/tools/{file.id}{ext}", params=q)
        assert r.status_code == 200 and r.content == b"the file"  # as Dify: the id alone names the file
        assert r.headers["content-type"].startswith("text/plain")  # the stored type, whatever the name says


async def test_without_configured_files_the_server_builds_them_in_the_data_dir(
    client: httpx.AsyncClient, server_app: FastAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPWRIGHT_DATA_DIR", str(tmp_path))
    state = server_app.state.loopwright
    state.tool_files = None  # as a server without configured files starts (the fixture sets test ones)
    manager = await state.files()
    assert await state.files() is manager
    assert (tmp_path / "files" / "secret_key").is_file()
    file: ToolFile = await manager.save_bytes(b"hello", mime_type="text/plain", filename="hello.txt")
    assert (tmp_path / "files" / "tool-files" / file.id[:2] / file.id).read_bytes() == b"hello"
    r = await client.get(manager.url_for(file))
    assert r.status_code == 200 and r.content == b"hello"
    assert r.headers["content-type"].startswith("text/plain")
