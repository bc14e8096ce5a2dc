"""A round as a pure function of its `RoundInputs`: the one value a solver gathers before training starts."""

from __future__ import annotations

import dataclasses

import pytest

from protocol.hashing import to_hash32
from protocol.outer import get_initial_global_state
from protocol.state import compute_state_hash
from protocol.training import (
    RoundInputs,
    get_moments,
    get_params,
    keep_checkpoints,
    train_round,
    train_round_inputs,
)
from tests.conftest import SOLVER_A


def _hashes(records):
    return [(r.start_hash, r.end_hash, r.sketch_hash) for r in records]


def test_training_from_inputs_is_training_from_the_same_values_one_by_one(tiny_config, dataset):
    theta = get_params(get_initial_global_state(tiny_config))
    _, first_end = train_round(tiny_config, dataset, theta, 0, SOLVER_A)
    secret, moments = to_hash32(b"\x07" * 32), get_moments(first_end)
    kept: dict = {}
    inputs = RoundInputs(tiny_config, dataset, 1, SOLVER_A, theta, plant_secret=secret, start_moments=moments)
    records, end = train_round_inputs(inputs, save_checkpoint=keep_checkpoints(kept))
    loose, loose_end = train_round(tiny_config, dataset, theta, 1, SOLVER_A, plant_secret=secret, start_moments=moments)
    assert _hashes(records) == _hashes(loose)
    assert compute_state_hash(end) == compute_state_hash(loose_end)
    assert compute_state_hash(kept[0]) == records[0].start_hash
    # every input counts: without the secret or the moments the round is another one
    plain, _ = train_round_inputs(dataclasses.replace(inputs, plant_secret=None))
    fresh, _ = train_round_inputs(dataclasses.replace(inputs, start_moments=None))
    assert plain[-1].end_hash != records[-1].end_hash != fresh[-1].end_hash
    assert plain[0].start_hash == records[0].start_hash != fresh[0].start_hash  # c_0 carries the moments


def test_round_inputs_cannot_change_once_gathered(tiny_config, dataset):
    inputs = RoundInputs(tiny_config, dataset, 0, SOLVER_A, get_params(get_initial_global_state(tiny_config)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        inputs.plant_secret = b"\x01" * 32  # type: ignore[misc]
