"""protocol/moments.py: the one carried-moments rule node/moments.py and the auditor both apply (pure, no chain)."""

from __future__ import annotations

import pytest
import torch

from protocol.commitment import CommitmentDoc
from protocol.hashing import to_hash32
from protocol.merkle import SegmentLeaf
from protocol.moments import (
    compute_start_checkpoint,
    find_carried_commitment,
    get_carried_checkpoint_hash,
    get_carried_round,
)
from protocol.state import compute_state_hash
from protocol.training import get_moments, get_params, make_start_checkpoint


def test_a_round_carries_from_the_previous_round_only_when_the_run_carries_and_it_is_not_round_0():
    assert [get_carried_round(True, r) for r in range(3)] == [None, 0, 1]
    assert [get_carried_round(False, r) for r in range(3)] == [None, None, None]


def test_the_carried_commitment_is_the_solvers_accepted_one_of_round_r_minus_1():
    asked: list[tuple[int, str]] = []
    accepted = {(0, "0xa"): "commitment a0", (1, "0xb"): "commitment b1"}

    def get_accepted(round_index: int, solver: str) -> str | None:
        asked.append((round_index, solver))
        return accepted.get((round_index, solver))

    assert find_carried_commitment(True, 1, "0xa", get_accepted) == "commitment a0"
    assert find_carried_commitment(True, 2, "0xb", get_accepted) == "commitment b1"
    assert find_carried_commitment(True, 2, "0xa", get_accepted) is None, "not accepted in round 1: fresh moments"
    assert asked == [(0, "0xa"), (1, "0xb"), (1, "0xa")], "only round r - 1 is asked about"
    assert find_carried_commitment(True, 0, "0xa", get_accepted) is None
    assert find_carried_commitment(False, 1, "0xa", get_accepted) is None
    assert len(asked) == 3, "round 0 and a run without carrying ask nothing"


def test_the_moments_come_from_the_last_leafs_end_checkpoint():
    h = [to_hash32(bytes([i]) * 32) for i in range(4)]
    leaves = tuple(SegmentLeaf(1, 1, "0x" + "aa" * 20, i, h[i], h[i + 1], h[0], 10) for i in range(3))
    doc = CommitmentDoc(1, 1, "0x" + "aa" * 20, h[0], h[0], leaves)
    assert get_carried_checkpoint_hash(doc) == h[3]


@pytest.fixture
def params() -> dict[str, torch.Tensor]:
    return {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.ones(3)}


def test_c0_is_theta_with_fresh_or_carried_moments(params):
    fresh = compute_start_checkpoint(params, None)
    assert compute_state_hash(fresh) == compute_state_hash(make_start_checkpoint(params))
    moments = {k: v + 0.5 for k, v in get_moments(fresh).items()}
    end = make_start_checkpoint({k: v * 3 for k, v in params.items()}, moments)  # other parameters, same moments
    carried = compute_start_checkpoint(params, end)
    assert compute_state_hash(carried) == compute_state_hash(make_start_checkpoint(params, moments))
    assert compute_state_hash(carried) != compute_state_hash(fresh)
    assert all(torch.equal(carried[k], v) for k, v in get_params(fresh).items()), "θ_r's parameters either way"
