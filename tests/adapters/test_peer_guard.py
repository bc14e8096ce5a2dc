"""Announced peer URLs checked where they are learnt and at every connection (protocol/adapters/peer_guard.py,
PeerSet; issue 36, finding 10): real servers on this machine's loopback, the system resolver, and resolvers that
answer what a hostile name server would."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import Request

from protocol.adapters.artifacts import ArtifactNotFoundError, LocalArtifactStore
from protocol.adapters.http import PeerSet, ServerHandle, make_node_app, serve_in_thread
from protocol.adapters.peer_guard import check_host, resolve_host
from protocol.peer_hosts import PrivatePeerError

SECRET = b"only reachable from inside this machine"


@pytest.fixture
def target(tmp_path) -> Iterator[tuple[ServerHandle, bytes, list[str]]]:
    """A service on 127.0.0.1 holding one artifact, and the paths of the requests it got."""
    store = LocalArtifactStore(tmp_path / "store")
    digest = store.put(SECRET)
    app = make_node_app("solver", "0x" + "11" * 20, store)
    requests: list[str] = []

    @app.middleware("http")
    async def count(request: Request, call_next):
        requests.append(request.url.path)
        return await call_next(request)

    server = serve_in_thread(app)
    yield server, digest, requests
    server.stop()


def port_of(server: ServerHandle) -> int:
    return int(server.url.rsplit(":", 1)[1])


def answering(*answers: list[str]):
    """A resolver that gives each answer in turn (the last one from then on), like a name server that changes its
    answer between two lookups (DNS rebinding)."""
    calls: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        return answers[min(len(calls), len(answers)) - 1]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


def test_a_name_is_refused_when_any_of_its_addresses_is_private():
    public = answering(["8.8.8.8", "2606:4700::1111"])
    assert check_host("http://peer.example", "peer.example", 80, public) == ["8.8.8.8", "2606:4700::1111"]
    with pytest.raises(PrivatePeerError, match=r"peer\.example resolves to 10\.0\.0\.5, a private address") as error:
        check_host("http://peer.example", "peer.example", 80, answering(["8.8.8.8", "10.0.0.5"]))
    assert error.value.address == "10.0.0.5"


def test_localhost_names_are_refused_without_a_lookup():
    resolve = answering(["8.8.8.8"])
    with pytest.raises(PrivatePeerError, match="loopback"):
        check_host("http://a.localhost", "a.localhost", 80, resolve)
    assert resolve.calls == []  # type: ignore[attr-defined]


def test_numeric_hosts_the_resolver_reads_as_loopback_are_refused():
    """ "127.1" and "2130706433" are no IP literal to `ipaddress`, but the system resolver (inet_aton) reads them as
    127.0.0.1, and so would a connection."""
    assert resolve_host("127.1", 80) == ["127.0.0.1"]
    for host in ("127.1", "2130706433", "0x7f.1"):
        with pytest.raises(PrivatePeerError, match=r"127\.0\.0\.1, a loopback address"):
            check_host(f"http://{host}", host, 80, resolve_host)


def test_an_unresolvable_name_raises_os_error():
    with pytest.raises(OSError):
        check_host("http://x.invalid", "x.invalid", 80, resolve_host)


@pytest.mark.parametrize(
    "form",
    ["http://127.0.0.1:{port}", "http://localhost:{port}", "http://[::ffff:127.0.0.1]:{port}", "http://127.1:{port}"],
)
def test_an_announced_loopback_url_is_never_fetched_from(target, form):
    server, digest, requests = target
    url = form.format(port=port_of(server))
    peers = PeerSet([])
    reports: list[tuple[str, dict]] = []
    peers.reporter = lambda event, level, fields: reports.append((event, fields))
    assert not peers.set_announced("0x" + "22" * 20, url)
    assert not peers.set_announced("0x" + "22" * 20, url)  # the next discovery pass
    assert peers.url_of("0x" + "22" * 20) is None
    assert url not in peers.urls
    with pytest.raises(ArtifactNotFoundError, match="no peers configured"):
        peers.fetch(digest)
    assert requests == []
    assert [event for event, _ in reports] == ["peer refused"], "reported once"
    assert "--allow-private-peers" in reports[0][1]["why"]


def test_with_allow_private_peers_an_announced_loopback_url_is_used(target):
    server, digest, requests = target
    peers = PeerSet([], allow_private_peers=True)
    assert peers.set_announced("0x" + "22" * 20, server.url)
    assert peers.url_of("0x" + "22" * 20) == server.url
    assert peers.fetch(digest) == SECRET
    assert requests


def test_dns_rebinding_is_refused_at_the_connection(target):
    """The name answers a public address while the node checks the announcement, then 127.0.0.1 when the node
    connects: the connection resolves again, checks that answer, and refuses it (nothing reaches the service)."""
    server, digest, requests = target
    peers = PeerSet([])
    assert peers.guard is not None
    peers.guard.resolve = answering(["8.8.8.8"], ["127.0.0.1"])
    reports: list[tuple[str, dict]] = []
    peers.reporter = lambda event, level, fields: reports.append((event, fields))
    url = f"http://rebind.example:{port_of(server)}"
    assert peers.set_announced("0x" + "33" * 20, url), "a public answer when announced"
    with pytest.raises(ArtifactNotFoundError, match="loopback"):
        peers.fetch(digest)
    with pytest.raises(ArtifactNotFoundError):
        peers.fetch(digest)
    assert requests == []
    assert [event for event, _ in reports] == ["peer connection refused"]
    assert reports[0][1]["address"] == "127.0.0.1"


def test_the_operators_peers_are_never_refused(target):
    """`--peer` and peers.txt: the operator's choice, whatever the address; only that origin is trusted."""
    server, digest, _ = target
    peers = PeerSet([server.url])
    assert peers.fetch(digest) == SECRET
    assert peers.set_announced("0x" + "44" * 20, server.url + "/"), "the operator named this origin"
    other_port = f"http://127.0.0.1:{port_of(server) + 1}"
    assert not peers.set_announced("0x" + "55" * 20, other_port)
