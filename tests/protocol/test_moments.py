"""Carried AdamW moments (`train.carry_moments`): c_0 with the moments of the previous round, and the verdict on it.

Pure: the tiny preset, no chain. The verdict under test (`check_trajectory` with `MomentsEvidence`) is the one
verifiers, whistleblowers and jurors run (node/checker.py); which moments a round must carry is node/moments.py's
chain rule, tested on a real anvil in tests/disputes/test_forged_moments.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from protocol.commitment import CommitmentDoc
from protocol.outer import compute_outer_step, get_initial_global_state
from protocol.replay import judge_exact, replay_segment
from protocol.state import compute_state_hash
from protocol.training import (
    ADAM_STEP,
    CheckpointError,
    compute_pseudo_gradient,
    get_moments,
    get_params,
    keep_checkpoints,
    make_start_checkpoint,
    train_round,
)
from protocol.verdict import MomentsEvidence, check_trajectory, get_start_hash
from tests.conftest import SOLVER_A

RUN = 1


@pytest.fixture(scope="module")
def carrying_config(tiny_config):
    return tiny_config.model_copy(update={"train": tiny_config.train.model_copy(update={"carry_moments": True})})


@pytest.fixture(scope="module")
def two_rounds(carrying_config, dataset):
    """Round 0 from fresh moments, then round 1 from θ_1 carrying round 0's end moments (every checkpoint kept)."""
    state0 = get_initial_global_state(carrying_config)
    theta0 = get_params(state0)
    _, end0 = train_round(carrying_config, dataset, theta0, 0, SOLVER_A)
    state1 = compute_outer_step(state0, {SOLVER_A: compute_pseudo_gradient(theta0, end0)}, carrying_config.train)
    theta1 = get_params(state1)
    moments = get_moments(end0)
    checkpoints: dict[int, dict[str, torch.Tensor]] = {}
    records, end1 = train_round(
        carrying_config, dataset, theta1, 1, SOLVER_A, save_checkpoint=keep_checkpoints(checkpoints),
        start_moments=moments,
    )  # fmt: skip
    doc = CommitmentDoc(
        RUN, 1, SOLVER_A, compute_state_hash(state1), compute_state_hash(compute_pseudo_gradient(theta1, end1)),
        tuple(r.to_leaf(RUN, 1, SOLVER_A) for r in records),
    )  # fmt: skip
    return theta1, moments, records, end1, checkpoints, doc


def test_start_checkpoint_carries_the_moments_and_refuses_ones_that_do_not_fit(two_rounds):
    theta1, moments, _, _, checkpoints, _ = two_rounds
    c0 = make_start_checkpoint(theta1, moments)
    assert get_moments(c0).keys() == moments.keys() and float(c0[ADAM_STEP]) > 0
    assert all(torch.equal(c0[k], v) for k, v in moments.items())
    assert compute_state_hash(c0) == compute_state_hash(checkpoints[0])
    assert compute_state_hash(c0) != compute_state_hash(make_start_checkpoint(theta1))  # fresh is another c_0
    name = next(k for k in moments if k.endswith("/exp_avg"))
    with pytest.raises(CheckpointError, match="missing"):
        make_start_checkpoint(theta1, {k: v for k, v in moments.items() if k != name})
    with pytest.raises(CheckpointError, match=f"carried moment '{name}' has shape"):
        make_start_checkpoint(theta1, {**moments, name: torch.zeros(3)})


def test_a_round_from_carried_moments_replays_bit_identically(carrying_config, dataset, two_rounds):
    _, _, records, _, checkpoints, doc = two_rounds
    for segment in (0, len(records) - 1):
        replayed = replay_segment(carrying_config, dataset, 1, SOLVER_A, segment, checkpoints[segment])
        assert judge_exact(carrying_config, doc.leaves[segment], checkpoints[segment], replayed).accepted


def test_trajectory_must_start_from_the_moments_the_chain_carries(carrying_config, two_rounds):
    theta1, moments, _, end1, _, doc = two_rounds
    segments = carrying_config.train.num_segments
    assert check_trajectory(doc, theta1, end1, segments, moments=MomentsEvidence(moments)) is None
    start_fail = "leaf 0 does not start where θ_r's start checkpoint is"
    # fresh moments where the chain says carried ones (and carried where it says fresh) fail at the first leaf
    assert check_trajectory(doc, theta1, end1, segments, moments=MomentsEvidence(None)) == start_fail
    assert check_trajectory(doc, theta1, end1, segments) == start_fail
    # forged moments: the first moments scaled (ForgedMomentsSolverNode) name another c_0
    forged = {k: v * 4 if k.endswith("/exp_avg") else v for k, v in moments.items()}
    assert check_trajectory(doc, theta1, end1, segments, moments=MomentsEvidence(forged)) == start_fail
    # a previous end checkpoint the solver does not serve is its failure, named
    problem = check_trajectory(doc, theta1, end1, segments, moments=MomentsEvidence(problem="404 from the peer"))
    assert problem == "carried optimizer moments not served: 404 from the peer"
    broken = {k: v for k, v in moments.items() if k != ADAM_STEP}
    assert "do not fit θ's parameters" in (get_start_hash(theta1, MomentsEvidence(broken))[1] or "")
    # and a document whose first leaf names the fresh c_0 passes only where the chain says fresh
    fresh_doc = replace(doc, leaves=(replace(doc.leaves[0], start_hash=get_start_hash(theta1, None)[0]),))
    assert check_trajectory(fresh_doc, theta1, end1, 1, moments=MomentsEvidence(moments)) == start_fail
