"""Signed file links: the link the history hands out for an upload and a tool file's link are served
until their expiry and refused one second past it (the server's clock injected, no sleeps); an
upload's valid link is the permission to that one file only, and another app's file is refused under
this app's routes (its preview, its messages' files, its file inputs)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI

from loopwright.tools.files.manager import ToolFiles
from loopwright.tools.files.storage import LocalFileStorage
from tests.server.conftest import NewApp, ServiceApp

TTL = 300
DOCUMENTS = {
    "file_upload": {"enabled": True, "allowed_types": ["document"], "number_limits": 2},
    "user_input_form": [
        {
            "variable": "doc",
            "label": "Doc",
            "type": "file",
            "required": False,
            "allowed_file_types": ["document"],
        }
    ],
}
SECRET_TEXT = b"alpha's private notes: 6021"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(server_app: FastAPI, tmp_path: Path) -> Clock:
    """The server's clock for signing and checking links (1,700,000,000: a fixed instant)."""
    tick = Clock(1_700_000_000.0)
    runtime = server_app.state.loopwright
    runtime.upload_dir = tmp_path / "uploads"
    runtime.tool_files = ToolFiles(LocalFileStorage(tmp_path / "tool-files"), b"k", ttl=TTL, clock=tick)
    return tick


async def upload(client: httpx.AsyncClient, app: ServiceApp, user: str = "alice") -> str:
    files = {"file": ("notes.txt", SECRET_TEXT, "text/plain")}
    r = await client.post("/v1/files/upload", data={"user": user}, files=files, headers=app.headers)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def handed_out_link(client: httpx.AsyncClient, app: ServiceApp, upload_id: str) -> str:
    """The signed link the message history gives the upload (as a client sees it)."""
    files = [{"type": "document", "transfer_method": "local_file", "upload_file_id": upload_id}]
    body = {"query": "read it", "user": "alice", "response_mode": "blocking", "inputs": {}, "files": files}
    asked = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert asked.status_code == 200, asked.text
    listed = await client.get(
        "/v1/messages",
        params={"conversation_id": asked.json()["conversation_id"], "user": "alice"},
        headers=app.headers,
    )
    (item,) = listed.json()["data"][0]["message_files"]
    return str(item["url"])


def timestamp_of(link: str) -> float:
    return float(parse_qs(urlsplit(link).query)["timestamp"][0])


async def test_an_uploads_link_is_refused_past_its_expiry(
    client: httpx.AsyncClient, new_app: NewApp, clock: Clock
) -> None:
    app = await new_app(["ok"], **DOCUMENTS)
    link = await handed_out_link(client, app, await upload(client, app))
    assert timestamp_of(link) == clock.now  # signed by the server's clock
    clock.now += TTL  # the last second it holds
    served = await client.get(link)
    assert served.status_code == 200 and served.content == SECRET_TEXT
    clock.now += 1
    refused = await client.get(link)
    assert refused.status_code == 404
    assert refused.json()["message"] == "File not found or signature is invalid"
    assert SECRET_TEXT not in refused.content


async def test_a_tool_files_link_is_refused_past_its_expiry(
    client: httpx.AsyncClient, server_app: FastAPI, clock: Clock
) -> None:
    runtime_files: ToolFiles = await server_app.state.loopwright.files()
    file = await runtime_files.save_bytes(SECRET_TEXT, mime_type="text/plain", filename="out.txt")
    link = runtime_files.url_for(file)
    clock.now += TTL
    served = await client.get(link)
    assert served.status_code == 200 and served.content == SECRET_TEXT
    clock.now += 1
    refused = await client.get(link)
    assert refused.status_code == 403 and SECRET_TEXT not in refused.content
    # a link from the future beyond the clocks' allowed skew is no better
    ahead = dataclasses.replace(runtime_files, clock=lambda: clock.now + 61)
    assert (await client.get(ahead.url_for(file))).status_code == 403


async def test_another_apps_file_is_refused_under_this_apps_routes(
    client: httpx.AsyncClient, new_app: NewApp, clock: Clock
) -> None:
    alpha = await new_app(["ok"], name="alpha", **DOCUMENTS)
    beta = await new_app(["ok", "ok", "ok"], name="beta", **DOCUMENTS)
    alphas, betas = await upload(client, alpha), await upload(client, beta)
    link = await handed_out_link(client, alpha, alphas)
    assert (await client.get(link)).status_code == 200  # the link is valid

    # the app-keyed preview of the same file, with beta's key
    preview = await client.get(f"/v1/files/{alphas}/preview", params={"user": "alice"}, headers=beta.headers)
    assert preview.status_code in (403, 404) and SECRET_TEXT not in preview.content
    # alpha's file as a file of beta's message
    files = [{"type": "document", "transfer_method": "local_file", "upload_file_id": alphas}]
    body = {"query": "read it", "user": "alice", "response_mode": "blocking", "inputs": {}, "files": files}
    asked = await client.post("/v1/chat-messages", json=body, headers=beta.headers)
    assert asked.status_code == 400 and SECRET_TEXT.decode() not in asked.text
    # and as beta's file input
    doc = {"type": "document", "transfer_method": "local_file", "upload_file_id": alphas}
    body = {"query": "read it", "user": "alice", "response_mode": "blocking", "inputs": {"doc": doc}}
    asked = await client.post("/v1/chat-messages", json=body, headers=beta.headers)
    assert asked.status_code == 400 and SECRET_TEXT.decode() not in asked.text
    own = await client.post(
        "/v1/chat-messages",
        json={**body, "inputs": {"doc": {**doc, "upload_file_id": betas}}},
        headers=beta.headers,
    )
    assert own.status_code == 200, own.text  # beta's own upload is taken: the refusal was the app's
    # the link's signature names its file and its route: another file or route under it is refused
    for forged in (link.replace(alphas, betas), link.replace("file-preview", "image-preview")):
        refused = await client.get(forged)
        assert refused.status_code == 404 and SECRET_TEXT not in refused.content
