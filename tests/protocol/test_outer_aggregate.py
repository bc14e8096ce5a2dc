"""The outer step's aggregate options (protocol/outer.py): the mean over senders, clipping to the median norm."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.config import TRAIN_KEYS_LEFT_OUT_AT_DEFAULT, TrainConfig, build_run_config, encode_config
from protocol.outer import (
    OuterStepError,
    compute_exact_norm,
    compute_mean_pseudo_gradient,
    get_median_clip_scales,
)

A, B, C = ("0x" + f"{i:02x}" * 20 for i in (0xA1, 0xB2, 0xC3))
SENDERS = TrainConfig(aggregate="senders")
CLIPPED = TrainConfig(clip_to_median_norm=True)


def test_compute_mean_pseudo_gradient_over_senders_moves_a_lone_value_as_far_as_a_shared_one():
    deltas = {A: {"w": torch.tensor([4.0, 0.0, 1.0])}, B: {"w": torch.tensor([0.0, 0.0, 3.0])}}
    mean = compute_mean_pseudo_gradient(deltas, TrainConfig())["w"]
    senders = compute_mean_pseudo_gradient(deltas, SENDERS)["w"]
    assert mean.tolist() == [2.0, 0.0, 2.0]  # the lone 4.0 moves half as far
    assert senders.tolist() == [4.0, 0.0, 2.0]  # nobody sent the middle value: it stays 0, no division by zero


def test_compute_mean_pseudo_gradient_clips_every_delta_above_the_median_norm():
    deltas = {
        A: {"w": torch.tensor([3.0, 4.0])},
        B: {"w": torch.tensor([0.0, 1.0])},
        C: {"w": torch.tensor([0.0, 60.0])},
    }
    assert get_median_clip_scales([deltas[s] for s in (A, B, C)]) == [1.0, 1.0, float(np.float32(5 / 60))]
    clipped = compute_mean_pseudo_gradient(deltas, CLIPPED)["w"]
    big = torch.tensor([0.0, 60.0]) * torch.tensor(float(np.float32(5 / 60)))
    assert torch.equal(clipped, (torch.tensor([3.0, 4.0]) + torch.tensor([0.0, 1.0]) + big) / 3)
    assert math.isclose(compute_exact_norm({"w": clipped * 0 + big}), 5.0, rel_tol=1e-6)


def test_compute_mean_pseudo_gradient_with_one_delta_or_equal_norms_clips_nothing():
    one = {A: {"w": torch.tensor([1.0, -2.0])}}
    assert torch.equal(compute_mean_pseudo_gradient(one, CLIPPED)["w"], one[A]["w"])
    twins = {A: {"w": torch.tensor([1.0, 0.0])}, B: {"w": torch.tensor([0.0, -1.0])}}
    assert compute_mean_pseudo_gradient(twins, CLIPPED)["w"].tolist() == [0.5, -0.5]


def test_compute_mean_pseudo_gradient_with_mismatched_deltas_reverts():
    with pytest.raises(OuterStepError, match="mismatched shapes"):
        compute_mean_pseudo_gradient({A: {"w": torch.zeros(2)}, B: {"w": torch.zeros(3)}}, CLIPPED)
    with pytest.raises(OuterStepError, match="different tensors"):
        compute_mean_pseudo_gradient({A: {"w": torch.zeros(2)}, B: {"v": torch.zeros(2)}}, SENDERS)


_floats = st.floats(allow_nan=False, allow_infinity=False, width=32)


@settings(max_examples=60, deadline=None)
@given(st.lists(_floats, min_size=1, max_size=300), st.randoms(use_true_random=False))
def test_compute_exact_norm_is_the_correctly_rounded_norm_in_any_order_and_split(values, rng):
    exact = math.sqrt(math.fsum(float(v) * float(v) for v in values))  # Python floats: exact squares, one rounding
    shuffled = list(values)
    rng.shuffle(shuffled)
    cut = rng.randrange(len(shuffled) + 1)
    split = {
        "a": torch.tensor(shuffled[:cut], dtype=torch.float32),
        "b": torch.tensor(shuffled[cut:], dtype=torch.float32),
    }
    assert compute_exact_norm({"w": torch.tensor(values, dtype=torch.float32)}) == exact
    assert compute_exact_norm(split) == exact


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(-8, 8, width=32), min_size=4, max_size=4), min_size=1, max_size=5))
def test_compute_mean_pseudo_gradient_over_senders_never_exceeds_the_largest_sent_magnitude(rows):
    deltas = {f"0x{i + 1:040x}": {"w": torch.tensor(row, dtype=torch.float32)} for i, row in enumerate(rows)}
    got = compute_mean_pseudo_gradient(deltas, SENDERS)["w"]
    stacked = torch.stack([d["w"] for d in deltas.values()])
    assert torch.all(got.abs() <= stacked.abs().amax(dim=0))
    assert torch.all(got[(stacked != 0).sum(dim=0) == 0] == 0)  # a value nobody sent stays 0


def test_encode_config_leaves_out_the_aggregate_options_at_their_defaults():
    plain = build_run_config(preset="tiny", run_seed="0x" + "11" * 32, dataset_root="0x" + "22" * 32)
    assert {"aggregate": "mean", "clip_to_median_norm": False}.items() <= TRAIN_KEYS_LEFT_OUT_AT_DEFAULT.items()
    assert b"aggregate" not in encode_config(plain) and b"clip_to_median_norm" not in encode_config(plain)
    on = build_run_config(
        preset="tiny", run_seed="0x" + "11" * 32, dataset_root="0x" + "22" * 32,
        overrides={"train": {"aggregate": "senders", "clip_to_median_norm": True}},
    )  # fmt: skip
    assert b'"aggregate":"senders"' in encode_config(on) and b'"clip_to_median_norm":true' in encode_config(on)
