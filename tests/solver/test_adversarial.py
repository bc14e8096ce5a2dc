"""Every cheating behaviour yields a segment that passes the prechecks and fails exact replay."""

from __future__ import annotations

import math

import pytest
import torch

from adversary.behaviours import AdversaryError, Behaviour, make_dishonest_segment
from protocol.outer import get_initial_global_state
from protocol.replay import judge_exact, replay_segment
from protocol.state import is_same_state
from protocol.training import compute_param_update, get_params, keep_checkpoints, train_round
from tests.conftest import SOLVER_A

RUN_ID, ROUND = 7, 1


@pytest.fixture(scope="module")
def honest_round(tiny_config, dataset):
    """A tiny honest round: its checkpoints c_0..c_n and segment records."""
    checkpoints = {}
    theta = get_params(get_initial_global_state(tiny_config))
    records, _ = train_round(
        tiny_config, dataset, theta, ROUND, SOLVER_A, save_checkpoint=keep_checkpoints(checkpoints)
    )
    return checkpoints, records


@pytest.mark.parametrize("behaviour", list(Behaviour))
@pytest.mark.parametrize("segment", [0, 1])
def test_every_behaviour_is_caught_by_exact_replay(tiny_config, dataset, honest_round, behaviour, segment):
    checkpoints, records = honest_round
    start = checkpoints[segment]
    previous = compute_param_update(checkpoints[segment - 1], start) if segment else None
    if behaviour is Behaviour.REUSED_UPDATE and previous is None:
        previous = compute_param_update(checkpoints[1], checkpoints[2])  # another segment's update
    cheat = make_dishonest_segment(
        behaviour, tiny_config, dataset, ROUND, SOLVER_A, segment, start, seed=3, previous_update=previous
    )
    leaf = cheat.record.to_leaf(RUN_ID, ROUND, SOLVER_A)
    honest_leaf = records[segment].to_leaf(RUN_ID, ROUND, SOLVER_A)
    # The cheat claims what an honest segment claims, so only replay can reject it ...
    assert (leaf.start_hash, leaf.tokens) == (honest_leaf.start_hash, honest_leaf.tokens)
    assert leaf.end_hash != honest_leaf.end_hash
    assert not is_same_state(cheat.end_checkpoint, checkpoints[segment + 1])
    # ... and the verifier's replay under the same profile does.
    replayed = replay_segment(tiny_config, dataset, ROUND, SOLVER_A, segment, start)
    verdict = judge_exact(tiny_config, leaf, start, replayed)
    assert not verdict.accepted and verdict.method == "exact", verdict
    assert judge_exact(tiny_config, honest_leaf, start, replayed).accepted


def test_cheats_are_deterministic(tiny_config, dataset, honest_round):
    checkpoints, _ = honest_round
    for behaviour in (Behaviour.NOISE_1PCT, Behaviour.SINGLE_TENSOR, Behaviour.WRONG_DATA):
        a = make_dishonest_segment(behaviour, tiny_config, dataset, ROUND, SOLVER_A, 1, checkpoints[1], seed=5)
        b = make_dishonest_segment(behaviour, tiny_config, dataset, ROUND, SOLVER_A, 1, checkpoints[1], seed=5)
        c = make_dishonest_segment(behaviour, tiny_config, dataset, ROUND, SOLVER_A, 1, checkpoints[1], seed=6)
        assert a.record.end_hash == b.record.end_hash != c.record.end_hash


def test_tampering_has_the_named_size(tiny_config, dataset, honest_round):
    checkpoints, _ = honest_round
    start, honest_end = checkpoints[1], checkpoints[2]
    honest = compute_param_update(start, honest_end)
    for behaviour, size in ((Behaviour.NOISE_1PCT, 0.01), (Behaviour.NOISE_10PCT, 0.1), (Behaviour.SCALED_UPDATE, 0.1)):
        cheat = make_dishonest_segment(
            behaviour, tiny_config, dataset, ROUND, SOLVER_A, 1, start, honest_end=honest_end
        )
        tampered = compute_param_update(start, cheat.end_checkpoint)
        for name, u in honest.items():
            assert math.isclose((tampered[name] - u).norm() / u.norm(), size, rel_tol=1e-3), (behaviour, name)
    single = make_dishonest_segment(
        Behaviour.SINGLE_TENSOR, tiny_config, dataset, ROUND, SOLVER_A, 1, start, honest_end=honest_end
    )
    changed = compute_param_update(start, single.end_checkpoint)
    differing = [n for n, u in honest.items() if not torch.allclose(changed[n], u, atol=1e-9)]
    assert len(differing) == 1


def test_reused_update_needs_the_previous_update(tiny_config, dataset, honest_round):
    checkpoints, _ = honest_round
    with pytest.raises(AdversaryError, match="previous segment"):
        make_dishonest_segment(Behaviour.REUSED_UPDATE, tiny_config, dataset, ROUND, SOLVER_A, 1, checkpoints[1])
    with pytest.raises(ValueError):
        make_dishonest_segment("not-a-cheat", tiny_config, dataset, ROUND, SOLVER_A, 1, checkpoints[1])
