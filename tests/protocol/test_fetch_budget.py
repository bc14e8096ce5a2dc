"""The fetch budget rule (protocol/fetch_budget.py): a sixth of the attest window, at least MIN_FETCH_BUDGET_S, and
what a late opening leaves in a window sized by `compute_window_needs`."""

from __future__ import annotations

import pytest

from protocol.errors import ConfigError
from protocol.fetch_budget import MIN_FETCH_BUDGET_S, compute_fetch_budget_s
from protocol.windows import OPEN_ALLOWANCE_S, PACE_SAFETY, TX_ALLOWANCE_S


@pytest.mark.parametrize(("attest_window_s", "budget_s"), [(90, 15.0), (300, 50.0), (600, 100.0), (31, 31 / 6)])
def test_a_sixth_of_the_attest_window(attest_window_s, budget_s):
    assert compute_fetch_budget_s(attest_window_s) == pytest.approx(budget_s)


@pytest.mark.parametrize("attest_window_s", [1, 8, 12, 15, 30])
def test_short_windows_get_the_floor(attest_window_s):
    assert compute_fetch_budget_s(attest_window_s) == MIN_FETCH_BUDGET_S


@pytest.mark.parametrize("attest_window_s", [0, -5])
def test_a_window_that_is_not_positive_is_refused(attest_window_s):
    with pytest.raises(ConfigError, match="must be positive"):
        compute_fetch_budget_s(attest_window_s)


@pytest.mark.parametrize("replay_s", [2, 10, 60, 600])
def test_after_a_late_opening_budget_replays_and_attestation_fit_a_minimal_window(replay_s):
    """The window `compute_window_needs` asks for replays taking `replay_s` at the measured pace; a solver opening at
    open_end (its middle) and dripping up to the budget still leaves the replays and the attestation their time (to
    the 4/3 s the rule rounds away)."""
    window = OPEN_ALLOWANCE_S + PACE_SAFETY * replay_s + TX_ALLOWANCE_S
    after_late_opening = window / 2
    budget = compute_fetch_budget_s(window)
    if budget > MIN_FETCH_BUDGET_S:  # the floor is for windows too short to split
        assert budget + replay_s + TX_ALLOWANCE_S <= after_late_opening + 4 / 3
