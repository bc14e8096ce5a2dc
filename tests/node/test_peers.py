"""Finding peers from the chain (node/peers.py, PeerDirectory): announced URLs, lookups of unknown accounts, and
announced loopback URLs refused unless the node allows private peers (issue 36, finding 10)."""

from __future__ import annotations

import logging
from contextlib import contextmanager

import pytest
from fastapi import Request

from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from node.bootstrap import RunNode
from node.peers import MAX_URL_BYTES, announce_url, verify_public_url
from protocol.adapters.artifacts import ArtifactNotFoundError, LocalArtifactStore
from protocol.adapters.chain import ChainClient, ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.http import PeerSet, make_node_app, serve_in_thread
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import load_manifest
from protocol.errors import ConfigError
from tests.log_capture import LogRecords

LOG = logging.getLogger("test")


@pytest.mark.parametrize("url", ["http://10.0.0.5:8601", "https://node.example/", "http://127.0.0.1:1"])
def test_verify_public_url_accepts_reachable_urls(url):
    assert verify_public_url(url) == url.rstrip("/")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://node.example", "http"),
        ("node.example:8601", "http"),
        ("http://", "host"),
        ("http://0.0.0.0:8601", "every interface"),
        ("http://node.example/" + "a" * MAX_URL_BYTES, "at most"),
    ],
)
def test_verify_public_url_refuses_what_peers_cannot_use(url, why):
    with pytest.raises(ConfigError, match=why):
        verify_public_url(url)


@pytest.mark.e2e
def test_directory_bound_matches_the_contract(deployment):
    assert deployment.protocol.chain.call("PeerDirectory", "MAX_URL_BYTES") == MAX_URL_BYTES


@pytest.mark.e2e
def test_announce_sends_a_transaction_only_when_the_url_changes(deployment):
    protocol, account = deployment.protocol, get_devnet_account(17)
    assert announce_url(protocol, account, "http://10.9.8.7:1111", LOG)
    assert not announce_url(protocol, account, "http://10.9.8.7:1111", LOG), "a restart must not re-announce"
    assert protocol.peer_url_of(account.address) == "http://10.9.8.7:1111"
    assert announce_url(protocol, account, "http://10.9.8.7:2222", LOG)
    assert protocol.peer_url_of(account.address) == "http://10.9.8.7:2222"


@pytest.mark.e2e
def test_unknown_account_is_found_through_its_announcement(deployment, tmp_path):
    """A node that has never heard of an account reaches it as soon as the account announced its URL: the lookup
    that used to end in "no known peer serves solver X" (and a fail attestation) now asks the directory."""
    protocol, owner = deployment.protocol, get_devnet_account(18)
    if protocol.peer_url_of(owner.address):  # the session's chain: another test's node may have announced
        protocol.withdraw_peer(owner)
    server = serve_in_thread(make_node_app("solver", owner.address, LocalArtifactStore(tmp_path / "store")))
    try:
        peers = PeerSet([], allow_private_peers=True)  # the owner announces 127.0.0.1: a devnet node's flag
        assert peers.url_of(owner.address) is None
        peers.resolve = protocol.peer_url_of
        assert peers.url_of(owner.address) is None, "nothing announced yet"
        announce_url(protocol, owner, server.url, LOG)
        assert peers.url_of(owner.address) == server.url
    finally:
        server.stop()


@pytest.mark.e2e
def test_a_peer_claiming_another_accounts_identity_does_not_replace_its_announcement(deployment, tmp_path):
    """The attack: a staked participant serves a `/identity` naming an honest solver's address. If a verifier
    believed it, it would ask the impostor for the honest solver's commitment document, get none, and fail the
    honest work. The honest account's on-chain announcement must win."""
    protocol, honest = deployment.protocol, get_devnet_account(15)
    real = serve_in_thread(make_node_app("solver", honest.address, LocalArtifactStore(tmp_path / "real")))
    impostor = serve_in_thread(make_node_app("solver", honest.address, LocalArtifactStore(tmp_path / "fake")))
    try:
        announce_url(protocol, honest, real.url, LOG)
        # the impostor listed, and asked, first; both URLs are the operator's, so 127.0.0.1 is not refused
        peers = PeerSet([impostor.url, real.url])
        peers.resolve = protocol.peer_url_of
        assert peers.url_of(honest.address) == real.url
        without_directory = PeerSet([real.url, impostor.url])
        assert without_directory.url_of(honest.address) == impostor.url, "the attack works without announcements"
    finally:
        real.stop()
        impostor.stop()


