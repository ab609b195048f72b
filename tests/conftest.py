"""Shared test configuration.

Every test runs behind a network guard: a connection to anything but the loopback interface (or a Unix
socket) raises ``RuntimeError("network access in tests: …")``. Code under test may swallow that error (the
tool engine turns every exception into an observation), so each blocked attempt is also recorded and the
test errors at teardown if there was any. A test that provokes an attempt on purpose requests the
``no_network`` fixture and clears ``no_network.blocked``.
"""

from __future__ import annotations

import atexit
import ipaddress
import os
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from loopwright.store.db import Database

# The skipped tests, grouped by reason, at the end of every run.
pytest_plugins = ["tests.skip_summary"]

# Every test, and every server or command a test starts, keeps its data in a directory of its own,
# never in the user's data directory (a test that needs another one sets LOOPWRIGHT_DATA_DIR itself).
_DATA_DIR = tempfile.mkdtemp(prefix="loopwright-tests-")
os.environ["LOOPWRIGHT_DATA_DIR"] = _DATA_DIR
atexit.register(shutil.rmtree, _DATA_DIR, ignore_errors=True)

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def is_loopback_host(host: object) -> bool:
    """Whether ``host`` (a name or an IP literal) is on the loopback interface. Names are never resolved."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    name = host.strip().lower().rstrip(".")
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    name = name.removeprefix("[").removesuffix("]").split("%", 1)[0]  # "[::1]", "fe80::1%eth0"
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


class NetworkGuard:
    """Records the connections the guard refused during one test."""

    def __init__(self) -> None:
        self.blocked: list[str] = []

    def check(self, family: int | None, address: Any) -> None:
        if family is not None and family not in (socket.AF_INET, socket.AF_INET6):
            return  # AF_UNIX, AF_NETLINK, …: not the network
        if isinstance(address, str | bytes):
            return  # a Unix socket path
        host = address[0] if isinstance(address, tuple) and address else address
        if is_loopback_host(host):
            return
        where = f"{address!r}"
        self.blocked.append(where)
        raise RuntimeError(
            f"network access in tests: connection to {where} refused (only loopback is allowed)"
        )


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[NetworkGuard]:
    guard = NetworkGuard()
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_create_connection = socket.create_connection

    def connect(self: socket.socket, address: Any) -> None:
        guard.check(self.family, address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        guard.check(self.family, address)
        return real_connect_ex(self, address)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        guard.check(None, address)  # before any name resolution
        return real_create_connection(address, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    yield guard
    if guard.blocked:
        pytest.fail(f"the test tried to reach the network: {', '.join(guard.blocked)}", pytrace=False)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    """A new SQLite database file with every table, closed after the test."""
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'test.db'}")
    await database.create_all()
    yield database
    await database.close()
