"""How a run's events reach its streaming client: written by the run itself while the connection takes
writes at once, queued (and written by the response) while the client does not read — in order, each
once, and never holding the run up."""

from __future__ import annotations

import asyncio
from typing import Any

from loopwright.app.dify.events import AgentMessage, EventHead
from loopwright.app.run.runs import Run, RunRegistry
from loopwright.server.event_stream import writable_now
from loopwright.server.sse import stream_to
from tests.sse import parse_sse


def new_run(task_id: str) -> Run:
    return Run(EventHead(task_id, "m", "c", 0), app_id="a", user="u")


class Flow:
    """uvicorn's flow control flag; ``paused_reads``: report paused that many more times, as if the
    connection drained in between."""

    def __init__(self) -> None:
        self.paused = False
        self.paused_reads = 0

    @property
    def write_paused(self) -> bool:
        if self.paused_reads:
            self.paused_reads -= 1
            return True
        return self.paused


class Connection:
    """A server connection with uvicorn's shape: ``send`` waits while ``flow.write_paused``."""

    def __init__(self) -> None:
        self.flow = Flow()
        self._resumed = asyncio.Event()
        self.chunks: list[bytes] = []
        self.writers: list[str] = []  # the task that wrote each chunk
        self.fail = False

    async def send(self, message: dict[str, Any]) -> None:
        if self.fail:
            raise ConnectionResetError("gone")
        while self.flow.paused:
            await self._resumed.wait()
        self.chunks.append(message["body"])
        task = asyncio.current_task()
        self.writers.append(task.get_name() if task else "")

    def pause(self) -> None:
        self.flow.paused = True
        self._resumed.clear()

    def resume(self) -> None:
        self.flow.paused = False
        self._resumed.set()

    def events(self) -> list[int]:
        return [int(e["answer"]) for e in parse_sse(b"".join(self.chunks))]


HEAD = EventHead("t", "m", "c", 0)


class Script:
    """Events 0..n-1, each released by the test (``step``) so it can act between them."""

    def __init__(self) -> None:
        self._go: asyncio.Queue[int | None] = asyncio.Queue()
        self.produced = 0

    async def run(self, run: Run) -> None:
        """A run's pipeline: each released event handed to the run."""
        while (n := await self._go.get()) is not None:
            self.produced += 1
            await run.emit(AgentMessage(HEAD, str(n)))

    async def step(self, *numbers: int) -> None:
        for n in numbers:
            self._go.put_nowait(n)
        for _ in range(20):  # let the run (and a woken response) take them
            await asyncio.sleep(0)

    def end(self) -> None:
        self._go.put_nowait(None)


def start(connection: Connection | None = None) -> tuple[Run, Script, asyncio.Task[None] | None]:
    run = new_run("t1")
    script = Script()
    RunRegistry().start(run, script.run(run))
    response = None
    if connection is not None:
        writable = writable_now(connection.send)
        response = asyncio.create_task(stream_to(run, connection.send, writable), name="response")
    return run, script, response


def test_writable_now_reads_the_servers_flow_control() -> None:
    connection = Connection()
    writable = writable_now(connection.send)
    assert writable is not None and writable()
    connection.pause()
    assert not writable()

    async def plain_send(message: dict[str, Any]) -> None: ...

    assert writable_now(plain_send) is None  # another server: events go through the queue


async def test_the_run_writes_to_a_reading_client_itself() -> None:
    connection = Connection()
    run, script, response = start(connection)
    await asyncio.sleep(0)
    await script.step(0, 1, 2)
    assert connection.events() == [0, 1, 2]
    assert set(connection.writers) == {"loopwright-run-t1"}  # no hop through the response's task
    script.end()
    assert response is not None
    await asyncio.wait_for(response, 1)
    assert run.done() and run.sink is None


async def test_a_client_that_stops_reading_does_not_hold_the_run_and_loses_nothing() -> None:
    connection = Connection()
    run, script, response = start(connection)
    await asyncio.sleep(0)
    await script.step(0, 1)
    connection.pause()  # the client stops reading
    await script.step(2, 3, 4)
    script.end()
    assert run.task is not None
    await asyncio.wait_for(run.task, 1)  # the run ended although nothing more could be written
    assert script.produced == 5 and connection.events() == [0, 1]
    connection.resume()
    assert response is not None
    await asyncio.wait_for(response, 1)
    assert connection.events() == [0, 1, 2, 3, 4]


async def test_writes_go_direct_again_after_the_client_catches_up() -> None:
    connection = Connection()
    run, script, response = start(connection)
    await asyncio.sleep(0)
    await script.step(0)
    connection.pause()
    await script.step(1, 2)
    connection.resume()
    await script.step(3)  # queued behind 1 and 2 (or written once they are): never before them
    await script.step(4, 5)
    script.end()
    assert response is not None
    await asyncio.wait_for(response, 1)
    assert connection.events() == [0, 1, 2, 3, 4, 5]
    assert connection.writers[0] == connection.writers[-1] == "loopwright-run-t1"
    assert "response" in connection.writers  # the queued ones went out from the response


async def test_a_queued_event_is_not_overtaken_when_the_connection_drains_meanwhile() -> None:
    connection = Connection()
    run, script, response = start(connection)
    await asyncio.sleep(0)
    await script.step(0)
    connection.flow.paused_reads = 1  # 1 finds the connection full; by 2 it has drained
    await script.step(1, 2)
    script.end()
    assert response is not None
    await asyncio.wait_for(response, 1)
    assert connection.events() == [0, 1, 2]


async def test_a_connection_that_fails_does_not_fail_the_run() -> None:
    connection = Connection()
    run, script, response = start(connection)
    await asyncio.sleep(0)
    await script.step(0)
    connection.fail = True
    await script.step(1, 2)
    script.end()
    assert run.task is not None
    await asyncio.wait_for(run.task, 1)
    assert script.produced == 3 and run.task.exception() is None
    assert response is not None
    response.cancel()


async def test_a_server_that_cannot_say_gets_everything_through_the_queue() -> None:
    chunks: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        chunks.append(message["body"])

    run = new_run("t2")
    script = Script()
    RunRegistry().start(run, script.run(run))
    response = asyncio.create_task(stream_to(run, send, writable_now(send)))
    await script.step(0, 1)
    script.end()
    await asyncio.wait_for(response, 1)
    assert run.sink is None
    assert [int(e["answer"]) for e in parse_sse(b"".join(chunks))] == [0, 1]


async def test_a_response_that_goes_away_detaches() -> None:
    connection = Connection()
    run, script, response = start(connection)
    await asyncio.sleep(0)
    assert run.sink is not None
    assert response is not None
    response.cancel()
    await asyncio.sleep(0)
    assert run.sink is None  # the run writes to nobody and queues instead
    await script.step(0)
    script.end()
    assert run.task is not None
    await asyncio.wait_for(run.task, 1)
    assert connection.events() == []
