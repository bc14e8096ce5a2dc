"""protocol/windows.py: the windows a run needs on a measured machine, and a late node's choice to sit out."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import ConfigError
from protocol.windows import (
    OPEN_ALLOWANCE_S,
    PACE_SAFETY,
    TX_ALLOWANCE_S,
    TrainingPace,
    WindowTooShortError,
    compute_fitting_windows,
    compute_round_training_ms,
    compute_seats_per_verifier,
    compute_window_needs,
    get_challenge_window_problem,
    get_window_shortfalls,
    is_round_trainable_in_time,
    verify_windows_fit,
)

PACE = TrainingPace(step_ms=500, checkpoint_ms=50, load_ms=100)
paces = st.builds(
    TrainingPace,
    step_ms=st.integers(1, 60_000),
    checkpoint_ms=st.integers(1, 60_000),
    load_ms=st.integers(1, 60_000),
)


def test_compute_window_needs_counts_steps_checkpoints_and_replays():
    needs = compute_window_needs(PACE, inner_steps=20, steps_per_segment=5, samples=2)
    assert needs.round_training_ms == 20 * 500 + 5 * 50  # H steps and H/k + 1 checkpoints
    assert needs.seat_replay_ms == 2 * (100 + 5 * 500 + 50)  # per sample: load, k steps, the end checkpoint
    assert needs.commit_s == -(-PACE_SAFETY * 10_250 // 1000) + TX_ALLOWANCE_S
    assert needs.attest_s == OPEN_ALLOWANCE_S + -(-PACE_SAFETY * 5_300 // 1000) + TX_ALLOWANCE_S


@given(paces, st.integers(1, 2_000), st.integers(1, 50), st.integers(1, 8))
def test_compute_window_needs_is_monotone_and_holds_the_work(pace, inner_steps, k, samples):
    needs = compute_window_needs(pace, inner_steps, k, samples)
    assert needs.commit_s * 1000 >= PACE_SAFETY * needs.round_training_ms + TX_ALLOWANCE_S * 1000
    assert needs.attest_s >= 2 * OPEN_ALLOWANCE_S  # open_end = commit_end + attest / 2 must hold the opening
    slower = TrainingPace(pace.step_ms + 1, pace.checkpoint_ms, pace.load_ms)
    assert compute_window_needs(slower, inner_steps, k, samples).commit_s >= needs.commit_s
    assert compute_window_needs(pace, inner_steps + 1, k, samples).commit_s >= needs.commit_s
    assert compute_window_needs(pace, inner_steps, k, samples + 1).attest_s >= needs.attest_s
    assert get_window_shortfalls(needs, needs.commit_s, needs.attest_s) == ()


def test_verify_windows_fit_names_each_short_window_and_the_flag():
    needs = compute_window_needs(PACE, 20, 5, 2)
    verify_windows_fit(needs, needs.commit_s, needs.attest_s)
    with pytest.raises(WindowTooShortError) as caught:
        verify_windows_fit(needs, needs.commit_s - 1, needs.attest_s)
    message = str(caught.value)
    assert f"--commit-window {needs.commit_s}" in message and "attest" not in message.split("(or --force")[0]
    assert "--force" in message
    with pytest.raises(WindowTooShortError, match=f"--attest-window {needs.attest_s}"):
        verify_windows_fit(needs, needs.commit_s, 1)
    assert isinstance(caught.value, ConfigError)


def test_compute_window_needs_refuses_non_positive_sizes():
    with pytest.raises(ConfigError, match="must be positive"):
        compute_window_needs(PACE, 0, 5, 2)


@given(st.integers(-10, 3_600), st.integers(0, 3_600_000))
def test_is_round_trainable_in_time_needs_the_training_and_a_commit(seconds_left, training_ms):
    trainable = is_round_trainable_in_time(seconds_left, training_ms)
    if training_ms == 0:  # not measured: try while the window is open
        assert trainable == (seconds_left > 0)
    else:
        assert trainable == (seconds_left * 1000 > training_ms + TX_ALLOWANCE_S * 1000)


def test_compute_round_training_ms_counts_the_start_checkpoint():
    assert compute_round_training_ms(TrainingPace(1, 1000, 1), 10, 5) == 10 + 3 * 1000


@given(paces, st.integers(1, 200), st.integers(1, 200), st.integers(1, 200), st.integers(1, 12))
def test_compute_fitting_windows_never_shortens_and_always_fits(pace, commit, attest, challenge, block_seconds):
    needs = compute_window_needs(pace, inner_steps=20, steps_per_segment=5, samples=2)
    c, a, ch = compute_fitting_windows(needs, commit, attest, challenge, block_seconds)
    assert (c, a, ch) >= (commit, attest, challenge) and c >= commit and a >= attest and ch >= challenge
    assert get_window_shortfalls(needs, c, a) == ()  # the demo's windows hold the measured work
    assert get_challenge_window_problem(a, ch, block_seconds) is None  # and createRun accepts the challenge window
    assert ch >= needs.attest_s  # a challenger replays a late attestation as long as a verifier's seat
    if commit >= needs.commit_s and attest >= needs.attest_s:
        assert (c, a) == (commit, attest)  # windows already long enough are kept


def test_compute_fitting_windows_lengthens_the_demo_windows_on_a_slow_machine():
    slow = TrainingPace(step_ms=900, checkpoint_ms=80, load_ms=200)  # issue 39's busy machine: a round took ~19 s
    needs = compute_window_needs(slow, inner_steps=20, steps_per_segment=5, samples=2)
    commit, attest, challenge = compute_fitting_windows(needs, 20, 12, 10, 1)
    assert commit == needs.commit_s > 20 and attest == needs.attest_s > 12 and challenge >= attest // 2 + 2


@pytest.mark.parametrize(
    ("solvers", "verifiers", "per_commitment", "seats"),
    [(3, 2, 1, 2), (4, 2, 2, 4), (1, 5, 1, 1), (16, 4, 3, 12), (3, 1, 2, 3)],
)
def test_compute_seats_per_verifier_is_the_busiest_verifiers_load(solvers, verifiers, per_commitment, seats):
    assert compute_seats_per_verifier(solvers, verifiers, per_commitment) == seats


def test_compute_seats_per_verifier_refuses_an_empty_round():
    with pytest.raises(ConfigError, match="must be positive"):
        compute_seats_per_verifier(3, 0, 1)
