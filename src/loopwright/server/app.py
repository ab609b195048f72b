"""The HTTP server: Dify's Service API for agent-chat apps, on FastAPI.

``create_app(db)`` builds the ASGI app; ``run_server(...)`` migrates the database and serves it with
uvicorn (what ``loopwright serve`` calls).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from fastapi import FastAPI

from loopwright.app.admin.health import ready_line
from loopwright.app.run.runtime import AppRuntime, Database, migrate
from loopwright.config import ConfigError, Settings
from loopwright.observe import otlp_provider, tracing_enabled
from loopwright.server import (
    errors,
    openapi,
    routes_a2a,
    routes_ag_ui,
    routes_agent_log,
    routes_annotations,
    routes_app,
    routes_approvals,
    routes_audio,
    routes_chat,
    routes_completion,
    routes_conversations,
    routes_dataset_edits,
    routes_dataset_tags,
    routes_datasets,
    routes_end_users,
    routes_file_previews,
    routes_files,
    routes_health,
    routes_human_input,
    routes_mcp,
    routes_openai,
    routes_plugin_icons,
    routes_run_events,
    routes_tool_files,
    routes_unsupported,
    routes_web,
)
from loopwright.server.cors import ServiceApiCors
from loopwright.server.event_stream import ServiceAPI
from loopwright.tools.base import Tool

DEFAULT_PING_INTERVAL = 10.0
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5001

log = logging.getLogger(__name__)

# Seconds between full garbage collections of a serving process (tune_gc): its young collections
# are rare, and the requests' cyclic garbage that outlived one would otherwise wait for an hour.
FULL_COLLECTION_INTERVAL = 10.0


def create_app(
    db: Database,
    settings: Settings | None = None,
    *,
    ping_interval: float = DEFAULT_PING_INTERVAL,
    tools: Sequence[Tool] | None = None,
    workers: int = 1,
) -> FastAPI:
    """The Service API app on ``db``. ``settings`` (default: :func:`load_settings` when first needed)
    configure model providers; ``tools`` default to the built-in tools; ``ping_interval`` is the
    silence after which a stream sends ``event: ping``; ``workers`` > 1 when several processes serve
    the same database (stops then reach the process running the message)."""
    if tools is None:
        runtime = AppRuntime.with_builtin_tools(db, settings, ping_interval=ping_interval, workers=workers)
    else:
        runtime = AppRuntime(db, settings, tools=tools, ping_interval=ping_interval, workers=workers)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            await runtime.open()  # marks what a killed predecessor left running as interrupted
        except ConfigError:  # e.g. the durable executor without its extra: no server
            raise
        except Exception:  # a database down at start: serve anyway (/health says so); the first run retries
            log.exception("the database did not answer at start-up; the worker lease is retried on first use")
        runtime.approval_timer.start()  # runs paused for approvals whose time is up are resumed, denied
        interval = getattr(app.state, "full_collection_interval", None)  # set by tune_gc
        collector = asyncio.get_running_loop().create_task(_collect_every(interval)) if interval else None
        async with mcp.running():  # MCP's sessions end before the runs are stopped and saved
            yield
        if collector is not None:
            collector.cancel()
        await runtime.shutdown()  # stopped runs are saved before the process ends

    app = ServiceAPI(
        title="loopwright",
        description="Dify-compatible Service API for agent-chat apps",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=openapi.OPENAPI_PATH,  # no key needed (server.openapi)
    )
    app.state.db = db
    app.state.loopwright = runtime
    runtime.journal.enabled = runtime.settings.resumable_streams  # off: no re-attach, no journal cost
    errors.install(app)
    app.include_router(routes_chat.router)
    app.include_router(routes_completion.router)
    app.include_router(routes_openai.router)
    app.include_router(routes_a2a.router)
    app.include_router(routes_ag_ui.router)
    mcp = routes_mcp.McpEndpoint(runtime)
    app.router.routes.append(mcp.route())
    app.include_router(routes_run_events.router)
    app.include_router(routes_conversations.router)
    app.include_router(routes_agent_log.router)
    app.include_router(routes_health.router)
    app.include_router(routes_app.router)
    app.include_router(routes_files.router)
    app.include_router(routes_tool_files.router)
    app.include_router(routes_plugin_icons.router)
    app.include_router(routes_file_previews.router)
    app.include_router(routes_dataset_tags.router)  # before the dataset routes: /datasets/tags is no id
    app.include_router(routes_datasets.router)
    app.include_router(routes_unsupported.router)
    app.include_router(routes_end_users.router)
    app.include_router(routes_annotations.router)
    app.include_router(routes_approvals.router)
    app.include_router(routes_human_input.router)
    routes_web.install(app)  # the web UI: /chat/{app_id} and /static/assets
    app.include_router(routes_audio.router)
    app.include_router(routes_dataset_edits.router)
    token = runtime.settings.metrics_token
    if token is not None:  # Prometheus /metrics: off unless a token is set (prometheus_client only then)
        from loopwright.server import metrics

        metrics.install(app, runtime, token.get_secret_value())
    admin_token = runtime.settings.admin_token
    if admin_token is not None:  # the admin API and console: off unless a token is set (/console: 404)
        from loopwright.server import console

        console.install(app, runtime, admin_token.get_secret_value())
    if tracing_enabled():  # OpenTelemetry: on when an OTLP endpoint is set (the standard OTEL_* variables)
        from opentelemetry import trace

        from loopwright.server import tracing

        trace.set_tracer_provider(otlp_provider())
        tracing.install(app, runtime)
    openapi.install(app)
    app.add_middleware(ServiceApiCors, origins=runtime.settings.cors_allow_origins)  # outermost
    return app


def serve(
    app: FastAPI, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, access_log: bool = False
) -> None:
    """Serve ``app`` with uvicorn until interrupted, in this process. The access log is off unless
    asked for: formatting a line per request costs more than the request's own routing."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:  # accepting connections: say so in one line scripts can wait for
                bound = [s.getsockname() for server in self.servers for s in server.sockets]
                address = f"http://{host}:{bound[0][1] if bound else port}"  # the real port of --port 0
                state: AppRuntime = app.state.loopwright
                print(await ready_line(state.db, address), flush=True)

    tune_gc(app)
    config = uvicorn.Config(app, host=host, port=port, log_level="info", ws="none", access_log=access_log)
    Server(config).run()


