"""Which announced peer hosts a node refuses (protocol/peer_hosts.py; issue 36, finding 10)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.peer_hosts import (
    PeerOrigin,
    PrivatePeerError,
    RefusedPeerUrlError,
    classify_address,
    classify_host,
    parse_peer_url,
)

ipv4 = st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address)
ipv6 = st.integers(0, 2**128 - 1).map(ipaddress.IPv6Address)


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("[::1]", "loopback"),
        ("localhost", "loopback"),
        ("LocalHost.", "loopback"),
        ("node.localhost", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("10.0.0.5", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("fd12:3456::7", "private"),
        ("100.64.0.1", "shared"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("fec0::1", "site-local"),
        ("0.1.2.3", "non-public"),
        ("240.0.0.1", "non-public"),
        ("255.255.255.255", "non-public"),
        ("198.18.0.1", "non-public"),
        ("2001:db8::1", "non-public"),
        ("::ffff:127.0.0.1", "loopback (IPv4 127.0.0.1 inside IPv6)"),
        ("::ffff:a9fe:a9fe", "link-local (IPv4 169.254.169.254"),
        ("64:ff9b::10.0.0.5", "private (IPv4 10.0.0.5"),
        ("2002:c0a8:101::1", "private (IPv4 192.168.1.1"),
        ("::10.0.0.1", "private (IPv4 10.0.0.1"),
    ],
)
def test_non_public_hosts_are_refused_with_the_reason(host, reason):
    assert reason in (classify_host(host) or "")


@pytest.mark.parametrize(
    "host",
    [
        "8.8.8.8",
        "1.1.1.1",
        "203.0.114.1",
        "172.32.0.1",
        "100.128.0.1",
        "2606:4700::1111",
        "::ffff:8.8.8.8",
        "64:ff9b::8.8.8.8",  # a DNS64 network's view of a public peer
        "2002:808:808::1",
        "node.example.org",
        "localhost.example.org",
        "mylocalhost",
        "127.1",  # not a literal to ipaddress: the resolver reads it (protocol/adapters/peer_guard.py)
    ],
)
def test_public_hosts_and_names_are_not_refused_here(host):
    assert classify_host(host) is None


@given(ipv4)
def test_an_accepted_ipv4_address_is_global(address):
    if classify_address(address) is None:
        assert address.is_global and not address.is_multicast and not address.is_private


# The ranges a public PeerDirectory refuses (contracts/src/libraries/PeerHosts.sol isPrivateIpv4).
CONTRACT_IPV4_RANGES = [
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.168.0.0/16", "224.0.0.0/3",
    )
]  # fmt: skip


@given(ipv4)
def test_the_node_refuses_every_ipv4_address_the_contract_refuses(address):
    """The node is the stricter check: whatever a public directory refuses, a node refuses on a devnet's too."""
    if any(address in network for network in CONTRACT_IPV4_RANGES):
        assert classify_address(address) is not None


@given(ipv4)
def test_ipv6_forms_carrying_an_ipv4_address_classify_as_it(address):
    """::ffff:a.b.c.d, 64:ff9b::a.b.c.d and 2002:a.b.c.d:: reach a.b.c.d: refused exactly when it is."""
    refused = classify_address(address) is not None
    for prefix in (0xFFFF << 32, 0x0064FF9B << 96):
        assert (classify_address(ipaddress.IPv6Address(prefix | int(address))) is not None) == refused
    assert (classify_address(ipaddress.IPv6Address((0x2002 << 112) | (int(address) << 80))) is not None) == refused


@given(st.one_of(ipv4, ipv6))
def test_a_literal_host_classifies_as_its_address(address):
    assert classify_host(str(address)) == classify_address(address)
    if address.version == 6:
        assert classify_host(f"[{address}]") == classify_address(address)


@given(ipv6)
def test_an_accepted_ipv6_address_is_global_or_carries_a_public_ipv4(address):
    if classify_address(address) is None:
        assert address.is_global or address in ipaddress.ip_network("64:ff9b::/96")
        assert not (address.is_loopback or address.is_link_local or address.is_multicast or address.is_site_local)


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://203.0.113.7:8601", PeerOrigin("http", "203.0.113.7", 8601)),
        ("https://Node.Example.org/", PeerOrigin("https", "node.example.org", 443)),
        ("HTTP://[::1]", PeerOrigin("http", "::1", 80)),
    ],
)
def test_parse_peer_url_gives_the_origin_a_connection_uses(url, origin):
    assert parse_peer_url(url) == origin


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://node.example", "http"),
        ("file:///etc/passwd", "http"),
        ("node.example:8601", "http"),
        ("http://", "no host"),
        ("http://node.example@127.0.0.1:8601", "credentials"),
        ("http://node.example:86a1", "port"),
        ("http://node.example:99999", "port"),
    ],
)
def test_parse_peer_url_refuses_what_no_peer_serves_at(url, why):
    with pytest.raises(RefusedPeerUrlError, match=why):
        parse_peer_url(url)


def test_the_error_names_the_url_the_address_and_the_flag():
    error = PrivatePeerError("http://evil.example:8601", "evil.example", "127.0.0.1", "loopback")
    assert isinstance(error, RefusedPeerUrlError)
    message = str(error)
    assert "http://evil.example:8601" in message
    assert "evil.example resolves to 127.0.0.1, a loopback address" in message
    assert "--allow-private-peers" in message
