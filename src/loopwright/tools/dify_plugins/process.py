"""One running plugin: its subprocess, the reader that routes its lines to sessions, and stopping it.

Several sessions share one process (the SDK serves them concurrently); each has its own queue of
events. When the process ends, every open session gets an :class:`~protocol.Exited` event with the
last lines of its stderr, so a caller waiting on it learns at once why. Closing stdin does not stop a
plugin (the SDK's reader spins on end-of-file), so :meth:`PluginProcess.stop` terminates it, then
kills it after a grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path

from loopwright.tools.dify_plugins import protocol
from loopwright.tools.dify_plugins.protocol import Declaration, Exited, Heartbeat, Log, PluginFailure

log = logging.getLogger(__name__)

LINE_LIMIT = 64 * 1024 * 1024  # one line may carry a large JSON message
STDERR_LINES = 40
STOP_GRACE = 3.0


class PluginProcess:
    """A started plugin (see the module's docstring). ``clock`` stamps ``last_seen`` (any line, the
    heartbeats included) and ``last_used`` (a session opened or closed)."""

    def __init__(
        self,
        plugin_id: str,
        argv: list[str],
        cwd: Path,
        env: Mapping[str, str],
        clock: Callable[[], float],
    ) -> None:
        self.plugin_id = plugin_id
        self._argv = argv
        self._cwd = cwd
        self._env = dict(env)
        self._clock = clock
        self.proc: asyncio.subprocess.Process | None = None
        self.declaration: list[Mapping[str, object]] = []
        self.sessions: dict[str, asyncio.Queue[protocol.SessionEvent]] = {}
        self.last_seen = clock()
        self.last_used = clock()
        self.exited: Exited | None = None
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._tasks: list[asyncio.Task[None]] = []
        self._write_lock = asyncio.Lock()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.exited is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self._argv,
            cwd=self._cwd,
            env=self._env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT,
            start_new_session=True,  # a terminal's Ctrl-C goes to the host, which stops its plugins
        )
        self.last_seen = self.last_used = self._clock()
        self._tasks = [
            asyncio.create_task(self._read_stdout(), name=f"plugin {self.plugin_id} stdout"),
            asyncio.create_task(self._read_stderr(), name=f"plugin {self.plugin_id} stderr"),
        ]

    def open_session(self) -> tuple[str, asyncio.Queue[protocol.SessionEvent]]:
        session_id = uuid.uuid4().hex
        queue: asyncio.Queue[protocol.SessionEvent] = asyncio.Queue()
        if self.exited is not None:
            queue.put_nowait(self.exited)
        self.sessions[session_id] = queue
        self.last_used = self._clock()
        return session_id, queue

    def close_session(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)
        self.last_used = self._clock()

    async def send(self, line: bytes) -> None:
        """Write one line to the plugin; ``ConnectionError`` when it is gone."""
        if self.proc is None or self.proc.stdin is None or self.exited is not None:
            raise ConnectionResetError("the plugin is not running")
        async with self._write_lock:
            self.proc.stdin.write(line)
            await self.proc.stdin.drain()

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    async def stop(self, grace: float = STOP_GRACE) -> None:
        """Terminate the plugin, kill it when it has not ended after ``grace`` seconds, and wait for
        the readers to finish."""
        proc = self.proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if proc is not None and proc.stdin is not None:
            proc.stdin.close()
        self._finish(proc.returncode if proc is not None else None)

    def kill(self) -> None:
        """Kill at once (a hung plugin); the reader then reports it to the open sessions."""
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()

    async def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        try:
            while True:
                try:
                    line = await stdout.readline()
                except ValueError:  # a line over LINE_LIMIT: the rest of it is dropped
                    log.warning("plugin %s wrote a line over %d bytes; dropped", self.plugin_id, LINE_LIMIT)
                    continue
                if not line:
                    break
                self.last_seen = self._clock()
                self._route(protocol.parse_line(line))
        finally:
            returncode = await self.proc.wait()
            # Let stderr's last lines arrive: they usually say why the plugin ended.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._tasks[1]), 1.0)
            self._finish(returncode)

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        stderr = self.proc.stderr
        while True:
            try:
                line = await stderr.readline()
            except ValueError:  # a line over LINE_LIMIT: keep draining, or the plugin would block
                continue
            if not line:
                return
            self._stderr.append(line.decode("utf-8", "replace").rstrip())

    def _route(self, event: protocol.Event | None) -> None:
        if event is None or isinstance(event, Heartbeat):
            return
        if isinstance(event, Declaration):
            self.declaration.append(event.data)
        elif isinstance(event, Log):
            log.debug("plugin %s: %s %s", self.plugin_id, event.level, event.message)
        elif isinstance(event, PluginFailure):
            log.warning("plugin %s: %s", self.plugin_id, event.message)
        elif not isinstance(event, Exited):
            queue = self.sessions.get(event.session_id)
            if queue is not None:
                queue.put_nowait(event)

    def _finish(self, returncode: int | None) -> None:
        if self.exited is not None:
            return
        self.exited = Exited(returncode, self.stderr_tail())
        for queue in self.sessions.values():
            queue.put_nowait(self.exited)


_PASSED_ON = frozenset(
    {"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "SYSTEMROOT", "SSL_CERT_FILE", "SSL_CERT_DIR"}
    | {"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"}
)


def plugin_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a plugin runs in: the host's minus its secrets' usual names, with the SDK told
    to speak stdio (a ``.env`` could say otherwise) and never to time out on its own."""
    env = {k: v for k, v in os.environ.items() if k.upper() in _PASSED_ON}
    env.update({"INSTALL_METHOD": "local", "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "0"})
    env.update(extra or {})
    return env
