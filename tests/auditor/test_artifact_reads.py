"""auditor/artifact_reads.py `compute_start_hashes`: the c_0 each commitment must start at, by protocol/moments.py's
rule applied to a folded history and a real local store (no chain)."""

from __future__ import annotations

import torch

from auditor.artifact_reads import compute_start_hashes
from auditor.checks import DocumentFacts
from auditor.sources import ArtifactSources
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.commitment import CommitmentDoc
from protocol.hashing import Hash32, hash_to_hex
from protocol.history.fold import fold_run_history
from protocol.merkle import SegmentLeaf
from protocol.moments import compute_start_checkpoint
from protocol.state import compute_state_hash, encode_state
from protocol.training import get_moments, make_start_checkpoint
from tests.history_builder import SOLVER_A, SOLVER_B, honest_two_rounds

THETA0 = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.ones(3)}
THETA1 = {k: v + 1 for k, v in THETA0.items()}


def _facts(round_index: int, solver: str, end_hash: Hash32) -> DocumentFacts:
    leaf = SegmentLeaf(1, round_index, solver, 0, Hash32(b"\1" * 32), end_hash, Hash32(b"\3" * 32), 64)
    doc = CommitmentDoc(1, round_index, solver, Hash32(b"\4" * 32), Hash32(b"\5" * 32), (leaf,))
    return DocumentFacts(round_index, solver, doc, "test store", "test store")


def test_start_hashes_carry_the_accepted_end_moments_or_start_fresh(tmp_path):
    history = fold_run_history(honest_two_rounds().events, 1)
    assert history.rounds[0].settled and set(history.rounds[0].accepted) == {SOLVER_A, SOLVER_B}
    store = LocalArtifactStore(tmp_path / "store")
    moments = {k: v + 0.25 for k, v in get_moments(make_start_checkpoint(THETA0)).items()}
    end_a = make_start_checkpoint({k: v * 2 for k, v in THETA0.items()}, moments)
    documents = {(0, SOLVER_A): _facts(0, SOLVER_A, store.put(encode_state(end_a)))}  # SOLVER_B's: not found
    sources = ArtifactSources([tmp_path / "store"])
    theta = {0: THETA0, 1: THETA1}

    def fresh(params):
        return hash_to_hex(compute_state_hash(make_start_checkpoint(params)))

    carried = compute_start_hashes(history, documents, theta, sources, carry_moments=True)
    assert carried[(0, SOLVER_A)] == carried[(0, SOLVER_B)] == fresh(THETA0), "round 0 starts fresh"
    assert carried[(1, SOLVER_A)] == hash_to_hex(compute_state_hash(compute_start_checkpoint(THETA1, end_a)))
    assert carried[(1, SOLVER_A)] != fresh(THETA1)
    assert carried[(1, SOLVER_B)] is None, "accepted in round 0, but its end checkpoint cannot be read"
    plain = compute_start_hashes(history, documents, theta, sources, carry_moments=False)
    assert set(plain.values()) == {fresh(THETA0), fresh(THETA1)} and len(plain) == 4
    assert compute_start_hashes(history, documents, {0: THETA0}, sources, True).keys() == {
        (0, SOLVER_A),
        (0, SOLVER_B),
    }, "no θ_1, no start hash for round 1"
