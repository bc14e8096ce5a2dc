"""Where a node's peer client may connect when another account chose the URL (issue 36, finding 10).

protocol/peer_hosts.py says which hosts and addresses are refused; this module does the I/O around it:

- `PeerHostGuard.check_announced`: an URL another account announced is checked when the node learns it: its form,
  its host, and every address its name resolves to (`socket.getaddrinfo`). A refused URL never becomes a peer.
- `PeerHostGuard` is also the network backend of the peer client (`make_peer_client`): every new connection to a
  host the operator did not name (`--peer`, peers.txt) resolves the host again, refuses it when any answer is
  refused, and connects to an address it just checked. There is no second lookup between the check and the
  connection, so DNS rebinding (a name that answers a public address when checked and 127.0.0.1 a moment later)
  cannot get past it; a kept-alive connection stays on the address it was checked at.

The peer client ignores proxy variables of the environment (HTTP_PROXY, ...): through a proxy the proxy would resolve
and connect, out of this check's sight.
"""

from __future__ import annotations

import contextlib
import socket
import typing
from collections.abc import Callable, Iterable

import httpcore
import httpx

from protocol.peer_hosts import (
    PrivatePeerError,
    RefusedPeerUrlError,
    classify_address,
    classify_host,
    normalize_host,
    parse_address,
    parse_peer_url,
)

Resolver = Callable[[str, int], list[str]]
"""host, port -> the addresses a connection to them would try, in order (OSError when the name does not resolve)."""

MAX_REMEMBERED_URLS = 4096
"""How many announced URLs' verdicts are kept (each announcement costs its account a transaction)."""


def resolve_host(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to (the system resolver, as a connection would use it), without duplicates."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check_host(where: str, host: str, port: int, resolve: Resolver) -> list[str]:
    """The addresses to connect to for `host`; PrivatePeerError when the host, or any address it resolves to, is one
    no public peer serves at (one private answer among public ones is enough: the connection might pick it).
    OSError when the name does not resolve."""
    reason = classify_host(host)
    if reason is not None:
        raise PrivatePeerError(where, host, host, reason)
    addresses = resolve(host, port)
    for text in addresses:
        address = parse_address(text)
        reason = "not an IP address" if address is None else classify_address(address)
        if reason is not None:
            raise PrivatePeerError(where, host, text, reason)
    return addresses


class PeerHostGuard(httpcore.SyncBackend):
    """The peer client's network backend: connections to hosts the operator did not name go only to public addresses.

    `trust(url)`: an URL the operator gave (`--peer`, peers.txt) is the operator's choice and never refused.
    `report(error)` hears of each refused (host, address) once (the node logs it).
    """

    def __init__(
        self, resolve: Resolver = resolve_host, report: Callable[[PrivatePeerError], None] | None = None
    ) -> None:
        super().__init__()
        self.resolve = resolve
        self.report = report
        self.trusted: set[tuple[str, int]] = set()
        self.verdicts: dict[str, RefusedPeerUrlError | None] = {}
        self.reported: set[tuple[str, str]] = set()

    def trust(self, url: str) -> None:
        """Never refuse the origin of `url` (one the operator named); an URL without a usable origin is ignored."""
        with contextlib.suppress(RefusedPeerUrlError):  # not a URL anything connects to: requests to it fail anyway
            self.trusted.add(parse_peer_url(url).key)

    def check_announced(self, url: str) -> None:
        """RefusedPeerUrlError when `url`, announced by another account, must not be fetched from.

        The verdict is remembered per URL. A name that does not resolve now is not refused: every connection to it is
        checked again (`connect_tcp`)."""
        if url not in self.verdicts:
            if len(self.verdicts) >= MAX_REMEMBERED_URLS:
                self.verdicts.clear()
            self.verdicts[url] = self._check(url)
        error = self.verdicts[url]
        if error is not None:
            raise error

    def _check(self, url: str) -> RefusedPeerUrlError | None:
        try:
            origin = parse_peer_url(url)
            if origin.key not in self.trusted:
                check_host(url, origin.host, origin.port, self.resolve)
        except RefusedPeerUrlError as exc:
            return exc
        except OSError:
            return None  # unresolvable for now; connections are checked when they are made
        return None

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        """Connect to `host` at an address checked just now (any address for an origin the operator named)."""
        if (normalize_host(host), port) in self.trusted:
            return super().connect_tcp(host, port, timeout, local_address, socket_options)
        try:
            addresses = check_host(f"{host}:{port}", host, port, self.resolve)
        except PrivatePeerError as exc:
            self._report(exc)
            raise httpcore.ConnectError(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        return self._connect_first(addresses, port, timeout, local_address, socket_options)

    def _connect_first(
        self,
        addresses: list[str],
        port: int,
        timeout: float | None,
        local_address: str | None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None,
    ) -> httpcore.NetworkStream:
        """The first of `addresses` that accepts (as socket.create_connection tries a name's addresses in order)."""
        failure: Exception = httpcore.ConnectError("the host resolved to no address")
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure

    def _report(self, error: PrivatePeerError) -> None:
        key = (normalize_host(error.host), error.address)
        if key not in self.reported and self.report is not None:
            self.reported.add(key)
            self.report(error)


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport with httpx's default pool, on a PeerHostGuard instead of the plain socket backend."""

    def __init__(self, guard: PeerHostGuard, limits: httpx.Limits | None = None) -> None:
        super().__init__()
        limits = limits or httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=guard,
        )


def make_peer_client(timeout_s: float, guard: PeerHostGuard) -> httpx.Client:
    """An httpx client whose every connection goes through `guard` (no proxy from the environment)."""
    return httpx.Client(timeout=timeout_s, transport=GuardedTransport(guard), trust_env=False)
