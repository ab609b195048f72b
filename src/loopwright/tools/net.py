"""The SSRF guard shared by every tool that reaches the network (web_fetch, OpenAPI tools, MCP over HTTP).

A URL's host is resolved and the request refused when any address it resolves to is loopback, private,
link-local, multicast, reserved or a cloud metadata endpoint, unless the operator allow-listed the host
name, the address or its network. ``guarded_client`` checks at connect time, inside httpcore's network
backend, and then connects to the very address it checked: every redirect hop is covered and a DNS answer
that changes between check and connect (DNS rebinding) cannot slip through. TLS still verifies the
original host name.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar, cast

import anyio
import httpcore
import httpx

from loopwright.tools.base import ToolInvokeError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
StreamT = TypeVar("StreamT")

DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
ALLOW_LIST_HINT = "LOOPWRIGHT_TOOL_ALLOW_HOSTS or tool_allow_hosts in loopwright.toml"

# Instance-metadata services that hand out cloud credentials: AWS/GCP/Azure/OpenStack/DigitalOcean
# (169.254.169.254), AWS over IPv6, AWS ECS task metadata, Alibaba Cloud, Oracle Cloud's legacy address.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200", "192.0.0.192")
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class BlockedAddressError(ToolInvokeError):
    """A request whose host is, or resolves to, an address the network policy refuses."""

    def __init__(self, host: str, address: str, reason: str) -> None:
        self.host = host
        self.address = address
        self.reason = reason
        where = host if host == address else f"{host} (resolves to {address})"
        allow = address if host == address else f"{host!r} or {address!r}"
        super().__init__(
            f"blocked request to {where}: {reason} address. Tools may only reach public addresses; "
            f"to allow this one, add {allow} to the allow-list ({ALLOW_LIST_HINT})"
        )


@dataclass(frozen=True, slots=True)
class NetworkPolicy:
    """What the guard lets through besides public addresses.

    ``hosts`` are exact names (lower case), ``suffixes`` come from ``*.corp.example`` entries (they match
    sub-domains, not ``corp.example`` itself), ``networks`` from IP addresses and CIDR networks. A host
    allowed by name may resolve to anything.
    """

    hosts: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_strings(cls, items: Iterable[str]) -> NetworkPolicy:
        """Parse ``127.0.0.1``, ``10.0.0.0/8``, ``::1``, ``[::1]``, ``internal.example``, ``*.corp.example``.
        Raises ``ValueError`` naming a malformed entry."""
        hosts: set[str] = set()
        suffixes: list[str] = []
        networks: list[IPNetwork] = []
        for raw in items:
            item = raw.strip()
            if not item:
                continue
            literal = item.removeprefix("[").removesuffix("]")
            try:
                networks.append(ipaddress.ip_network(literal, strict=False))
                continue
            except ValueError:
                if "/" in literal or ":" in literal:
                    raise ValueError(f"not an IP address, network or host name: {item!r}") from None
            name = _normalise_host(item)
            if name.startswith("*."):
                rest = name[2:]
                if not _is_host_name(rest):
                    raise ValueError(f"not a host name pattern: {item!r} (use *.example.com)")
                suffixes.append("." + rest)
            elif _is_host_name(name):
                hosts.add(name)
            else:
                raise ValueError(f"not an IP address, network or host name: {item!r}")
        return cls(frozenset(hosts), tuple(dict.fromkeys(suffixes)), tuple(dict.fromkeys(networks)))

    def union(self, other: NetworkPolicy) -> NetworkPolicy:
        """A policy that allows what either allows."""
        return NetworkPolicy(
            self.hosts | other.hosts,
            tuple(dict.fromkeys((*self.suffixes, *other.suffixes))),
            tuple(dict.fromkeys((*self.networks, *other.networks))),
        )

    def allows_host(self, host: str) -> bool:
        name = _normalise_host(host)
        return name in self.hosts or any(name.endswith(s) for s in self.suffixes)

    def allows_address(self, address: IPAddress) -> bool:
        candidates = [address]
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            candidates.append(address.ipv4_mapped)
        return any(a in net for a in candidates for net in self.networks if a.version == net.version)


DEFAULT_POLICY = NetworkPolicy()


def network_policy(allow_hosts: Iterable[str]) -> NetworkPolicy:
    """The policy configured by ``tool_allow_hosts`` / ``LOOPWRIGHT_TOOL_ALLOW_HOSTS``: the caller
    passes ``settings.tool_allow_hosts`` (this module knows nothing of the configuration)."""
    return NetworkPolicy.from_strings(allow_hosts)


def blocked_reason(address: IPAddress) -> str | None:
    """Why ``address`` is refused by default, or ``None`` for a public address. An IPv6 address that
    embeds an IPv4 one (mapped, NAT64, 6to4, Teredo) is judged by the embedded address too."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return _reason(address.ipv4_mapped)  # ::ffff:0:0/96 itself counts as private in ipaddress
    for candidate in (*_embedded_ipv4(address), address):
        reason = _reason(candidate)
        if reason is not None:
            return reason
    return None


