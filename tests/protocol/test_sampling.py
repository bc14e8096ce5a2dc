"""Sampling seeds, verifier seats, sampled segments and detection probabilities."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import SeedError
from protocol.hashing import keccak256
from protocol.sampling import (
    MAX_SAMPLES,
    compute_detection_probability,
    compute_sample,
    compute_sampled_segments,
    compute_sampling_seed,
    compute_seat_seed,
    compute_seat_verifier_indices,
    get_required_samples,
)

SOLVER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
BLOCK = keccak256(b"block")


def test_seed_depends_on_every_input():
    base = compute_sampling_seed(BLOCK, 1, 2, SOLVER)
    others = {
        compute_sampling_seed(keccak256(b"other block"), 1, 2, SOLVER),
        compute_sampling_seed(BLOCK, 2, 2, SOLVER),
        compute_sampling_seed(BLOCK, 1, 3, SOLVER),
        compute_sampling_seed(BLOCK, 1, 2, "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"),
    }
    assert base not in others and len(others) == 4
    assert compute_sampling_seed("0x" + BLOCK.hex(), 1, 2, SOLVER.lower()) == base


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.integers(1, 10_000), st.integers(1, 64))
def test_samples_are_in_range_and_deterministic(seed, segments, samples):
    drawn = compute_sampled_segments(seed, segments, samples)
    assert len(drawn) == samples
    assert all(0 <= s < segments for s in drawn)
    assert drawn == compute_sampled_segments(seed, segments, samples)
    assert drawn[: samples // 2] == compute_sampled_segments(seed, segments, max(1, samples // 2))[: samples // 2]


def test_samples_cover_segments_roughly_uniformly():
    counts = [0] * 10
    for s in compute_sampled_segments(BLOCK, 10, 1000):
        counts[s] += 1
    assert min(counts) > 60 and max(counts) < 140


def test_seats_have_their_own_seeds_verifiers_and_samples():
    seed = compute_sampling_seed(BLOCK, 1, 2, SOLVER)
    seats = [compute_seat_seed(seed, q) for q in range(8)]
    assert len(set(seats)) == 8 and seed not in seats
    assert compute_seat_seed("0x" + seed.hex(), 3) == seats[3]
    samples = {compute_sampled_segments(s, 1000, 4) for s in seats}
    assert len(samples) == 8, "every seat replays its own segments"


def test_sybil_block_holds_all_seats_at_the_independent_rate():
    """30 verifiers, a block of 10 sybils (a third of the list), 3 seats per commitment, 3,000 commitments:
    all three seats are sybils with probability 10/30 x 9/29 x 8/28 = 0.0296 (89 expected, binomial sd 9.3),
    where a consecutive window of the list gave them all three 8/30 of the time (800 expected)."""
    count, sybils, commitments, together = 30, range(10, 20), 3_000, 0
    for n in range(commitments):
        seats = compute_seat_verifier_indices(compute_sampling_seed(BLOCK, 1, n, SOLVER), 3, count)
        assert len(set(seats)) == 3 and all(0 <= v < count for v in seats)
        together += all(v in sybils for v in seats)
    assert 89 - 5 * 9.3 < together < 89 + 5 * 9.3, together


def test_seats_cover_the_list_uniformly_and_fill_it_when_seats_equal_verifiers():
    counts = [0] * 5
    for n in range(2_000):
        for index in compute_seat_verifier_indices(compute_sampling_seed(BLOCK, 2, n, SOLVER), 2, 5):
            counts[index] += 1
    assert all(700 < c < 900 for c in counts), counts  # 800 each
    for n in range(50):  # as many seats as verifiers: every verifier holds exactly one
        assert sorted(compute_seat_verifier_indices(compute_sampling_seed(BLOCK, 3, n, SOLVER), 4, 4)) == [0, 1, 2, 3]


def test_detection_probability_formula():
    assert compute_detection_probability(Fraction(1, 4), 2) == Fraction(7, 16)
    assert compute_detection_probability(Fraction(1, 5), 2, seats=3) == 1 - Fraction(4, 5) ** 6
    assert compute_detection_probability(Fraction(1, 5), 2, seats=0) == 0
    assert compute_detection_probability(0, 10) == 0
    assert compute_detection_probability(1, 1) == 1
    assert compute_detection_probability(Fraction(1, 10), 0) == 0


@settings(max_examples=100, deadline=None)
@given(
    st.fractions(min_value=Fraction(1, 1000), max_value=1),
    st.fractions(min_value=0, max_value=Fraction(999, 1000)),
)
def test_required_samples_is_the_smallest_that_reaches_the_target(f, target):
    try:
        s = get_required_samples(f, target)
    except SeedError:
        return  # needs more than MAX_SAMPLES
    assert compute_detection_probability(f, s) >= target
    assert s == 0 or compute_detection_probability(f, s - 1) < target


def test_required_samples_fraction_that_rounds_to_one():
    """A faked fraction just below 1 whose float is 1.0 (hypothesis found log1p(-1.0) failing there)."""
    assert get_required_samples(1 - Fraction(1, 10**20), Fraction(999, 1000)) == 1
    assert get_required_samples(1 - Fraction(1, 10**400), Fraction(1, 2)) == 1


def test_required_samples_examples_and_bounds():
    assert get_required_samples(Fraction(1, 10), Fraction(99, 100)) == 44
    with pytest.raises(SeedError, match=f"more than the {MAX_SAMPLES}"):
        get_required_samples(Fraction(1, 10**6), Fraction(99, 100))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: compute_sampling_seed(b"\x00" * 31, 1, 1, SOLVER),
            "block hash must be exactly 32 bytes, got 31",
        ),
        (lambda: compute_sampling_seed("0x1234", 1, 1, SOLVER), "64 hex digits"),
        (lambda: compute_sampling_seed(BLOCK, 1, 1, "bob"), "20-byte hex address"),
        (lambda: compute_sample(b"\x00" * 33, 0, 5), "sampling seed must be exactly 32 bytes, got 33"),
        (lambda: compute_sampled_segments(BLOCK, 0, 1), "at least one segment"),
        (lambda: compute_sampled_segments(BLOCK, 5, 0), "samples per commitment"),
        (lambda: compute_detection_probability(Fraction(3, 2), 1), "faked fraction"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, message):
    with pytest.raises(SeedError, match=message):
        call()
