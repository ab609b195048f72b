"""CORS as Dify's: on the Service API (``/v1``) and on the signed file URLs (``/files/…``: upload
previews and tool files, which a page on another origin may ``fetch()``), a browser page may call from
the configured origins (``cors_allow_origins``; Dify's default is any) with Dify's methods and headers
— and on AG-UI's ``/ag-ui``, whose clients are mostly browser pages. Other paths are left as they
are. A request without an ``Origin`` header — every non-browser client — passes straight through, at
no cost.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

METHODS = ("GET", "PUT", "POST", "DELETE", "OPTIONS", "PATCH")
HEADERS = ("Content-Type", "Authorization", "X-App-Code", "X-App-Passport")
EXPOSED = ("X-Version", "X-Env", "X-Trace-Id")  # Dify's service API exposes these
FILE_HEADERS = ("Content-Type", "X-CSRF-Token")  # Dify's files blueprint
PREFIX = "/v1"
FILES_PREFIX = "/files/"
AG_UI = "/ag-ui"


class ServiceApiCors:
    """ASGI middleware: Starlette's CORS handling for ``/v1``, ``/ag-ui`` and ``/files/`` paths only."""

    def __init__(self, app: ASGIApp, origins: Sequence[str]) -> None:
        self.app = app
        self.cors = CORSMiddleware(
            app,
            allow_origins=list(origins),
            allow_methods=METHODS,
            allow_headers=HEADERS,
            expose_headers=EXPOSED,
        )
        self.files = CORSMiddleware(
            app, allow_origins=list(origins), allow_methods=METHODS, allow_headers=FILE_HEADERS
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif path in (PREFIX, AG_UI) or path.startswith(PREFIX + "/"):
            await self.cors(scope, receive, send)
        elif path.startswith(FILES_PREFIX):
            await self.files(scope, receive, send)
        else:
            await self.app(scope, receive, send)
