"""The SSRF guard: address classification, allow-lists, and a guarded client against real loopback servers."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from loopwright.config import ConfigError, Settings, load_settings
from loopwright.tools.base import ToolInvokeError
from loopwright.tools.net import (
    DEFAULT_POLICY,
    BlockedAddressError,
    NetworkPolicy,
    blocked_reason,
    check_host,
    check_url,
    guarded_client,
    guarded_transport,
    network_policy,
)
from tests.live_server import serving

# --- a server on any loopback address -------------------------------------------------------------


class Hits:
    def __init__(self) -> None:
        self.hosts: list[str] = []


def make_app(hits: Hits) -> Starlette:
    async def hello(request: Request) -> Response:
        hits.hosts.append(request.headers.get("host", ""))
        return PlainTextResponse("hello")

    async def redirect(request: Request) -> Response:
        hits.hosts.append(request.headers.get("host", ""))
        return RedirectResponse(request.query_params["to"], status_code=302)

    return Starlette(routes=[Route("/", hello), Route("/redirect", redirect)])


@pytest.fixture
async def one() -> AsyncIterator[tuple[str, Hits]]:
    hits = Hits()
    async with serving(make_app(hits)) as url:
        yield url, hits


@pytest.fixture
async def two() -> AsyncIterator[tuple[str, Hits]]:
    hits = Hits()
    async with serving(make_app(hits), host="127.0.0.2") as url:
        yield url, hits


LOCAL = NetworkPolicy.from_strings(["127.0.0.1"])


def fixed_resolver(table: dict[str, Sequence[str]]) -> Any:
    async def resolve(host: str, port: int) -> Sequence[str]:
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    return resolve


# --- classification -------------------------------------------------------------------------------

BLOCKED = [
    ("127.0.0.1", "loopback"),
    ("127.8.9.10", "loopback"),
    ("::1", "loopback"),
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.254", "private"),
    ("192.168.1.1", "private"),
    ("fc00::1", "private"),
    ("fd12:3456::1", "private"),
    ("169.254.1.1", "link-local"),
    ("fe80::1", "link-local"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("169.254.169.254", "metadata"),
    ("fd00:ec2::254", "metadata"),
    ("100.100.100.200", "metadata"),
    ("169.254.170.2", "metadata"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:10.0.0.1", "private"),
    ("::ffff:169.254.169.254", "metadata"),
    ("64:ff9b::7f00:1", "loopback"),  # NAT64 of 127.0.0.1
    ("2002:a00:1::", "private"),  # 6to4 of 10.0.0.1
    ("100.64.0.1", "reserved"),  # carrier-grade NAT
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
]


@pytest.mark.parametrize(("address", "kind"), BLOCKED)
def test_blocked_addresses(address: str, kind: str) -> None:
    reason = blocked_reason(ipaddress.ip_address(address))
    assert reason is not None and kind in reason


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(("address", "kind"), BLOCKED)
async def test_check_url_refuses_literals(address: str, kind: str) -> None:
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(BlockedAddressError) as info:
        await check_url(f"http://{host}:8080/x", DEFAULT_POLICY)
    assert kind in str(info.value)
    assert info.value.address == str(ipaddress.ip_address(address))
    assert "LOOPWRIGHT_TOOL_ALLOW_HOSTS" in str(info.value)


@pytest.mark.parametrize("url", ["http://0x7f000001/", "http://2130706433/", "http://127.1/"])
async def test_odd_spellings_of_loopback_are_resolved_and_refused(url: str) -> None:
    with pytest.raises(BlockedAddressError, match="loopback"):
        await check_url(url, DEFAULT_POLICY)


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST", "localhost."])
async def test_names_resolving_to_loopback_are_refused(host: str) -> None:
    with pytest.raises(BlockedAddressError) as info:
        await check_url(f"https://{host}/", DEFAULT_POLICY)
    message = str(info.value)
    assert "localhost" in message and "127.0.0.1" in message and "loopback" in message


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://127.0.0.1/"])
async def test_only_http_and_https(url: str) -> None:
    with pytest.raises(ToolInvokeError, match="only http and https") as info:
        await check_url(url, NetworkPolicy.from_strings(["127.0.0.1"]))
    assert not isinstance(info.value, BlockedAddressError)


async def test_unresolvable_name_is_a_tool_error() -> None:
    with pytest.raises(ToolInvokeError, match="cannot resolve"):
        await check_url("http://no-such-host.invalid/", DEFAULT_POLICY)


async def test_any_blocked_address_among_several_refuses() -> None:
    resolver = fixed_resolver({"mixed.example": ["8.8.8.8", "10.0.0.7"]})
    with pytest.raises(BlockedAddressError, match=r"mixed\.example \(resolves to 10\.0\.0\.7\): a private"):
        await check_host("mixed.example", 80, DEFAULT_POLICY, resolver)
    assert await check_host("mixed.example", 80, NetworkPolicy.from_strings(["10.0.0.0/8"]), resolver) == [
        "8.8.8.8",
        "10.0.0.7",
    ]


# --- the policy -----------------------------------------------------------------------------------


def test_from_strings_parses_every_form() -> None:
    policy = NetworkPolicy.from_strings(
        ["127.0.0.1", " 10.0.0.0/8 ", "::1", "[fd00::1]", "Internal.Example", "*.corp.example", ""]
    )
    assert policy.hosts == frozenset({"internal.example"})
    assert policy.suffixes == (".corp.example",)
    assert {str(n) for n in policy.networks} == {"127.0.0.1/32", "10.0.0.0/8", "::1/128", "fd00::1/128"}


@pytest.mark.parametrize("bad", ["10.0.0.0/33", "not a host", "*.", "-bad.example", "1.2.3.4/x", "a..b"])
def test_from_strings_rejects_garbage(bad: str) -> None:
    with pytest.raises(ValueError, match="not"):
        NetworkPolicy.from_strings([bad])


def test_default_policy_allows_nothing_extra() -> None:
    assert NetworkPolicy.from_strings([]) == DEFAULT_POLICY
    assert not DEFAULT_POLICY.allows_host("localhost")
    assert not DEFAULT_POLICY.allows_address(ipaddress.ip_address("127.0.0.1"))


def test_host_patterns() -> None:
    policy = NetworkPolicy.from_strings(["internal.example", "*.corp.example"])
    assert policy.allows_host("INTERNAL.example.")
    assert policy.allows_host("api.corp.example") and policy.allows_host("a.b.corp.example")
    assert not policy.allows_host("corp.example")  # *.x matches sub-domains only
    assert not policy.allows_host("evilcorp.example")
    assert not policy.allows_host("internal.example.evil")


def test_union() -> None:
    merged = LOCAL.union(NetworkPolicy.from_strings(["*.corp.example", "127.0.0.1"]))
    assert merged.suffixes == (".corp.example",) and len(merged.networks) == 1


async def test_allow_list_by_ip_cidr_and_mapped() -> None:
    await check_url("http://127.0.0.1:9/", LOCAL)
    await check_url("http://[::ffff:127.0.0.1]:9/", LOCAL)
    with pytest.raises(BlockedAddressError):
        await check_url("http://127.0.0.2:9/", LOCAL)
    await check_url("http://127.0.0.2:9/", NetworkPolicy.from_strings(["127.0.0.0/8"]))
    await check_url("http://[::1]:9/", NetworkPolicy.from_strings(["::1"]))


async def test_allow_list_by_name_and_suffix() -> None:
    await check_url("http://localhost:9/", NetworkPolicy.from_strings(["localhost"]))
    resolver = fixed_resolver({"db.corp.example": ["10.1.1.1"]})
    policy = NetworkPolicy.from_strings(["*.corp.example"])
    assert await check_host("db.corp.example", 80, policy, resolver) == ["10.1.1.1"]
    with pytest.raises(BlockedAddressError):
        await check_host("db.corp.example", 80, DEFAULT_POLICY, resolver)


# --- settings -------------------------------------------------------------------------------------


def test_settings_from_environment() -> None:
    settings = load_settings({"LOOPWRIGHT_TOOL_ALLOW_HOSTS": "127.0.0.1, *.corp.example,,10.0.0.0/8"})
    assert settings.tool_allow_hosts == ("127.0.0.1", "*.corp.example", "10.0.0.0/8")
    policy = network_policy(settings.tool_allow_hosts)
    assert policy.allows_host("x.corp.example")
    assert policy.allows_address(ipaddress.ip_address("10.2.3.4"))
    assert network_policy(Settings().tool_allow_hosts) == DEFAULT_POLICY


def test_settings_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "loopwright.toml"
    path.write_text('tool_allow_hosts = ["127.0.0.1", "internal.example"]\n')
    assert load_settings({}, path).tool_allow_hosts == ("127.0.0.1", "internal.example")
    path.write_text('tool_allow_hosts = "::1,localhost"\n')
    assert load_settings({}, path).tool_allow_hosts == ("::1", "localhost")


def test_settings_reject_a_bad_entry(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="LOOPWRIGHT_TOOL_ALLOW_HOSTS.*not a host"):
        load_settings({"LOOPWRIGHT_TOOL_ALLOW_HOSTS": "127.0.0.1, not a host"})
    path = tmp_path / "loopwright.toml"
    path.write_text("tool_allow_hosts = [1]\n")
    with pytest.raises(ConfigError, match="list of strings"):
        load_settings({}, path)


# --- the guarded client against real servers ------------------------------------------------------


async def test_default_refuses_127_0_0_1(one: tuple[str, Hits]) -> None:
    url, hits = one
    async with guarded_client(DEFAULT_POLICY) as client:
        with pytest.raises(BlockedAddressError, match="127.0.0.1: a loopback"):
            await client.get(url)
    assert hits.hosts == []


async def test_allow_listed_server_is_reached(one: tuple[str, Hits]) -> None:
    url, hits = one
    async with guarded_client(LOCAL) as client:
        response = await client.get(url)
    assert response.text == "hello" and len(hits.hosts) == 1


async def test_redirect_to_a_blocked_server_is_refused(one: tuple[str, Hits], two: tuple[str, Hits]) -> None:
    (url1, hits1), (url2, hits2) = one, two
    async with guarded_client(LOCAL) as client:
        with pytest.raises(BlockedAddressError, match="127.0.0.2: a loopback"):
            await client.get(f"{url1}/redirect", params={"to": url2 + "/"})
    assert len(hits1.hosts) == 1 and hits2.hosts == []
    async with guarded_client(NetworkPolicy.from_strings(["127.0.0.0/8"])) as client:
        response = await client.get(f"{url1}/redirect", params={"to": url2 + "/"})
    assert response.text == "hello" and len(hits2.hosts) == 1


@pytest.mark.parametrize(
    ("target", "kind"),
    [
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://[fd00:ec2::254]/latest/meta-data/", "metadata"),
        ("http://10.0.0.1/", "private"),
        ("http://[::ffff:192.168.0.1]/", "private"),
        ("https://0.0.0.0/", "unspecified"),
    ],
)
async def test_redirect_to_a_blocked_literal_never_connects(
    one: tuple[str, Hits], target: str, kind: str, no_network: Any
) -> None:
    url, _ = one
    async with guarded_client(LOCAL) as client:
        with pytest.raises(BlockedAddressError, match=kind):
            await client.get(f"{url}/redirect", params={"to": target})
    assert no_network.blocked == []  # the guard refused before any socket was opened


async def test_localhost_by_name(one: tuple[str, Hits]) -> None:
    url, hits = one
    port = httpx.URL(url).port
    async with guarded_client(DEFAULT_POLICY) as client:
        with pytest.raises(BlockedAddressError, match="localhost"):
            await client.get(f"http://localhost:{port}/")
    async with guarded_client(NetworkPolicy.from_strings(["localhost"])) as client:
        assert (await client.get(f"http://localhost:{port}/")).text == "hello"
    assert hits.hosts == [f"localhost:{port}"]


async def test_connects_to_the_checked_address(one: tuple[str, Hits]) -> None:
    """The name is resolved once, by the guard; the connection goes to that address, and the Host header
    keeps the name (no second lookup for a rebinding DNS server to answer differently)."""
    url, hits = one
    port = httpx.URL(url).port
    resolver = fixed_resolver({"service.test": ["127.0.0.1"], "mixed.test": ["127.0.0.1", "10.0.0.9"]})
    transport = guarded_transport(LOCAL, resolver=resolver)
    async with httpx.AsyncClient(transport=transport) as client:
        assert (await client.get(f"http://service.test:{port}/")).text == "hello"
        with pytest.raises(BlockedAddressError, match=r"resolves to 10\.0\.0\.9"):
            await client.get(f"http://mixed.test:{port}/")
    assert hits.hosts == [f"service.test:{port}"]


async def test_tries_each_checked_address(one: tuple[str, Hits]) -> None:
    url, hits = one
    port = httpx.URL(url).port
    resolver = fixed_resolver({"multi.test": ["127.0.0.3", "127.0.0.1"]})  # nothing listens on .3
    transport = guarded_transport(NetworkPolicy.from_strings(["127.0.0.0/8"]), resolver=resolver)
    async with httpx.AsyncClient(transport=transport) as client:
        assert (await client.get(f"http://multi.test:{port}/")).text == "hello"
    assert len(hits.hosts) == 1


async def test_unresolvable_name_is_a_connect_error() -> None:
    async with guarded_client(DEFAULT_POLICY) as client:
        with pytest.raises(httpx.ConnectError, match="cannot resolve"):
            await client.get("http://no-such-host.invalid/")


async def test_client_defaults_and_refusals() -> None:
    client = guarded_client(DEFAULT_POLICY)
    assert client.timeout.connect == 10 and client.timeout.read == 60
    assert client.follow_redirects and not client.trust_env
    await client.aclose()
    custom = guarded_client(DEFAULT_POLICY, timeout=httpx.Timeout(5.0), follow_redirects=False)
    assert custom.timeout.read == 5 and not custom.follow_redirects
    await custom.aclose()
    with pytest.raises(TypeError, match="transport"):
        guarded_client(DEFAULT_POLICY, transport=httpx.AsyncHTTPTransport())
    with pytest.raises(TypeError, match="proxy"):
        guarded_client(DEFAULT_POLICY, proxy="http://127.0.0.1:3128")
