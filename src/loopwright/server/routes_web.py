"""The web UI: its pages (``/chat/{app_id}``, and more as they are added) and their built assets under
``/static/``, from ``server/static`` (built from ``web/`` by Vite and shipped in the package).

A page is one HTML file that loads hashed script and style files; it is served with a Content Security
Policy that allows scripts and styles only from this origin (no inline script, no ``eval``), so text that
a model or a tool wrote cannot run even if it slipped past the Markdown sanitizer. The pages speak only
the public ``/v1`` API with the key the user brings (see docs/web.md); the server gives them no secret.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI, Response
from fastapi.responses import FileResponse, PlainTextResponse
from starlette.staticfiles import StaticFiles

from loopwright.server.errors import not_found

STATIC_DIR = Path(__file__).resolve().parent / "static"

# Images may come from tools (signed /files/tools URLs on this origin), uploads (blob: previews) and
# data: URLs (drawn diagrams and charts among them); everything the page fetches goes to this origin's
# /v1 API. The only frame is the diagram renderer, on this origin.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "media-src 'self' blob:",
        "connect-src 'self'",
        "font-src 'self'",
        "frame-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
# The diagram renderer (/chat-renderer, hidden in the chat page; web/src/renderer/main.ts): Mermaid
# styles its SVG inline, so this page alone allows inline styles. It still runs only this origin's
# scripts, fetches nothing, and only a page of this origin may frame it.
RENDERER_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'self'",
    ]
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # the page names the current hashed assets: revalidate it
}
_APP_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class _Assets(StaticFiles):
    """The built assets: their names carry a content hash, so they are cached for good."""

    def file_response(self, *args: object, **kwargs: object) -> Response:
        response = super().file_response(*args, **kwargs)  # type: ignore[arg-type]
        response.headers["Cache-Control"] = "public, max-age=31536000, immutable"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


def page_response(
    name: str, static_dir: Path = STATIC_DIR, headers: dict[str, str] = PAGE_HEADERS
) -> Callable[[], Response]:
    """A maker of responses for the built page ``name`` (``static/{name}/index.html``) with the
    security headers. The file is looked at once, here, so serving it only reads it (off the loop)."""
    path = static_dir / name / "index.html"
    if not path.is_file():
        return lambda: PlainTextResponse(
            "The web UI is not built: run `cd web && npm ci && npm run build` (see docs/web.md).",
            status_code=503,
        )
    stat = path.stat()
    return lambda: FileResponse(
        path, media_type="text/html; charset=utf-8", headers=headers, stat_result=stat
    )


def install(app: FastAPI, static_dir: Path = STATIC_DIR) -> None:
    """Serve the web UI's pages and ``/static/assets/`` on ``app``."""
    chat_page = page_response("chat", static_dir)
    renderer_page = page_response(
        "renderer",
        static_dir,
        {**PAGE_HEADERS, "Content-Security-Policy": RENDERER_SECURITY_POLICY},
    )

    @app.get("/chat-renderer", include_in_schema=False)
    async def diagram_renderer() -> Response:
        return renderer_page()

    @app.get("/chat", include_in_schema=False)
    async def chat_without_app() -> Response:  # the page says that a share link is needed
        return chat_page()

    @app.get("/chat/{app_id}", include_in_schema=False)
    async def chat(app_id: str) -> Response:
        if not _APP_ID.fullmatch(app_id):
            raise not_found("Not Found.")
        return chat_page()

    assets = static_dir / "assets"
    if assets.is_dir():
        app.mount("/static/assets", _Assets(directory=assets), name="web-assets")
