"""Corrupt artifacts on a node's own disk: moved aside, never served, healed from a real peer over HTTP.

Real files and real HTTP: a peer serves its store with `make_node_app` + `serve_in_thread`; the node under test reads
through `protocol.adapters.runs.get_artifact` (the read path of run artifacts, θ and checkpoints for every role) with a
`PeerSet`, after its cached copy was overwritten on disk.
"""

from __future__ import annotations

import logging

import httpx
import pytest
import torch

from node.logs import get_logger, log_event
from protocol.adapters.artifacts import (
    ArtifactCorruptError,
    ArtifactNotFoundError,
    LocalArtifactStore,
    put_state,
    read_through,
)
from protocol.adapters.http import PeerSet, make_node_app, serve_in_thread
from protocol.adapters.runs import get_artifact, get_global_state
from protocol.hashing import Hash32, hash_to_hex

PEER_ADDRESS = "0x" + "ab" * 20


def _corrupt(store: LocalArtifactStore, digest: bytes, data: bytes = b"bit rot") -> None:
    (store.root / digest.hex()[:2] / digest.hex()).write_bytes(data)


def _logging_store(root, records: list[logging.LogRecord]) -> LocalArtifactStore:
    """A store whose reporter logs like a node's (node/bootstrap.py), into `records`."""
    logger = get_logger("test-healing")

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger.addHandler(Keep())
    logger.setLevel(logging.INFO)
    return LocalArtifactStore(root, reporter=lambda event, level, fields: log_event(logger, event, level, **fields))


@pytest.fixture
def peer(tmp_path):
    """A real artifact server holding good copies."""
    store = LocalArtifactStore(tmp_path / "peer" / "artifacts")
    handle = serve_in_thread(make_node_app("verifier", PEER_ADDRESS, store))
    yield store, handle.url
    handle.stop()


def test_a_corrupt_copy_is_moved_aside_not_deleted_and_reported(tmp_path):
    events: list[tuple[str, int, dict]] = []
    store = LocalArtifactStore(tmp_path / "artifacts", reporter=lambda e, level, f: events.append((e, level, f)))
    digest = store.put(b"checkpoint")
    _corrupt(store, digest)
    with pytest.raises(ArtifactCorruptError, match="moved aside") as caught:
        store.get(digest)
    moved = caught.value.quarantined
    assert moved is not None and moved.parent == tmp_path / "artifacts-quarantine"
    assert moved.read_bytes() == b"bit rot", "the bad bytes are kept for the operator"
    assert not store.has(digest), "the name no longer holds bytes that do not match it"
    with pytest.raises(ArtifactNotFoundError):  # the next read misses (and would fetch): no loop on the same bytes
        store.get(digest)
    [(event, level, fields)] = events
    assert event == "corrupt artifact moved aside" and level == logging.WARNING
    assert fields["artifact"] == hash_to_hex(digest) and fields["moved_to"] == str(moved)


def test_a_read_only_store_reports_but_leaves_the_file(tmp_path):
    store = LocalArtifactStore(tmp_path / "artifacts", quarantine_corrupt=False)
    digest = store.put(b"checkpoint")
    _corrupt(store, digest)
    with pytest.raises(ArtifactCorruptError, match="does not match its hash"):
        store.get(digest)
    assert store.has(digest) and not (tmp_path / "artifacts-quarantine").exists()


def test_a_corrupt_cached_state_is_healed_from_a_peer_and_the_work_goes_on(tmp_path, peer):
    peer_store, url = peer
    theta = {"w": torch.arange(12.0).reshape(3, 4), "b": torch.ones(4)}
    digest = put_state(peer_store, theta)
    records: list[logging.LogRecord] = []
    store = _logging_store(tmp_path / "verifier" / "artifacts", records)
    put_state(store, theta)  # cached earlier ...
    _corrupt(store, digest)  # ... then the disk flipped it
    peers = PeerSet([url])

    healed = get_global_state(store, peers, digest)

    assert all(torch.equal(healed[k], theta[k]) for k in theta)
    assert store.get(digest) == peer_store.get(digest), "the good copy is stored under its name again"
    assert [p.read_bytes() for p in (tmp_path / "verifier" / "artifacts-quarantine").iterdir()] == [b"bit rot"]
    said = [(r.levelno, r.getMessage(), r.fields["artifact"]) for r in records]  # type: ignore[attr-defined]
    assert said == [
        (logging.WARNING, "corrupt artifact moved aside", hash_to_hex(digest)),
        (logging.WARNING, "corrupt artifact healed from a peer", hash_to_hex(digest)),
    ]
    # the work goes on from the local copy, without the peer
    peers.urls.clear()
    assert torch.equal(get_global_state(store, peers, digest)["w"], theta["w"])


def test_no_peer_with_a_good_copy_yet_is_a_clear_error_then_heals_once_one_has_it(tmp_path, peer):
    peer_store, url = peer
    store = LocalArtifactStore(tmp_path / "node" / "artifacts")
    digest = store.put(b"dataset shard")
    _corrupt(store, digest)
    peers = PeerSet([url])
    with pytest.raises(ArtifactCorruptError, match="no peer could provide a good copy yet"):
        get_artifact(store, peers, digest)
    with pytest.raises(ArtifactNotFoundError, match="unavailable from every peer"):
        get_artifact(store, peers, digest)  # moved aside: a miss now, not the same corrupt bytes again
    peer_store.put(b"dataset shard")
    assert get_artifact(store, peers, digest) == b"dataset shard"
    assert store.get(digest) == b"dataset shard"


def test_a_peer_serving_substituted_bytes_does_not_heal(tmp_path, peer):
    peer_store, url = peer
    digest = peer_store.put(b"good")
    _corrupt(peer_store, digest, b"evil")
    store = LocalArtifactStore(tmp_path / "node" / "artifacts")
    with pytest.raises(ArtifactNotFoundError):
        get_artifact(store, PeerSet([url]), digest)
    assert not store.has(digest)


def test_read_through_checks_what_the_fetcher_returns(tmp_path):
    store = LocalArtifactStore(tmp_path / "artifacts")
    name = Hash32(bytes(32))
    with pytest.raises(ArtifactCorruptError, match="do not match the hash"):
        read_through(store, name, lambda _: b"not the bytes of that name")


def test_the_server_answers_503_for_its_corrupt_copy_never_the_bytes(peer):
    peer_store, url = peer
    digest = peer_store.put(b"honest checkpoint")
    _corrupt(peer_store, digest, b"rotten checkpoint")
    response = httpx.get(f"{url}/artifacts/{hash_to_hex(digest)}")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "30"
    assert "is corrupt on this node" in response.json()["detail"]
    assert b"rotten" not in response.content and "Traceback" not in response.text
    assert httpx.get(f"{url}/artifacts/{hash_to_hex(digest)}").status_code == 404  # moved aside meanwhile
    peer_store.put(b"honest checkpoint")  # re-created by its owner
    assert httpx.get(f"{url}/artifacts/{hash_to_hex(digest)}").content == b"honest checkpoint"
