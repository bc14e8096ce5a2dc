"""The three compression counts (sim/byte_counts.py) against the published anchors issue 40 names."""

from __future__ import annotations

import pytest

from sim.byte_counts import compute_ratio_counts

N = 834_304


def test_compute_ratio_counts_reproduces_sparseloco_and_our_anchor():
    # SparseLoCo: top 64 of 4,096 at 2-bit values and 12-bit indices = 0.22 bits per parameter, H = 30.
    sparse = compute_ratio_counts(N, 30, 4, N * (64 * 14 / 4096) / 8)
    assert round(sparse.per_round_vs_dense) == 146 and round(sparse.per_step_vs_dp_upload, -1) == 4390
    # Ours, int2-c4096-k176 at H = 25, M = 4: 84x per round is ~2,100x per step and ~1,050x by our count.
    ours = compute_ratio_counts(N, 25, 4, 4 * N / 84)
    assert round(ours.per_round_vs_dense) == 84 and round(ours.per_step_vs_dp_upload) == 2100
    assert round(ours.ours) == 1050 and ours.bits_per_parameter == pytest.approx(32 / 84)


def test_compute_ratio_counts_of_a_dense_exchange_is_h_fold_by_every_step_count():
    dense = compute_ratio_counts(N, 25, 4, 4 * N)
    assert (dense.per_round_vs_dense, dense.per_step_vs_dp_upload, dense.bits_per_parameter) == (1, 25, 32)
    # Our count charges the download of every peer's payload: M fp32 copies against 2 per step.
    assert dense.ours == 2 * 25 / 4


@pytest.mark.parametrize("bad", [(0, 25, 4, 10), (N, 0, 4, 10), (N, 25, 0, 10), (N, 25, 4, 0)])
def test_compute_ratio_counts_with_a_non_positive_input_reverts(bad):
    with pytest.raises(ValueError, match="must all be positive"):
        compute_ratio_counts(*bad)
