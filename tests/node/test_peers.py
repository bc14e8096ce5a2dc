"""Finding peers from the chain (node/peers.py, PeerDirectory): announced URLs, and lookups of unknown accounts."""

from __future__ import annotations

import logging

import pytest

from node.peers import MAX_URL_BYTES, announce_url, verify_public_url
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.http import PeerSet, make_node_app, serve_in_thread
from protocol.adapters.keys import get_devnet_account
from protocol.errors import ConfigError

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
        peers = PeerSet([])
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
        peers = PeerSet([impostor.url, real.url])  # the impostor listed, and asked, first
        peers.resolve = protocol.peer_url_of
        assert peers.url_of(honest.address) == real.url
        without_directory = PeerSet([real.url, impostor.url])
        assert without_directory.url_of(honest.address) == impostor.url, "the attack works without announcements"
    finally:
        real.stop()
        impostor.stop()
