"""protocol/opening.py: which draws a commitment opens, their leaves and proofs, and decoding them back."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.commitment import CommitmentDoc
from protocol.hashing import Hash32, keccak256
from protocol.merkle import SegmentLeaf, compute_leaf_hash, verify_merkle_proof
from protocol.opening import (
    CommitmentOpening,
    OpeningError,
    build_opening,
    compute_opened_segments,
    decode_opening,
    get_opened_seat_count,
)
from protocol.sampling import compute_sample, compute_sampling_seed, compute_seat_seed

RUN, ROUND = 3, 1
SOLVER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
BASE = keccak256(b"seed block hash")


def _doc(num_leaves: int) -> CommitmentDoc:
    leaves = tuple(
        SegmentLeaf(
            RUN, ROUND, SOLVER, i, keccak256(b"start%d" % i), keccak256(b"end%d" % i), keccak256(b"sk%d" % i), 10 + i
        )
        for i in range(num_leaves)
    )
    return CommitmentDoc(RUN, ROUND, SOLVER, Hash32(b"\x01" * 32), Hash32(b"\x02" * 32), leaves)


def test_segments_are_seat_major_draws_of_each_seat_sub_seed():
    seed = compute_sampling_seed(BASE, RUN, ROUND, SOLVER)
    segments = compute_opened_segments(BASE, RUN, ROUND, SOLVER, seats=3, samples=2, num_segments=5)
    expected = [compute_sample(compute_seat_seed(seed, q), j, 5) for q in range(3) for j in range(2)]
    assert segments == tuple(expected)


@pytest.mark.parametrize(("verifiers", "count", "seats"), [(3, 5, 3), (3, 2, 2), (1, 0, 0), (8, 8, 8)])
def test_opened_seats_are_the_non_void_ones(verifiers, count, seats):
    assert get_opened_seat_count(verifiers, count) == seats


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 16), st.integers(1, 3), st.integers(1, 4), st.binary(min_size=32, max_size=32))
def test_every_opened_leaf_proves_its_segment_under_the_root(num_segments, seats, samples, base):
    doc = _doc(num_segments)
    segments = compute_opened_segments(base, RUN, ROUND, SOLVER, seats, samples, num_segments)
    opening = build_opening(doc, segments, samples)
    assert len(opening.entries) == seats * samples
    for q in range(seats):
        for j in range(samples):
            entry = opening.leaf_of(q, j)
            assert entry.segment == segments[q * samples + j]
            leaf = SegmentLeaf(RUN, ROUND, SOLVER, entry.segment, *entry.leaf.to_abi())
            assert verify_merkle_proof(entry.proof, doc.root, compute_leaf_hash(leaf))


def test_a_document_without_a_sampled_leaf_cannot_be_opened():
    with pytest.raises(OpeningError, match="no leaf for sampled segment 3"):
        build_opening(_doc(2), (0, 3), samples=2)


def test_an_opening_decodes_back_from_its_call_arguments():
    doc = _doc(5)
    segments = compute_opened_segments(BASE, RUN, ROUND, SOLVER, 2, 2, 5)
    opening = build_opening(doc, segments, 2)
    leaves, proofs = opening.to_abi()
    assert decode_opening(leaves, proofs, segments, 2) == opening
    # web3 decodes the struct array of call data as mappings by field name
    named = [dict(zip(("startHash", "endHash", "sketchHash", "tokens"), leaf, strict=True)) for leaf in leaves]
    assert decode_opening(named, proofs, segments, 2) == opening


def test_missing_entries_are_errors_not_index_errors():
    opening = CommitmentOpening(2, ())
    with pytest.raises(OpeningError, match="no draw 0 of seat 1"):
        opening.leaf_of(1, 0)
    with pytest.raises(OpeningError, match="no draw 2 of seat 0"):
        build_opening(_doc(3), (0, 1), 2).leaf_of(0, 2)
    with pytest.raises(OpeningError, match="2 leaves, 1 proofs and 2 draws"):
        decode_opening([(b"", b"", b"", 0)] * 2, [[]], (0, 1), 1)
