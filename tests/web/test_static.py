"""The web UI as the server serves it: pages with their security headers, hashed assets, and the check
that the committed build is the build of the committed sources."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import httpx

from loopwright.server import routes_web
from loopwright.server.app import create_app
from loopwright.store.db import Database
from tests.live_server import serving

ROOT = Path(__file__).resolve().parents[2]


def load_hash_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("web_source_hash", ROOT / "scripts" / "web_source_hash.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_committed_build_is_the_build_of_the_sources() -> None:
    script = load_hash_script()
    assert script.stored_hash() == script.source_hash(), (
        "the web UI build in src/loopwright/server/static is stale: "
        "run `cd web && npm ci && npm run build` and commit the result"
    )


def test_the_source_hash_changes_with_a_source_file_and_ignores_tests(tmp_path: Path) -> None:
    script = load_hash_script()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.ts").write_text("export const a = 1;\n")
    (tmp_path / "tests").mkdir()
    before = script.source_hash(tmp_path)
    (tmp_path / "tests" / "a.test.ts").write_text("test")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "x.js").write_text("x")
    assert script.source_hash(tmp_path) == before
    (tmp_path / "src" / "a.ts").write_text("export const a = 2;\n")
    assert script.source_hash(tmp_path) != before


async def test_the_chat_page_is_served_with_a_csp_without_inline_script(db: Database) -> None:
    async with serving(create_app(db)) as url, httpx.AsyncClient(base_url=url) as client:
        page = await client.get("/chat/3f2c9a4e-0000-4000-8000-000000000001")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert page.headers["referrer-policy"] == "no-referrer"
        assert "<script>" not in page.text  # every script is a file
        scripts = re.findall(r'src="(/static/assets/[^"]+\.js)"', page.text)
        assert scripts
        asset = await client.get(scripts[0])
        assert asset.status_code == 200 and "javascript" in asset.headers["content-type"]
        assert "immutable" in asset.headers["cache-control"]
        assert (await client.get("/chat/bad%20id")).status_code == 404
        assert (await client.get("/static/assets/no-such-file.js")).status_code == 404


async def test_the_diagram_renderer_alone_allows_inline_styles_and_only_this_origin_frames_it(
    db: Database,
) -> None:
    async with serving(create_app(db)) as url, httpx.AsyncClient(base_url=url) as client:
        chat = (await client.get("/chat/3f2c9a4e-0000-4000-8000-000000000001")).headers
        assert "frame-src 'self'" in chat["content-security-policy"]
        assert "frame-ancestors 'none'" in chat["content-security-policy"]
        frame = await client.get("/chat-renderer")
        assert frame.status_code == 200 and frame.headers["content-type"].startswith("text/html")
        policy = dict(
            part.strip().split(" ", 1) for part in frame.headers["content-security-policy"].split(";")
        )
        assert policy["script-src"] == "'self'"  # no inline script, no eval, no handler in a label
        assert policy["style-src"] == "'self' 'unsafe-inline'"  # Mermaid's inline styles, here only
        assert policy["frame-ancestors"] == "'self'"
        assert policy["default-src"] == "'none'" and "connect-src" not in policy  # fetches nothing
        assert "<script>" not in frame.text
        assert re.findall(r'src="(/static/assets/renderer-[^"]+\.js)"', frame.text)


async def test_without_a_build_the_page_says_how_to_build_it(db: Database, tmp_path: Path) -> None:
    app = create_app(db)
    bare = type(app)()
    routes_web.install(bare, tmp_path)  # an empty static folder: sources without a build
    async with serving(bare) as url, httpx.AsyncClient(base_url=url) as client:
        page = await client.get("/chat/abc")
    assert page.status_code == 503 and "npm run build" in page.text
