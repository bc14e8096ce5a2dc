"""Update sketches: determinism, direction, magnitude, per-tensor locality, encoding."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import SeedError, SketchError
from protocol.hashing import keccak256
from protocol.sketch import (
    NORM_ZERO,
    SketchSpec,
    compute_sketch_distance,
    compute_sketch_hash,
    compute_update,
    compute_update_sketch,
    decode_sketch,
    encode_sketch,
    expand_seed,
    hamming,
)

SPEC = SketchSpec(seed=keccak256(b"test projection"))
# Large enough for every path: full batched rows (4 x 65536), leftover rows and a tail.
BIG = 5 * 65536 + 1234


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _with_angle(u: torch.Tensor, angle: float, seed: int) -> torch.Tensor:
    """A vector at exactly `angle` radians from u, with the same norm."""
    w = _randn(*u.shape, seed=seed).double()
    ud = u.double()
    w -= (w.flatten() @ ud.flatten()) / (ud.flatten() @ ud.flatten()) * ud
    w *= ud.norm() / w.norm()
    return (math.cos(angle) * ud + math.sin(angle) * w).float()


def test_sketch_is_identical_at_one_and_two_threads():
    update = {"big": _randn(BIG), "mid": _randn(300, 70, seed=1), "small": _randn(17, seed=2)}
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = compute_update_sketch(update, SPEC)
        torch.set_num_threads(2)
        two = compute_update_sketch(update, SPEC)
    finally:
        torch.set_num_threads(previous)
    assert one == two
    assert compute_sketch_hash(one) == compute_sketch_hash(two)


def test_sketch_depends_on_the_projection_seed():
    update = {"w": _randn(5000)}
    other = SketchSpec(seed=keccak256(b"another run"))
    assert compute_update_sketch(update, SPEC).tensors[0].bits != compute_update_sketch(update, other).tensors[0].bits


@pytest.mark.parametrize("numel", [64, 4096, 20_000, BIG])
@pytest.mark.parametrize("angle", [0.05, 0.3, 1.0])
def test_hamming_fraction_estimates_the_angle(numel, angle):
    u = _randn(numel, seed=numel)
    v = _with_angle(u, angle, seed=7)
    distance = compute_sketch_distance(compute_update_sketch({"t": u}, SPEC), compute_update_sketch({"t": v}, SPEC))
    # SimHash: E[hamming / b] = angle / pi; 1024 bits give a standard deviation < 0.016.
    assert abs(distance.max_hamming_fraction - angle / math.pi) < 0.06


@pytest.mark.parametrize("numel", [100, BIG])
def test_power_of_two_scaling_keeps_bits_and_shifts_norm_exactly(numel):
    u = _randn(numel, seed=3)
    a = compute_update_sketch({"t": u}, SPEC).tensors[0]
    b = compute_update_sketch({"t": u * 2}, SPEC).tensors[0]
    assert a.bits == b.bits
    assert b.log2_norm_q - a.log2_norm_q == SPEC.norm_scale


def test_scaled_update_is_seen_by_the_norm_not_the_bits():
    u = {"t": _randn(BIG, seed=4)}
    distance = compute_sketch_distance(compute_update_sketch(u, SPEC), compute_update_sketch({"t": u["t"] * 0.9}, SPEC))
    assert distance.max_hamming_fraction < 0.01
    assert abs(distance.max_log2_norm_diff - abs(math.log2(0.9))) < 2 / SPEC.norm_scale


def test_norm_is_exact_for_small_tensors():
    u = _randn(1000, seed=5)
    q = compute_update_sketch({"t": u}, SPEC).tensors[0].log2_norm_q
    assert q == round(SPEC.norm_scale * math.log2(u.double().norm().item()))


def test_change_in_one_tensor_is_not_diluted():
    update = {f"layer{i}": _randn(128, 128, seed=i) for i in range(8)}
    tampered = dict(update)
    tampered["layer5"] = _with_angle(update["layer5"], 0.4, seed=99).reshape(128, 128)
    distance = compute_sketch_distance(compute_update_sketch(update, SPEC), compute_update_sketch(tampered, SPEC))
    assert distance.worst_hamming_tensor == "layer5"
    assert distance.max_hamming_fraction > 0.08
    untouched = [row for row in distance.per_tensor if row[0] != "layer5"]
    assert all(h == 0.0 and n == 0.0 for _, h, n in untouched)


def test_zero_update_has_sentinel_norm():
    sketch = compute_update_sketch({"t": torch.zeros(10)}, SPEC)
    assert sketch.tensors[0].log2_norm_q == NORM_ZERO
    other = compute_update_sketch({"t": torch.ones(10)}, SPEC)
    assert compute_sketch_distance(sketch, other).max_log2_norm_diff == math.inf


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=1, max_size=300))
def test_sketch_is_a_pure_function_and_roundtrips(values):
    update = {"t": torch.tensor(values, dtype=torch.float32)}
    sketch = compute_update_sketch(update, SPEC)
    assert sketch == compute_update_sketch({"t": update["t"].clone()}, SPEC)
    assert decode_sketch(encode_sketch(sketch)) == sketch
    assert compute_sketch_distance(sketch, sketch).max_hamming_fraction == 0.0


def test_compute_update_subtracts_and_skips_integer_entries():
    before = {"w": torch.ones(3), "step": torch.tensor(1)}
    after = {"w": torch.tensor([2.0, 3.0, 4.0]), "step": torch.tensor(6)}
    update = compute_update(before, after)
    assert set(update) == {"w"} and update["w"].tolist() == [1.0, 2.0, 3.0]


def test_hamming_counts_differing_bits():
    assert hamming(b"\x00\xff", b"\x01\x0f") == 5
    with pytest.raises(SketchError, match="2 and 1 bytes"):
        hamming(b"\x00\x00", b"\x00")


def test_expand_seed_is_prefix_stable():
    assert expand_seed(SPEC.seed, b"x", 100)[:40] == expand_seed(SPEC.seed, b"x", 40)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"buckets": 1000}, "power of two"),
        ({"bits": 12}, "multiple of 8"),
        ({"bits": 8192}, "between 8 and buckets"),
        ({"fold": 0}, "fold must be between"),
    ],
)
def test_bad_specs_raise_clear_errors(kwargs, message):
    with pytest.raises(SketchError, match=message):
        SketchSpec(seed=SPEC.seed, **kwargs)


def test_bad_seed_length_is_a_clear_error():
    with pytest.raises(SeedError, match="exactly 32 bytes, got 5"):
        SketchSpec(seed=b"short")


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ({}, "empty update"),
        ({"t": torch.tensor([1.0, float("nan")])}, "NaN or infinity"),
        ({"t": torch.full((BIG,), float("inf"))}, "NaN or infinity"),
        ({"t": torch.ones(3, dtype=torch.int64)}, "sketches need floats"),
        ({"t": [1.0]}, "not a tensor"),
        ({"t": torch.zeros(0)}, "is empty"),
    ],
)
def test_bad_updates_raise_clear_errors(update, message):
    with pytest.raises(SketchError, match=message):
        compute_update_sketch(update, SPEC)


def test_comparing_sketches_of_different_models_is_an_error():
    a = compute_update_sketch({"a": torch.ones(4)}, SPEC)
    b = compute_update_sketch({"b": torch.ones(4)}, SPEC)
    with pytest.raises(SketchError, match="different tensors"):
        compute_sketch_distance(a, b)


def test_decode_sketch_rejects_garbage():
    good = encode_sketch(compute_update_sketch({"a": torch.ones(4)}, SPEC))
    for bad in (b"nope", good[:-1], good + b"\0"):
        with pytest.raises(SketchError, match="not a sketch"):
            decode_sketch(bad)
