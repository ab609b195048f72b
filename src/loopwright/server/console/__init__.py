"""The admin API (``/console/api/…``) and the console page (``/console``): on only when an admin token is set
(``LOOPWRIGHT_ADMIN_TOKEN``); without one nothing here is installed and ``/console`` is a 404.

The routes parse, check the admin token and call the app layer (:mod:`loopwright.app.admin.apps`,
:mod:`~loopwright.app.admin.datasets`, :mod:`~loopwright.app.admin.app_logs`,
:mod:`~loopwright.app.admin.model_check`, :mod:`loopwright.evals.record`)
— the same functions the CLI calls. See docs/admin-api.md.
"""

from __future__ import annotations

from fastapi import FastAPI, Response

from loopwright.app.run.prompt_log import PromptLog
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.console import (
    auth,
    routes_apps,
    routes_evals,
    routes_knowledge,
    routes_logs,
    routes_memory,
)
from loopwright.server.routes_web import page_response

__all__ = ["install"]


def install(app: FastAPI, runtime: AppRuntime, token: str) -> None:
    """Serve the admin API on ``app``, behind ``token``; the runtime keeps the prompts its models
    receive for the debug view (``GET /console/api/messages/{id}/prompts``)."""
    auth.set_token(app, token)
    runtime.prompt_log = PromptLog()
    app.include_router(routes_apps.router)
    app.include_router(routes_knowledge.router)
    app.include_router(routes_logs.router)
    app.include_router(routes_evals.router)
    app.include_router(routes_memory.router)
    console_page = page_response("console")

    @app.get("/console", include_in_schema=False)
    @app.get("/console/", include_in_schema=False)
    async def console() -> Response:  # the page asks for the token; it holds no secret itself
        return console_page()