def tune_gc(app: FastAPI) -> None:
    """Fewer, cheaper garbage collections for a long-running server: what start-up built (modules,
    the app) is frozen out of collection, and the youngest generation is collected after 50,000
    allocations instead of 700 — with a thousand streams the default collects several times per
    event wave, and each full collection walks every object of every stream (pauses of tens of ms).
    The oldest generation is then collected on a timer instead (every FULL_COLLECTION_INTERVAL s,
    from the app's lifespan): its own trigger would come after about an hour at a thousand streams,
    and the per-request objects that uvicorn and FastAPI keep in reference cycles, promoted there
    while their request lasted, made the process grow by ~3 KB a message until then."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    app.state.full_collection_interval = FULL_COLLECTION_INTERVAL


async def _collect_every(interval: float) -> None:
    """A full garbage collection every ``interval`` seconds (see :func:`tune_gc`)."""
    import gc

    while True:
        await asyncio.sleep(interval)
        started = time.perf_counter()
        found = gc.collect()
        log.debug(
            "full garbage collection: %d objects in %.0f ms", found, (time.perf_counter() - started) * 1000
        )


WORKERS_ENV = "LOOPWRIGHT_WORKERS"


def run_server(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    database_url: str | None = None,
    *,
    ping_interval: float = DEFAULT_PING_INTERVAL,
    workers: int = 1,
    access_log: bool = False,
) -> None:
    """Migrate the database, build the app and serve it (blocks). With ``workers`` > 1, uvicorn
    starts that many processes, each building its app with :func:`app_from_environment`."""
    if workers < 1:
        raise ValueError("workers must be 1 or more")
    db = Database(database_url)
    asyncio.run(migrate(db))
    if workers == 1:
        serve(create_app(db, ping_interval=ping_interval), host, port, access_log=access_log)
        return
    import uvicorn

    # The worker processes read these (they are new interpreters, not forks of this one).
    os.environ["DATABASE_URL"] = db.url
    os.environ[WORKERS_ENV] = str(workers)
    uvicorn.run(
        "loopwright.server.app:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        ws="none",
        access_log=access_log,
    )


def app_from_environment() -> FastAPI:
    """The app of one worker process of ``run_server(workers=N)``: database and worker count from the
    environment."""
    app = create_app(Database(), workers=int(os.environ.get(WORKERS_ENV, "1")))
    tune_gc(app)
    return app