@contextmanager
def _target(tmp_path):
    """What the attack points nodes at: an HTTP service on this machine's loopback that counts the requests it gets
    (it holds one artifact, so a node that does fetch from it gets something)."""
    store = LocalArtifactStore(tmp_path / "target")
    digest = store.put(b"reachable only from inside this machine")
    app = make_node_app("solver", get_devnet_account(19).address, store)
    requests: list[str] = []

    @app.middleware("http")
    async def count(request: Request, call_next):
        requests.append(request.url.path)
        return await call_next(request)

    server = serve_in_thread(app)
    try:
        yield server, digest, requests
    finally:
        server.stop()


def _node(deployment, tmp_path, allow_private_peers: bool) -> RunNode:
    """A node as every role builds it (adapters, the directory lookup, its log), without starting its loop; its run
    does not exist, so it has no participants but the ones a test adds."""
    return RunNode(
        10**6, tmp_path / ("allowing" if allow_private_peers else "public"), get_devnet_account(16),
        deployment.protocol.chain.rpc_url, load_manifest(deployment.manifest_path),
        allow_private_peers=allow_private_peers,
    )  # fmt: skip


@pytest.mark.e2e
def test_a_node_refuses_a_loopback_url_another_account_announced(deployment, tmp_path):
    """Issue 36, finding 10: an account (a 1 ETH juror is enough) announces a 127.0.0.1 URL; the devnet's directory
    takes it, as every directory did. A node without --allow-private-peers refuses it: nothing is fetched from it,
    the account has no URL, and the node logs why once. With the flag (devnets), the node uses it."""
    protocol, attacker = deployment.protocol, get_devnet_account(19)
    with _target(tmp_path) as (server, digest, requests):
        announce_url(protocol, attacker, server.url, LOG)
        assert protocol.peer_url_of(attacker.address) == server.url, "the devnet's directory takes any URL"

        node = _node(deployment, tmp_path, allow_private_peers=False)
        records = LogRecords()
        node.log.addHandler(records)
        try:
            node.discovery.accounts[attacker.address] = None  # the attacker is a participant of the node's run
            node.discovery.refresh(from_block=None, force=True)
            node.discovery.refresh(from_block=None, force=True)
            assert node.peers.url_of(attacker.address) is None
            assert node.peers.url_of(attacker.address) is None
            with pytest.raises(ArtifactNotFoundError):
                node.peers.fetch(digest)
        finally:
            node.log.removeHandler(records)
        assert requests == [], "nothing may be fetched from a refused URL"
        assert server.url not in node.peers.urls
        refused = [r for r in records.records if r.getMessage() == "peer refused"]
        assert len(refused) == 1, "refused, and said so once"
        assert refused[0].levelno == logging.WARNING
        assert refused[0].fields["url"] == server.url  # type: ignore[attr-defined]
        assert "loopback" in refused[0].fields["why"]  # type: ignore[attr-defined]
        assert "--allow-private-peers" in refused[0].fields["why"]  # type: ignore[attr-defined]

        devnet_node = _node(deployment, tmp_path, allow_private_peers=True)
        assert devnet_node.peers.url_of(attacker.address) == server.url
        assert devnet_node.peers.fetch(digest) == b"reachable only from inside this machine"
        assert requests == [f"/artifacts/0x{digest.hex()}"], "the old outcome: the node fetches from the loopback"


@pytest.mark.e2e
def test_a_peer_the_operator_named_is_never_refused(deployment, tmp_path):
    """`--peer` and peers.txt are the operator's choice: a loopback URL given there is used without the flag, and so
    is another account's announcement of that same origin."""
    protocol, owner = deployment.protocol, get_devnet_account(19)
    with _target(tmp_path) as (server, digest, requests):
        announce_url(protocol, owner, server.url, LOG)
        peers = PeerSet([server.url])
        peers.resolve = protocol.peer_url_of
        assert peers.url_of(owner.address) == server.url
        assert peers.fetch(digest) == b"reachable only from inside this machine"
        assert requests


@pytest.mark.e2e
def test_a_public_directory_refuses_what_the_node_refuses():
    """The contract's half of finding 10 on a real chain: a directory deployed for a public chain reverts
    PrivateHost, `announce_url` turns that into what to pass (--public-url), and a public URL is taken."""
    with AnvilProcess() as anvil:
        manifest = deploy_protocol(
            ChainClient(anvil.rpc_url), get_devnet_account(0), build_contracts(), allow_private_peers=False
        )
        protocol, account = ProtocolClient(ChainClient(anvil.rpc_url, manifest)), get_devnet_account(1)
        assert protocol.chain.call("PeerDirectory", "allowPrivateHosts") is False
        with pytest.raises(ContractRevertError) as refused:
            protocol.announce_peer(account, "http://127.0.0.1:8601")
        assert refused.value.error == "PrivateHost"
        with pytest.raises(ConfigError, match="--public-url"):
            announce_url(protocol, account, "http://169.254.169.254", LOG)
        assert announce_url(protocol, account, "https://node.example.org:8601", LOG)
        assert protocol.peer_url_of(account.address) == "https://node.example.org:8601"
