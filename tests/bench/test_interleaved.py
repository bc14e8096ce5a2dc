"""bench/interleaved.py: the turns benchmarks time in, and the spread they report (issue 38)."""

from __future__ import annotations

import pytest

from bench.interleaved import compute_paired_ratios, compute_spread, time_interleaved


def test_candidates_take_turns_reversed_every_other_round_after_the_warmup():
    order: list[str] = []
    seconds = time_interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, reps=3, warmup=1)
    assert order == ["a", "b", "a", "b", "b", "a", "a", "b"]
    assert {name: len(samples) for name, samples in seconds.items()} == {"a": 3, "b": 3}
    assert all(t >= 0 for samples in seconds.values() for t in samples)


def test_no_repetition_is_refused():
    with pytest.raises(ValueError, match="reps must be at least 1"):
        time_interleaved({"a": lambda: None}, reps=0)


def test_spread_is_the_five_number_summary():
    spread = compute_spread([5.0, 1.0, 4.0, 2.0, 3.0])
    assert (spread.min, spread.q1, spread.median, spread.q3, spread.max, spread.n) == (1.0, 2.0, 3.0, 4.0, 5.0, 5)
    assert spread.as_json(1) == {"min": 1.0, "q1": 2.0, "median": 3.0, "q3": 4.0, "max": 5.0, "n": 5}
    one = compute_spread([0.25])
    assert (one.min, one.q1, one.median, one.q3, one.max) == (0.25,) * 5
    with pytest.raises(ValueError, match="no samples"):
        compute_spread([])


def test_ratios_are_taken_pair_by_pair():
    assert compute_paired_ratios([2.0, 9.0], [1.0, 3.0]) == [2.0, 3.0]
    with pytest.raises(ValueError, match="unpaired"):
        compute_paired_ratios([1.0], [1.0, 2.0])
