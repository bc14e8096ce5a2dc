"""Segment leaves and the sorted-pair Merkle tree."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import LeafNotFoundError, MerkleError, SeedError
from protocol.hashing import keccak256
from protocol.merkle import (
    SegmentLeaf,
    build_merkle_tree,
    compute_leaf_hash,
    compute_root_from_proof,
    get_merkle_proof,
    get_merkle_proof_at,
    hash_pair,
    verify_merkle_proof,
)

SOLVER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
leaf_hashes = st.lists(st.binary(min_size=32, max_size=32), min_size=1, max_size=40, unique=True)


def _leaf(**overrides) -> SegmentLeaf:
    fields = dict(
        run_id=1,
        round=2,
        solver=SOLVER,
        index=3,
        start_hash=keccak256(b"a"),
        end_hash=keccak256(b"b"),
        sketch_hash=keccak256(b"c"),
        tokens=4096,
    )
    fields.update(overrides)
    return SegmentLeaf(**fields)


@settings(max_examples=100, deadline=None)
@given(leaf_hashes)
def test_every_leaf_proves_under_the_root(leaves):
    tree = build_merkle_tree(leaves)
    for i, leaf in enumerate(leaves):
        proof = get_merkle_proof_at(tree, i)
        assert verify_merkle_proof(proof, tree.root, leaf)
        assert get_merkle_proof(tree, leaf) == proof
        assert len(proof) <= max(1, len(leaves) - 1).bit_length()


@settings(max_examples=60, deadline=None)
@given(leaf_hashes, st.binary(min_size=32, max_size=32))
def test_a_foreign_leaf_does_not_prove(leaves, foreign):
    tree = build_merkle_tree(leaves)
    if foreign in leaves:
        return
    assert not verify_merkle_proof(get_merkle_proof_at(tree, 0), tree.root, foreign)
    with pytest.raises(LeafNotFoundError, match="is not in this tree"):
        get_merkle_proof(tree, foreign)


def test_single_leaf_root_is_the_leaf_and_pairs_are_sorted():
    a, b = keccak256(b"x"), keccak256(b"y")
    assert build_merkle_tree([a]).root == a
    assert hash_pair(a, b) == hash_pair(b, a) == keccak256(min(a, b) + max(a, b))
    three = build_merkle_tree([a, b, a[::-1]])
    assert three.root == hash_pair(hash_pair(a, b), a[::-1])


def test_leaf_binds_every_field():
    base = compute_leaf_hash(_leaf())
    changed = [
        _leaf(run_id=2),
        _leaf(round=3),
        _leaf(solver="0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"),
        _leaf(index=4),
        _leaf(start_hash=keccak256(b"z")),
        _leaf(end_hash=keccak256(b"z")),
        _leaf(sketch_hash=keccak256(b"z")),
        _leaf(tokens=4097),
    ]
    hashes = {compute_leaf_hash(leaf) for leaf in changed}
    assert base not in hashes and len(hashes) == len(changed)


def test_proof_for_a_missing_index_is_a_clear_error():
    tree = build_merkle_tree([keccak256(b"a"), keccak256(b"b")])
    with pytest.raises(LeafNotFoundError, match="tree has 2 leaves"):
        get_merkle_proof_at(tree, 2)


@pytest.mark.parametrize(
    ("overrides", "error", "message"),
    [
        ({"round": -1}, MerkleError, "round must be an integer"),
        ({"tokens": 2**64}, MerkleError, "tokens must be an integer"),
        ({"index": True}, MerkleError, "index must be an integer"),
        ({"solver": "0x1234"}, MerkleError, "20-byte hex address"),
        ({"start_hash": b"\x00" * 31}, SeedError, "start_hash must be exactly 32 bytes"),
        ({"end_hash": "0xzz" + "0" * 62}, SeedError, "end_hash is not valid hex"),
    ],
)
def test_bad_leaf_fields_raise_clear_errors(overrides, error, message):
    with pytest.raises(error, match=message):
        _leaf(**overrides)


def test_empty_tree_and_malformed_proof_are_errors():
    with pytest.raises(MerkleError, match="no leaves"):
        build_merkle_tree([])
    with pytest.raises(SeedError, match="proof element 0"):
        compute_root_from_proof([b"short"], keccak256(b"a"))
