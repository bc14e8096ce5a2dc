"""Which announced peer URLs a node refuses to fetch from (issue 36, finding 10).

A node fetches artifacts, documents and jury votes from the URLs its run's participants announced in PeerDirectory.
Any account can announce (a juror's 1 ETH is enough to be a participant), so an announced
`http://127.0.0.1:8601` or `http://169.254.169.254/` would make every node of the run send requests into its own
machine (its API, a local RPC, an admin port), its cloud's metadata service or its private network. A node therefore
refuses an URL another account announced when its host is, or resolves to, an address no public peer serves at:

- loopback, unspecified, link-local, multicast, private (10/8, 172.16/12, 192.168/16, fc00::/7), shared (100.64/10,
  carrier-grade NAT), site-local, and every other range `ipaddress` does not call global (reserved, documentation,
  benchmarking, "this network", broadcast, ...);
- IPv6 addresses that carry such an IPv4 address: IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96), NAT64
  (64:ff9b::/96) and 6to4 (2002::/16); NAT64 addresses of public IPv4 addresses are public (a DNS64 network's peers);
- "localhost" and "*.localhost" names.

This module is the pure part: an URL's form and the class of a host or an address. Resolving names and checking
every connection is protocol/adapters/peer_guard.py. A public PeerDirectory refuses the literal forms as well
(contracts/src/libraries/PeerHosts.sol); the node's check is stricter (every non-global range) and also covers what
the contract cannot see: names that resolve to such addresses, and directories deployed for devnets.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from protocol.errors import GradledgerError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

PEER_URL_SCHEMES = ("http", "https")
"""The schemes a peer serves at."""

_PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)
_SHARED_NETWORK = ipaddress.ip_network("100.64.0.0/10")
_NAT64_NETWORK = ipaddress.ip_network("64:ff9b::/96")
_COMPATIBLE_NETWORK = ipaddress.ip_network("::/96")


class RefusedPeerUrlError(GradledgerError):
    """An URL another account announced that this node does not fetch from."""

    def __init__(self, url: str, why: str) -> None:
        super().__init__(f"peer URL {url!r} refused: {why}")
        self.url = url
        self.why = why


class PrivatePeerError(RefusedPeerUrlError):
    """An announced URL whose host is, or resolves to, an address inside this node's own networks."""

    def __init__(self, url: str, host: str, address: str, reason: str) -> None:
        resolved = "" if address == host else f" resolves to {address},"
        super().__init__(
            url,
            f"{host}{resolved} a {reason} address; nodes fetch only from public addresses of other accounts "
            "(start the node with --allow-private-peers on a devnet or a private network whose peers you trust)",
        )
        self.host = host
        self.address = address
        self.reason = reason


@dataclass(frozen=True)
class PeerOrigin:
    """Where an URL connects: its scheme, host (no brackets) and port (the scheme's default when it names none)."""

    scheme: str
    host: str
    port: int

    @property
    def key(self) -> tuple[str, int]:
        """The host (lower case, no trailing dot) and port, as a connection sees them."""
        return normalize_host(self.host), self.port


def normalize_host(host: str) -> str:
    """A host as it is compared: lower case, without brackets or trailing dots."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.rstrip(".")


def parse_peer_url(url: str) -> PeerOrigin:
    """The origin of a peer URL; RefusedPeerUrlError for what no peer serves at: another scheme, no host, credentials
    (`user@host`: parsers disagree on which part is the host) or a port that is not a number."""
    parsed = urlsplit(url)
    scheme = parsed.scheme.lower()
    if scheme not in PEER_URL_SCHEMES:
        raise RefusedPeerUrlError(url, "not an http:// or https:// URL")
    if "@" in parsed.netloc:
        raise RefusedPeerUrlError(url, "it carries credentials (user@host)")
    if not parsed.hostname:
        raise RefusedPeerUrlError(url, "it names no host")
    try:
        port = parsed.port
    except ValueError:
        raise RefusedPeerUrlError(url, "its port is not a number from 0 to 65535") from None
    return PeerOrigin(scheme, parsed.hostname, port or (443 if scheme == "https" else 80))


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries and is routed to, if any (mapped, NAT64, 6to4, compatible)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64_NETWORK or address in _COMPATIBLE_NETWORK:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def classify_address(address: IPAddress) -> str | None:
    """Why no public peer serves at `address` ("loopback", "private", ...), or None for a public address."""
    if address.is_loopback:
        return "loopback"
    if address.is_unspecified:
        return "unspecified"
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            reason = classify_address(embedded)
            return None if reason is None else f"{reason} (IPv4 {embedded} inside IPv6)"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if any(address in network for network in _PRIVATE_NETWORKS):
        return "private"
    if address in _SHARED_NETWORK:
        return "shared (carrier-grade NAT)"
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return "site-local"
    if address.is_reserved or not address.is_global:
        return "non-public (reserved or special-purpose)"
    return None


def parse_address(text: str) -> IPAddress | None:
    """`text` as an IP address (an IPv6 zone such as %eth0 allowed), or None when it is not one."""
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def classify_host(host: str) -> str | None:
    """Why no public peer serves at `host` when that shows without resolving it: an IP literal of a refused class,
    or a "localhost" name. None for public literals and for every other name (protocol/adapters/peer_guard.py
    resolves those)."""
    name = normalize_host(host)
    if name == "localhost" or name.endswith(".localhost"):
        return "loopback (a localhost name)"
    address = parse_address(name)
    return None if address is None else classify_address(address)
