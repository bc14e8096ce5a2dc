"""Tolerance verdicts: the whole-update relative error catches tampering spread over every tensor."""

from __future__ import annotations

import math

import torch

from adversary.behaviours import Behaviour, make_dishonest_segment
from protocol.outer import get_initial_global_state
from protocol.replay import compute_global_relative_error, judge_tolerance, replay_segment
from protocol.training import get_params, keep_checkpoints, train_round
from tests.conftest import SOLVER_A


def test_global_relative_error_is_over_the_whole_update():
    committed = {"a": torch.tensor([3.0, 0.0]), "b": torch.tensor([0.0, 4.0])}
    replayed = {"a": torch.tensor([3.0, 0.0]), "b": torch.tensor([0.0, 4.5])}
    assert math.isclose(compute_global_relative_error(replayed, committed), 0.5 / 5.0)
    assert compute_global_relative_error(committed, committed) == 0.0
    zero = {"a": torch.zeros(2)}
    assert compute_global_relative_error(zero, zero) == 0.0
    assert compute_global_relative_error({"a": torch.ones(2)}, zero) == math.inf


def test_one_percent_noise_passes_the_sketch_but_not_the_whole_update_check(tiny_config, dataset):
    checkpoints = {}
    theta = get_params(get_initial_global_state(tiny_config))
    records, _ = train_round(tiny_config, dataset, theta, 0, SOLVER_A, save_checkpoint=keep_checkpoints(checkpoints))
    start, end = checkpoints[1], checkpoints[2]
    replayed = replay_segment(tiny_config, dataset, 0, SOLVER_A, 1, start)
    honest_leaf = records[1].to_leaf(1, 0, SOLVER_A)
    honest = judge_tolerance(tiny_config, honest_leaf, records[1].sketch, start, replayed, end)
    assert honest.accepted and honest.global_relative_error == 0.0
    cheat = make_dishonest_segment(Behaviour.NOISE_1PCT, tiny_config, dataset, 0, SOLVER_A, 1, start, honest_end=end)
    leaf = cheat.record.to_leaf(1, 0, SOLVER_A)
    verdict = judge_tolerance(tiny_config, leaf, cheat.record.sketch, start, replayed, cheat.end_checkpoint)
    assert not verdict.accepted and verdict.method == "distance"
    assert verdict.max_relative_error < tiny_config.thresholds.max_relative_error  # per tensor: hidden
    assert math.isclose(verdict.global_relative_error, 0.01, rel_tol=0.01)  # whole update: caught
    without_end = judge_tolerance(tiny_config, leaf, cheat.record.sketch, start, replayed)
    assert not without_end.accepted and without_end.needs_end_checkpoint
