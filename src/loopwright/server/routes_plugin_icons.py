"""``GET /files/plugins/{author}/{name}/icon``: an installed plugin's icon, the URL ``/v1/meta`` gives
for its tools. No key (an ``<img>`` cannot send one; the icon is the plugin's public asset). An SVG is
served with a policy that forbids scripts and loads, so opened directly it cannot act on our origin."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from loopwright.app.run.runtime import AppRuntime
from loopwright.server.errors import not_found
from loopwright.server.state import get_state

router = APIRouter()

SVG_POLICY = "default-src 'none'; style-src 'unsafe-inline'; sandbox"


@router.get("/files/plugins/{author}/{name}/icon")
async def plugin_icon(author: str, name: str, state: Annotated[AppRuntime, Depends(get_state)]) -> Response:
    plugins = await state.plugins()
    found = await plugins.icon(f"{author}/{name}")
    if found is None:
        raise not_found("plugin icon is not found")
    data, mime = found
    headers = {"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"}
    if mime == "image/svg+xml":
        headers["Content-Security-Policy"] = SVG_POLICY
    return Response(data, media_type=mime, headers=headers)
