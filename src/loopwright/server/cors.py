"""CORS on the Service API (``/v1``), as Dify's: a browser page may call it from the configured origins
(``cors_allow_origins``; Dify's default is any) with Dify's methods and headers — and on AG-UI's
``/ag-ui``, whose clients are mostly browser pages. Other paths (the signed file URLs) are left as
they are. A request without an ``Origin`` header — every non-browser
client — passes straight through, at no cost.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

METHODS = ("GET", "PUT", "POST", "DELETE", "OPTIONS", "PATCH")
HEADERS = ("Content-Type", "Authorization", "X-App-Code")
PREFIX = "/v1"
AG_UI = "/ag-ui"


class ServiceApiCors:
    """ASGI middleware: Starlette's CORS handling for ``/v1`` paths and ``/ag-ui`` only."""

    def __init__(self, app: ASGIApp, origins: Sequence[str]) -> None:
        self.app = app
        self.cors = CORSMiddleware(
            app, allow_origins=list(origins), allow_methods=METHODS, allow_headers=HEADERS
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] == "http" and (path in (PREFIX, AG_UI) or path.startswith(PREFIX + "/")):
            await self.cors(scope, receive, send)
        else:
            await self.app(scope, receive, send)
