"""The plugin host: runs installed plugins as subprocesses and holds sessions with them.

A plugin is started on its first call and kept warm for the next ones; several calls share its
process at once. A watch task looks at every plugin every ``watch_interval`` seconds: one that has
stopped writing (no heartbeat for ``heartbeat_timeout``) is killed, one that has served no call for
``idle_timeout`` is stopped, one that died is forgotten — the next call starts it again. Every call
has a deadline; a plugin that fails, hangs or dies mid-call ends that call with a
:class:`PluginCallError` naming the plugin and what happened, and never anything else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from loopwright.tools.base import ToolContext, ToolInvokeError
from loopwright.tools.dify_plugins import backwards, protocol
from loopwright.tools.dify_plugins.installer import InstalledPlugin, PluginStore
from loopwright.tools.dify_plugins.process import PluginProcess, plugin_environment
from loopwright.tools.dify_plugins.protocol import End, Exited, Invoke, SessionError, Stream
from loopwright.tools.dify_plugins.storage import PluginStorage
from loopwright.tools.dify_plugins.uploads import UploadReceiver

log = logging.getLogger(__name__)

DEFAULT_CALL_TIMEOUT = 120.0
DEFAULT_IDLE_TIMEOUT = 600.0
DEFAULT_HEARTBEAT_TIMEOUT = 60.0  # the SDK beats every 10 s
DEFAULT_WATCH_INTERVAL = 5.0
_NO_CONTEXT = ToolContext()


class PluginCallError(ToolInvokeError):
    """A plugin call that failed: the plugin's own error, a timeout, or the plugin stopping."""


