"""The pure parts of solver/own_artifacts.py: what an artifact of a round is, and what verifiers fetch from a solver."""

from __future__ import annotations

from protocol.commitment import CommitmentDoc
from protocol.hashing import Hash32
from protocol.merkle import SegmentLeaf
from solver.own_artifacts import describe_in_document, get_served_hashes

SOLVER = "0x" + "11" * 20


def _h(n: int) -> Hash32:
    return Hash32(n.to_bytes(32, "big"))


def _doc(segments: int = 3) -> CommitmentDoc:
    """Checkpoints c_i = _h(i) (segment i runs c_i -> c_(i+1)), sketches _h(100 + i), θ _h(0) = c_0, Δ _h(999)."""
    leaves = tuple(SegmentLeaf(1, 2, SOLVER, i, _h(i), _h(i + 1), _h(100 + i), 64) for i in range(segments))
    return CommitmentDoc(1, 2, SOLVER, _h(0), _h(999), leaves)


def test_every_artifact_of_a_document_is_named():
    doc = _doc()
    assert describe_in_document(doc, _h(999)) == "the pseudo-gradient Δ of round 2"
    assert describe_in_document(doc, _h(3)) == "the end checkpoint of segment 2 of round 2"
    assert describe_in_document(doc, _h(2)) == "the end checkpoint of segment 1 of round 2"  # also segment 2's start
    assert describe_in_document(doc, _h(0)) == "the start checkpoint of segment 0 of round 2"
    assert describe_in_document(doc, _h(101)) == "the update sketch of segment 1 of round 2"
    assert describe_in_document(doc, _h(12345)) is None


def test_served_hashes_are_delta_end_and_each_sampled_start_once():
    doc = _doc()
    assert get_served_hashes(doc, [2, 0, 2]) == [_h(999), _h(3), _h(0), _h(2)]
    assert get_served_hashes(doc, []) == [_h(999), _h(3)]
    assert get_served_hashes(doc, [7, -1]) == [_h(999), _h(3)], "segments the document lacks are not asked for"


def test_a_document_without_leaves_still_serves_its_delta():
    assert get_served_hashes(_doc(0), [0]) == [_h(999)]
