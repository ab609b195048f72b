"""Schema-driven fuzzing of every route: schemathesis, from the OpenAPI document the server serves
(``GET /openapi.json``), against a real server on 127.0.0.1 — with an app key, a dataset key, the admin
token and a wrong key. Every answer must be no 5xx, a documented status, a documented content type and
a body its schema allows.

The bounded run here makes ``LOOPWRIGHT_FUZZ_EXAMPLES`` (default 5) cases per operation with the app
key, and 3 with each other credential (they are mostly refused at the door); a fixed seed: the same
cases each run. The longer run of docs/security.md sets it higher and adds
schemathesis's coverage phase (``LOOPWRIGHT_FUZZ_PHASES``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

import httpx
import pytest
from pydantic import SecretStr

from loopwright.config import Settings
from loopwright.knowledge import KnowledgeBase
from loopwright.server.app import create_app
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from tests.live_server import serving

EXAMPLES = int(os.environ.get("LOOPWRIGHT_FUZZ_EXAMPLES", "5"))
PHASES = os.environ.get("LOOPWRIGHT_FUZZ_PHASES", "examples,fuzzing")
ADMIN = "fuzz-admin-token"
# What every answer must satisfy (schemathesis's names). Not among them: positive_data_acceptance,
# which asks that every request the document allows is accepted — several routes still check more
# than their document says (docs/security.md).
CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
        "response_headers_conformance",
    ]
)


def _st() -> str:
    found = shutil.which("st", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("schemathesis is not installed (the [dev] extra)")
    return found


@pytest.fixture
async def fuzz_db(tmp_path: Path) -> AsyncIterator[Database]:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'fuzz.db'}")
    await db.migrate()
    yield db
    await db.close()


async def _credentials(db: Database, tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": ["fine"], "features": ["tool-call"]}), encoding="utf-8")
    config = {"model": f"scripted:{script}", "tools": [{"name": "calculator"}]}
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "fuzz", config)
        key = await repo.create_api_key(s, app.id)
    kb = KnowledgeBase.open(db.url)
    try:
        dataset_key = await kb.store.create_api_key()
    finally:
        await kb.close()
    return {"app key": key.token, "dataset key": dataset_key, "admin token": ADMIN, "wrong key": "app-wrong"}


async def test_openapi_document_is_served_and_every_error_is_difys(fuzz_db: Database) -> None:
    app = create_app(fuzz_db, Settings(admin_token=SecretStr(ADMIN)))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        r = await http.get("/openapi.json")
    assert r.status_code == 200
    doc = r.json()
    assert doc["components"]["schemas"]["Error"]["required"] == ["code", "message", "status"]
    operations = [(p, m, op) for p, ops in doc["paths"].items() for m, op in ops.items()]
    assert len(operations) > 100
    for path, method, op in operations:
        assert op["responses"]["4XX"]["content"]["application/json"]["schema"] == _errors_of(path), (
            method,
            path,
        )
        assert "422" not in op["responses"], (method, path)
        declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        assert set(re.findall(r"{(\w+)}", path)) <= declared, (method, path)
    chat = doc["paths"]["/v1/chat-messages"]["post"]
    assert chat["security"] == [{"AppKey": []}] and chat["requestBody"]["required"] is True
    assert "text/event-stream" in chat["responses"]["200"]["content"]
    assert doc["paths"]["/v1/datasets"]["get"]["security"] == [{"DatasetKey": []}]
    assert doc["paths"]["/console/api/apps"]["get"]["security"] == [{"AdminToken": []}]
    assert "security" not in doc["paths"]["/health"]["get"]


def _errors_of(path: str) -> dict[str, object]:
    """The error body a path documents: Dify's, save on the other wires (docs/protocols.md)."""
    if path.startswith(("/v1/chat/completions", "/v1/responses", "/v1/models")):
        return {"$ref": "#/components/schemas/OpenAIError"}
    if path.startswith("/a2a/"):
        return {"$ref": "#/components/schemas/JsonRpcError"}
    if path == "/ag-ui":  # a refused run input; a bad key is Dify's 401 as everywhere
        return {
            "oneOf": [{"$ref": "#/components/schemas/AgUiRunError"}, {"$ref": "#/components/schemas/Error"}]
        }
    return {"$ref": "#/components/schemas/Error"}


@pytest.mark.timeout(600)
async def test_every_route_fuzzed_with_every_credential(fuzz_db: Database, tmp_path: Path) -> None:
    st = _st()
    credentials = await _credentials(fuzz_db, tmp_path)
    app = create_app(fuzz_db, Settings(admin_token=SecretStr(ADMIN)), ping_interval=0.05)
    app.state.loopwright.upload_dir = tmp_path / "uploads"
    failed: list[str] = []
    async with serving(app) as url:
        for who, token in credentials.items():
            report = tmp_path / f"{who.replace(' ', '-')}.txt"
            with report.open("wb") as out:
                examples = EXAMPLES if who == "app key" else min(EXAMPLES, 3)
                code = await _fuzz(st, url, token, out, tmp_path, examples)
            text = report.read_text(encoding="utf-8", errors="replace")
            generated = re.search(r"(\d+) generated", text)
            print(f"{who}: {generated.group(0) if generated else '?'} (exit {code})")
            if code != 0:
                failed.append(f"{who}:\n{text[-6000:]}")
    assert failed == []


async def _fuzz(st: str, url: str, token: str, out: BinaryIO, folder: Path, examples: int) -> int:
    process = await asyncio.create_subprocess_exec(
        st,
        "run",
        f"{url}/openapi.json",
        "--header",
        f"Authorization: Bearer {token}",
        "--checks",
        CHECKS,
        "--phases",
        PHASES,
        "--max-examples",
        str(examples),
        "--seed",
        "1",
        "--no-shrink",
        "--request-timeout",
        "30",
        "--workers",
        "1",
        stdout=out,
        stderr=asyncio.subprocess.STDOUT,
        cwd=folder,  # its .schemathesis/ cache
        env={**os.environ, "NO_COLOR": "1", "SCHEMATHESIS_TELEMETRY": "false"},
    )
    return await process.wait()