class PluginHost:
    """Runs the plugins of ``store`` (see the module's docstring). ``clock`` measures idleness and
    heartbeats (``time.monotonic``; tests pass their own and call :meth:`check`); ``model_for`` finds
    the model a plugin's ``llm`` calls use; ``uploads`` takes the files plugins upload; ``env`` is
    added to the plugins' environment."""

    def __init__(
        self,
        store: PluginStore,
        *,
        model_for: backwards.ModelFor | None = None,
        uploads: UploadReceiver | None = None,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT,
        watch_interval: float = DEFAULT_WATCH_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.store = store
        self.model_for = model_for
        self.uploads = uploads
        self.call_timeout = call_timeout
        self.idle_timeout = idle_timeout
        self.heartbeat_timeout = heartbeat_timeout
        self.watch_interval = watch_interval
        self.clock = clock
        self.env = dict(env or {})
        self.processes: dict[str, PluginProcess] = {}
        self._starting: dict[str, asyncio.Lock] = {}
        self._hung: set[int] = set()  # pids killed for missing heartbeats
        self._watch: asyncio.Task[None] | None = None
        self._closed = False

    # --- calls ------------------------------------------------------------------------------------

    async def call(
        self,
        plugin: InstalledPlugin,
        request: Mapping[str, Any],
        ctx: ToolContext | None = None,
        timeout: float | None = None,  # noqa: ASYNC109  # the session's deadline, kept by the host
    ) -> AsyncIterator[Mapping[str, Any]]:
        """The ``stream`` messages of one request to ``plugin``, in order, until the plugin ends the
        session; backwards calls it makes meanwhile are answered. Raises :class:`PluginCallError`."""
        ctx = ctx or _NO_CONTEXT
        limit = self.call_timeout if timeout is None else timeout
        proc = await self.process(plugin)
        session_id, queue = proc.open_session()
        storage = PluginStorage(plugin.folder / "storage")
        try:
            async with asyncio.timeout(limit):
                # A plugin that died has its Exited event in the queue (or soon): read on.
                with contextlib.suppress(ConnectionError):
                    await proc.send(protocol.request_line(session_id, request))
                while True:
                    event = await queue.get()
                    if isinstance(event, Stream):
                        yield event.message
                    elif isinstance(event, End):
                        return
                    elif isinstance(event, Invoke):
                        await self._answer(proc, event, storage, ctx)
                    else:
                        raise PluginCallError(self._failure(plugin, event, proc))
        except TimeoutError:
            raise PluginCallError(f"plugin {plugin.plugin_id} did not answer within {limit:g} s") from None
        finally:
            proc.close_session(session_id)

    async def _answer(
        self, proc: PluginProcess, event: Invoke, storage: PluginStorage, ctx: ToolContext
    ) -> None:
        sid, rid = event.session_id, event.request_id
        try:
            answers = backwards.answer(event.kind, event.request, storage, ctx, self.model_for, self.uploads)
            async for data in answers:
                await proc.send(protocol.backwards_line(sid, rid, "response", data=data))
            await proc.send(protocol.backwards_line(sid, rid, "end"))
        except backwards.BackwardsError as exc:
            await proc.send(protocol.backwards_line(sid, rid, "error", message=str(exc)))
        except ConnectionError:
            return
        except Exception as exc:  # the model failing must not leave the plugin waiting
            log.warning("answering plugin %s's %s call failed: %s", proc.plugin_id, event.kind, exc)
            with contextlib.suppress(ConnectionError):
                await proc.send(
                    protocol.backwards_line(sid, rid, "error", message=f"{event.kind} failed: {exc}")
                )

    def _failure(self, plugin: InstalledPlugin, event: object, proc: PluginProcess) -> str:
        name = plugin.plugin_id
        if isinstance(event, SessionError):
            return f"{event.error_type}: {event.message}" if event.error_type else event.message
        assert isinstance(event, Exited)
        if proc.pid in self._hung:
            silence = f"{self.heartbeat_timeout:g} s"
            return f"plugin {name} stopped answering (no heartbeat for {silence}) and was stopped"
        tail = "\n".join(event.stderr.splitlines()[-8:])
        detail = f"; its last output:\n{tail}" if tail else ""
        return f"plugin {name} stopped during the call (exit code {event.returncode}){detail}"

    # --- processes --------------------------------------------------------------------------------

    async def process(self, plugin: InstalledPlugin) -> PluginProcess:
        """The plugin's running process, started (or restarted, after a crash) when needed."""
        if self._closed:
            raise PluginCallError("the plugin host is closed")
        key = plugin.plugin_id
        running = self.processes.get(key)
        if running is not None and running.alive:
            return running
        lock = self._starting.setdefault(key, asyncio.Lock())
        async with lock:
            running = self.processes.get(key)
            if running is not None and running.alive:
                return running
            if running is not None:
                log.info(
                    "plugin %s ended (exit code %s); starting it again",
                    key,
                    running.proc and running.proc.returncode,
                )
                await running.stop()
            proc = PluginProcess(
                key,
                [str(plugin.python_executable), "-m", plugin.manifest.entrypoint],
                plugin.code,
                plugin_environment(self.env),
                self.clock,
            )
            try:
                await proc.start()
            except OSError as exc:
                raise PluginCallError(f"plugin {key} could not be started: {exc}") from None
            self.processes[key] = proc
            self._ensure_watch()
            return proc

    async def check(self) -> None:
        """One look at every plugin: kill the hung, stop the idle, forget the dead."""
        now = self.clock()
        for key, proc in list(self.processes.items()):
            if not proc.alive:
                self.processes.pop(key, None)
                await proc.stop()
            elif now - proc.last_seen > self.heartbeat_timeout:
                log.warning("plugin %s sent nothing for %.0f s; killing it", key, now - proc.last_seen)
                if proc.pid is not None:
                    self._hung.add(proc.pid)
                proc.kill()
            elif not proc.sessions and now - proc.last_used > self.idle_timeout:
                log.info("plugin %s idle for %.0f s; stopping it", key, now - proc.last_used)
                self.processes.pop(key, None)
                await proc.stop()

    def _ensure_watch(self) -> None:
        if self._watch is None or self._watch.done():
            self._watch = asyncio.create_task(self._watch_loop(), name="plugin host watch")

    async def _watch_loop(self) -> None:
        while self.processes:
            await asyncio.sleep(self.watch_interval)
            try:
                await self.check()
            except Exception:  # the watch must go on
                log.exception("checking the plugins failed")

    async def stop(self, plugin_id: str) -> bool:
        proc = self.processes.pop(plugin_id, None)
        if proc is None:
            return False
        await proc.stop()
        return True

    async def aclose(self) -> None:
        """Stop every plugin (terminate, then kill after a grace period)."""
        self._closed = True
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        procs = list(self.processes.values())
        self.processes.clear()
        await asyncio.gather(*(p.stop() for p in procs), return_exceptions=True)
        if self.uploads is not None:
            await self.uploads.aclose()
