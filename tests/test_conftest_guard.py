"""The network guard in conftest.py: remote connections fail, loopback and Unix sockets work."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import NetworkGuard, is_loopback_host

REMOTE = ("10.1.2.3", 80)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A listening TCP socket on 127.0.0.1 (an ephemeral port)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        yield srv


def test_connect_to_a_private_address_is_refused(no_network: NetworkGuard) -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s,
        pytest.raises(RuntimeError, match=r"^network access in tests: .*10\.1\.2\.3"),
    ):
        s.connect(REMOTE)
    assert no_network.blocked == ["('10.1.2.3', 80)"]
    no_network.blocked.clear()  # provoked on purpose: do not fail at teardown


def test_connect_ex_to_a_remote_address_is_refused(no_network: NetworkGuard) -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s,
        pytest.raises(RuntimeError, match="^network access in tests: "),
    ):
        s.connect_ex(("93.184.216.34", 443))
    assert len(no_network.blocked) == 1
    no_network.blocked.clear()


def test_create_connection_to_a_host_name_is_refused_before_resolving(no_network: NetworkGuard) -> None:
    with pytest.raises(RuntimeError, match="^network access in tests: .*example.com"):
        socket.create_connection(("example.com", 80), timeout=0.1)
    no_network.blocked.clear()


def test_ipv6_remote_address_is_refused(no_network: NetworkGuard) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 support")
    with (
        socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s,
        pytest.raises(RuntimeError, match="^network access in tests: "),
    ):
        s.connect(("2001:db8::1", 80, 0, 0))
    no_network.blocked.clear()


def test_a_swallowed_attempt_is_still_recorded(no_network: NetworkGuard) -> None:
    """Code under test may catch the RuntimeError; the guard still knows and fails the test at teardown."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s, contextlib.suppress(Exception):
        s.connect(REMOTE)
    assert no_network.blocked, "the refused connection was not recorded"
    no_network.blocked.clear()


async def test_asyncio_open_connection_to_remote_is_refused(no_network: NetworkGuard) -> None:
    with pytest.raises(RuntimeError, match="^network access in tests: "):
        await asyncio.open_connection(*REMOTE)
    no_network.blocked.clear()


def test_loopback_connection_works(listener: socket.socket, no_network: NetworkGuard) -> None:
    port = listener.getsockname()[1]
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
        client.settimeout(2)
        client.connect(("127.0.0.1", port))
        conn, _ = listener.accept()
        with conn:
            client.sendall(b"ping")
            assert conn.recv(4) == b"ping"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
        assert client.connect_ex(("127.0.0.1", port)) == 0
        listener.accept()[0].close()
    with socket.create_connection(("localhost", port), timeout=2):
        listener.accept()[0].close()
    assert no_network.blocked == []


async def test_asyncio_loopback_server_works(no_network: NetworkGuard) -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readline())
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"hello\n")
        await writer.drain()
        assert await reader.readline() == b"hello\n"
        writer.close()
        await writer.wait_closed()
    assert no_network.blocked == []


def test_loopback_from_a_worker_thread_works(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                pass
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join(5)
    listener.accept()[0].close()
    assert errors == []


def test_unix_socket_works() -> None:
    if not hasattr(socket, "AF_UNIX"):
        pytest.skip("no Unix sockets")
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "s.sock")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
            srv.bind(path)
            srv.listen(1)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.connect(path)
                srv.accept()[0].close()


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("10.1.2.3", False),
        ("0.0.0.0", False),
        ("192.168.1.1", False),
        ("2001:db8::1", False),
        ("example.com", False),
        ("localhost.evil.com", False),
        ("", False),
    ],
)
def test_is_loopback_host(host: str, expected: bool) -> None:
    assert is_loopback_host(host) is expected
