"""whistleblower/decide.py: which attestations to challenge, over which draw, and the selection draw."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.hashing import keccak256
from whistleblower.decide import (
    ChallengePlan,
    can_challenge_attestation,
    decide_attestation_challenge,
    is_claim_wrong,
    is_done,
    is_selected,
)

SOLVER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
WATCHER = "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955"


def test_right_attestations_are_left_alone():
    assert decide_attestation_challenge(False, True, -1, -1, "ok") is None
    assert decide_attestation_challenge(True, True, 1, 1, "bad") is None


def test_a_pass_on_a_withheld_document_is_challenged():
    # Every draw of an opened commitment is provable: an unserved document makes a pass wrong, not unprovable.
    plan = decide_attestation_challenge(False, False, -1, 0, "commitment document unavailable")
    assert plan is not None and plan.sample_index == 0


def test_a_wrong_pass_is_challenged_over_the_faulty_draw():
    assert decide_attestation_challenge(False, False, -1, 1, "replay differs") == ChallengePlan(
        1, "pass attestation on faulty work: replay differs"
    )
    # A document-level fault names no draw: draw 0 (the jury re-checks the whole commitment).
    assert decide_attestation_challenge(False, False, -1, -1, "delta").sample_index == 0


def test_a_wrong_fail_is_challenged_over_the_draw_it_named():
    plan = decide_attestation_challenge(True, False, 3, 0, "replayed bit-identically")
    assert plan.sample_index == 3 and "honest work" in plan.reason


def test_windows_claims_and_done():
    assert can_challenge_attestation(10, 2, 2, 11) and not can_challenge_attestation(11, 2, 2, 11)
    assert not can_challenge_attestation(10, 1, 2, 11)
    assert is_claim_wrong(keccak256(b"a"), keccak256(b"b")) and not is_claim_wrong(keccak256(b"a"), keccak256(b"a"))
    assert is_done(True, 0, 0) and not is_done(True, 1, 0) and not is_done(True, 0, 5) and not is_done(False, 0, 0)


def test_selection_edges_and_determinism():
    block = keccak256(b"block")
    assert is_selected(block, 1, 0, SOLVER, 0, WATCHER, 1.0)
    assert not is_selected(block, 1, 0, SOLVER, 0, WATCHER, 0.0)
    first = is_selected(block, 1, 0, SOLVER, 0, WATCHER, 0.5)
    assert all(is_selected(block, 1, 0, SOLVER, 0, WATCHER, 0.5) == first for _ in range(3))


@settings(max_examples=30, deadline=None)
@given(fraction=st.sampled_from([Fraction(1, 10), Fraction(1, 2), Fraction(9, 10)]), salt=st.integers(0, 10**6))
def test_selection_rate_matches_the_fraction(fraction, salt):
    n = 400
    chosen = sum(
        is_selected(keccak256(f"{salt}:{i}".encode()), 1, i, SOLVER, i % 4, WATCHER, fraction) for i in range(n)
    )
    # 400 Bernoulli draws: within 5 standard deviations of the mean.
    sd = (n * fraction * (1 - fraction)) ** 0.5
    assert abs(chosen - n * fraction) <= 5 * sd


def test_choose_plant_check_is_a_pure_draw_over_the_opened_draws():
    """Every whistleblower re-derives its own pick from the reveal's block: different watchers spread over the draws."""
    from protocol.errors import GradledgerError
    from whistleblower.decide import choose_plant_check

    block = keccak256(b"reveal block")
    solver = "0x" + "11" * 20
    picks = {choose_plant_check(block, 1, 2, solver, "0x" + f"{w:040x}", 4) for w in range(1, 40)}
    assert picks == {0, 1, 2, 3}
    assert choose_plant_check(block, 1, 2, solver, "0x" + "22" * 20, 4) == choose_plant_check(
        block, 1, 2, solver, "0x" + "22" * 20, 4
    )
    with pytest.raises(GradledgerError):
        choose_plant_check(block, 1, 2, solver, "0x" + "22" * 20, 0)


def test_order_plant_checks_covers_every_distinct_opened_segment_from_the_draw():
    """Plant disputes are per segment (issue 36, finding 2): a whistleblower replays every distinct opened segment,
    starting at its own draw, and disputes the first that is not the planted training."""
    from whistleblower.decide import choose_plant_check, order_plant_checks

    block, solver = keccak256(b"reveal block"), "0x" + "11" * 20
    segments = [5, 2, 5, 7, 2]  # seat-major draws: the same segment may be drawn by several seats
    for w in range(1, 20):
        watcher = "0x" + f"{w:040x}"
        order = order_plant_checks(block, 1, 2, solver, watcher, segments)
        assert sorted(order) == [2, 5, 7]
        assert order[0] == [5, 2, 7][choose_plant_check(block, 1, 2, solver, watcher, 3)]
        assert order == order_plant_checks(block, 1, 2, solver, watcher, segments)  # pure