def _reason(ip: IPAddress) -> str | None:
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata"
    if ip.is_unspecified:
        return "an unspecified (0.0.0.0 / ::)"
    if ip.is_loopback:
        return "a loopback"
    if ip.is_link_local:
        return "a link-local"
    if ip.is_multicast:
        return "a multicast"
    if ip.is_reserved:
        return "a reserved"
    if ip.is_private:
        return "a private"
    if not ip.is_global:
        return "a reserved (not publicly routable)"
    return None


def _embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    found: list[ipaddress.IPv4Address] = []
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if ip in _NAT64:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def check_address(host: str, address: str, policy: NetworkPolicy) -> None:
    """Raise :class:`BlockedAddressError` when ``host``'s resolved ``address`` is refused."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone ("fe80::1%eth0")
    if policy.allows_address(ip):
        return
    reason = blocked_reason(ip)
    if reason is not None:
        raise BlockedAddressError(host, str(ip), reason)


async def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, in the resolver's order (no blocking of the event loop).
    Raises ``OSError`` when the name does not resolve."""
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except UnicodeError as exc:
        raise OSError(f"not a valid host name: {exc}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def check_host(host: str, port: int, policy: NetworkPolicy, resolver: Resolver = resolve) -> list[str]:
    """Resolve ``host`` and check every address; returns the addresses to connect to. Raises
    :class:`BlockedAddressError`, or ``OSError`` when the name does not resolve."""
    name = _normalise_host(host)
    literal = _ip_literal(name)
    if literal is not None:
        check_address(name, literal, policy)
        return [literal]
    addresses = list(await resolver(name, port))
    if not addresses:
        raise OSError(f"{name!r} resolved to no address")
    if not policy.allows_host(name):
        for address in addresses:
            check_address(name, address, policy)
    return addresses


async def check_url(url: str, policy: NetworkPolicy) -> None:
    """Refuse ``url`` unless it is http(s) and its host resolves only to addresses the policy allows."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ToolInvokeError(f"invalid URL {url!r}: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise ToolInvokeError(f"only http and https URLs can be fetched, not {parsed.scheme or 'none'!r}")
    if not parsed.host:
        raise ToolInvokeError(f"the URL {url!r} has no host")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        await check_host(parsed.host, port, policy)
    except OSError as exc:
        raise ToolInvokeError(f"cannot resolve host {parsed.host!r}: {exc}") from None


# --- the guarded client ---------------------------------------------------------------------------


async def connect_checked(
    host: str,
    port: int,
    time_limit: float | None,
    policy: NetworkPolicy,
    resolver: Resolver,
    connect: Callable[[str, float | None], Awaitable[StreamT]],
    errors: tuple[type[Exception], type[Exception]],
) -> StreamT:
    """Resolve and check ``host``, then ``connect(address, time_left)`` to each checked address in turn,
    all within ``time_limit`` seconds. ``errors`` are the HTTP library's ``(ConnectError,
    ConnectTimeout)``: a name that does not resolve raises the first (httpx reports it as for an
    unguarded client), a resolution that times out the second, and either one raised by ``connect``
    moves on to the next address."""
    connect_error, connect_timeout = errors
    deadline = None if time_limit is None else time.monotonic() + time_limit
    try:
        with anyio.fail_after(time_limit):
            addresses = await check_host(host, port, policy, resolver)
    except TimeoutError:
        raise connect_timeout(f"resolving {host!r} timed out") from None
    except OSError as exc:
        raise connect_error(f"cannot resolve host {host!r}: {exc}") from None
    error: Exception | None = None
    for address in addresses:
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        try:
            return await connect(address, left)
        except errors as exc:
            error = exc
    assert error is not None
    raise error


class GuardedBackend:
    """An httpcore network backend that checks the addresses of every TCP connection it opens and
    connects to the checked address itself, trying each in turn. ``core`` is the httpcore module the
    client runs on: httpcore itself, or the MCP SDK's fork ``httpcore2`` (``tools.mcp.http``). The
    connection pools take any object with these three methods, so one class serves both."""

    def __init__(
        self, policy: NetworkPolicy, resolver: Resolver = resolve, core: ModuleType = httpcore
    ) -> None:
        self._policy = policy
        self._resolver = resolver
        self._inner: Any = core.AnyIOBackend()
        self._errors: tuple[type[Exception], type[Exception]] = (core.ConnectError, core.ConnectTimeout)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's backend interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> Any:
        async def connect(address: str, left: float | None) -> Any:
            return await self._inner.connect_tcp(
                address, port, timeout=left, local_address=local_address, socket_options=socket_options
            )

        return await connect_checked(host, port, timeout, self._policy, self._resolver, connect, self._errors)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's backend interface)
        socket_options: Iterable[Any] | None = None,
    ) -> Any:
        raise ToolInvokeError("Unix sockets are not reachable through the network guard")

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


def guarded_transport(
    policy: NetworkPolicy, *, resolver: Resolver = resolve, **kwargs: Any
) -> httpx.AsyncHTTPTransport:
    """An ``AsyncHTTPTransport`` (same keyword arguments, no proxy or uds) whose connections go
    through :class:`GuardedBackend`."""
    for banned in ("proxy", "uds"):
        if kwargs.get(banned) is not None:
            raise TypeError(f"a guarded transport cannot use {banned}=")
    transport = httpx.AsyncHTTPTransport(**kwargs)
    pool = transport._pool
    assert isinstance(pool, httpcore.AsyncConnectionPool)
    # httpx has no public hook for the network backend; the pool reads this attribute per connection.
    pool._network_backend = cast(httpcore.AsyncNetworkBackend, GuardedBackend(policy, resolver))
    return transport


def guarded_client(
    policy: NetworkPolicy, *, timeout: httpx.Timeout | None = None, **kwargs: Any
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose every connection, redirects included, passes the guard.

    Redirects are followed by default. Proxies from the environment and ``.netrc`` are ignored (a proxy
    would hide the real destination from the guard); ``transport=``/``mounts=`` are refused.
    """
    for banned in ("transport", "mounts", "proxy"):
        if kwargs.get(banned) is not None:
            raise TypeError(f"guarded_client builds its own transport; {banned}= is not accepted")
    transport_kwargs = {
        k: kwargs.pop(k) for k in ("verify", "cert", "http1", "http2", "limits") if k in kwargs
    }
    kwargs.setdefault("follow_redirects", True)
    return httpx.AsyncClient(
        transport=guarded_transport(policy, **transport_kwargs),
        timeout=timeout or DEFAULT_TIMEOUT,
        trust_env=False,
        **kwargs,
    )


async def read_limited(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of a streamed response's body, and whether there was more (the rest is
    not read)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False


# --- host names -----------------------------------------------------------------------------------


def _normalise_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def _ip_literal(host: str) -> str | None:
    text = host.removeprefix("[").removesuffix("]").split("%", 1)[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def _is_host_name(name: str) -> bool:
    labels = name.split(".")
    return bool(name) and len(name) <= 253 and all(_is_label(label) for label in labels)


def _is_label(label: str) -> bool:
    if not label or len(label) > 63 or label.startswith("-") or label.endswith("-"):
        return False
    return all(c.isalnum() or c in "-_" for c in label)
