"""Malformed input becomes a verdict, never an exception: documents, artifacts and checkpoints a solver serves.

The checker of a verifier, whistleblower and juror (node/checker.py + protocol/verdict.py) is fed what a
dishonest or broken solver can serve: a document with fewer leaves than segments (whose root it
committed), a document of another run, bytes that are no document, checkpoints whose bytes do not hash
to their names (served over real HTTP), and bytes that hash right but are no canonical state. Each ends
in pass or fail. That the node processes survive such input on a real chain is
tests/disputes/test_malformed_input.py.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from node.checker import CommitmentChecker
from protocol.adapters.artifacts import LocalArtifactStore, put_state
from protocol.adapters.http import PeerSet, make_node_app, serve_in_thread
from protocol.adapters.runs import RunContext
from protocol.commitment import CommitmentDoc, encode_commitment_doc
from protocol.outer import get_initial_global_state
from protocol.training import compute_pseudo_gradient, get_params, train_round
from protocol.types import AttestationRef, Commitment
from tests.conftest import SOLVER_A

RUN_ID, ROUND = 5, 0
SEAT = AttestationRef(RUN_ID, ROUND, SOLVER_A, 0)


class ChainStandIn:
    """The checker's chain read here: θ_0 is the round's θ (the seat's draws are given to the checker directly)."""

    def __init__(self, theta_hash: bytes) -> None:
        self.theta_hash = theta_hash

    def theta_of(self, run_id: int, round_index: int) -> bytes:
        return self.theta_hash


class CorruptStore:
    """A solver's store served with the last byte of every checkpoint flipped."""

    def __init__(self, inner: LocalArtifactStore) -> None:
        self.inner = inner

    def has(self, digest: bytes) -> bool:
        return self.inner.has(digest)

    def get(self, digest: bytes) -> bytes:
        data = self.inner.get(digest)
        return data[:-1] + bytes([data[-1] ^ 0xFF])


@pytest.fixture(scope="module")
def honest(tmp_path_factory, tiny_config, dataset):
    """An honestly trained round: the solver's store, θ's hash and its document."""
    store = LocalArtifactStore(tmp_path_factory.mktemp("solver"))
    global_state = get_initial_global_state(tiny_config)
    theta_hash = put_state(store, global_state)
    theta = get_params(global_state)
    records, end = train_round(
        tiny_config, dataset, theta, ROUND, SOLVER_A, save_checkpoint=lambda _i, s: put_state(store, s)
    )
    delta_hash = put_state(store, compute_pseudo_gradient(theta, end))
    leaves = tuple(r.to_leaf(RUN_ID, ROUND, SOLVER_A) for r in records)
    return store, theta_hash, CommitmentDoc(RUN_ID, ROUND, SOLVER_A, theta_hash, delta_hash, leaves)


def _checker(tmp_path, tiny_config, dataset, honest, document: bytes, draws: list[int], peers=()):
    """A checker whose solver serves `document`; artifacts from the solver's store, or from `peers` only."""
    store, theta_hash, _ = honest
    local = store if not peers else LocalArtifactStore(tmp_path / "verifier")
    if peers:
        local.put(store.get(theta_hash))
    terms = SimpleNamespace(samples_per_commitment=len(draws))
    ctx = RunContext(RUN_ID, terms, tiny_config, dataset, "", 0)
    return CommitmentChecker(
        ctx, local, PeerSet(list(peers)), ChainStandIn(theta_hash), fetch_document=lambda *_: document,
        draw_seat=lambda _ref: draws,
    )  # fmt: skip


def _commitment(doc: CommitmentDoc) -> Commitment:
    return Commitment(doc.root, doc.delta_hash, doc.tokens)


# Only opened commitments are checked, so every draw's leaf and proof are on-chain: a malformed document is a
# fail named at the first draw (provable whether or not the document holds that leaf), never an abstention.


@pytest.mark.parametrize("draws", [[2, 0], [2, 1]])
def test_short_document_fails_on_the_first_draw(tmp_path, tiny_config, dataset, honest, draws):
    _, _, doc = honest
    short = replace(doc, leaves=doc.leaves[:1])
    checker = _checker(tmp_path, tiny_config, dataset, honest, encode_commitment_doc(short), draws=draws)
    decision, checked = checker.check_commitment(SEAT, _commitment(short))
    assert (decision.kind, decision.sample_index, decision.segment) == ("fail", 0, 2), decision
    assert "1 leaves published" in decision.reason and checked is not None


def test_document_of_another_run_fails(tmp_path, tiny_config, dataset, honest):
    _, _, doc = honest
    other = replace(doc, run_id=RUN_ID + 1, leaves=tuple(replace(leaf, run_id=RUN_ID + 1) for leaf in doc.leaves))
    checker = _checker(tmp_path, tiny_config, dataset, honest, encode_commitment_doc(other), draws=[0, 1])
    decision, _ = checker.check_commitment(SEAT, _commitment(doc))
    assert (decision.kind, decision.sample_index) == ("fail", 0) and "another run" in decision.reason


@pytest.mark.parametrize("garbage", [b"", b"\x00\xff\xfe", b"[1, 2]", b'{"run_id": "x"}', b'{"leaves": null}'])
def test_garbage_bytes_fail(tmp_path, tiny_config, dataset, honest, garbage):
    _, _, doc = honest
    checker = _checker(tmp_path, tiny_config, dataset, honest, garbage, draws=[0, 1])
    decision, checked = checker.check_commitment(SEAT, _commitment(doc))
    assert decision.kind == "fail" and "unavailable" in decision.reason and checked is None


def test_checkpoints_that_do_not_hash_to_their_names_fail(tmp_path, tiny_config, dataset, honest):
    store, _, doc = honest
    server = serve_in_thread(make_node_app("solver", SOLVER_A, CorruptStore(store)))
    try:
        checker = _checker(
            tmp_path, tiny_config, dataset, honest, encode_commitment_doc(doc), draws=[0, 1], peers=[server.url]
        )
        decision, checked = checker.check_commitment(SEAT, _commitment(doc))
    finally:
        server.stop()
    assert decision.kind == "fail" and "not served" in decision.reason and checked is not None, decision
    assert "do not match the hash" in decision.reason


def test_checkpoint_bytes_that_are_no_state_fail(tmp_path, tiny_config, dataset, honest):
    store, _, doc = honest
    junk = store.put(b"these bytes hash fine but are no canonical state")
    leaves = list(doc.leaves)
    leaves[1] = replace(leaves[1], start_hash=junk)
    leaves[0] = replace(leaves[0], end_hash=junk)
    forged = replace(doc, leaves=tuple(leaves))
    checker = _checker(tmp_path, tiny_config, dataset, honest, encode_commitment_doc(forged), draws=[1, 0])
    decision, _ = checker.check_commitment(SEAT, _commitment(forged))
    assert (decision.kind, decision.segment) == ("fail", 1) and "not a canonical state" in decision.reason, decision
