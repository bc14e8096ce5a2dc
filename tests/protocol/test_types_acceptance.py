"""Which commitments are accepted and paid (protocol/types.py): Verification's tally composed with Plants' pay.

The composed rules are what both the node client (`ProtocolClient.is_accepted/is_paid`, from the chain's views) and
the history fold (`Round.is_accepted/is_paid`, from events) answer, so each property here is checked against the
contracts' own spelling -- `needed != 0 && passes >= needed && faults == 0` (Verification), `_isPaid`, Plants.payOf --
written out independently in the test.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.types import (
    PlantPay,
    get_needed_seats,
    is_commitment_accepted,
    is_commitment_paid,
    is_tally_accepted,
    is_tally_paid,
)

counts = st.integers(min_value=0, max_value=8)
pays = st.sampled_from(list(PlantPay))


def _verification_accepts(passes: int, faults: int, needed: int) -> bool:
    """Verification.sol's acceptance, spelled as the contract spells it."""
    return needed != 0 and passes >= needed and faults == 0


@given(counts, counts, counts, pays)
def test_is_commitment_accepted_is_the_tally_unless_plants_say_unpaid(passes, faults, needed, pay):
    accepted = is_commitment_accepted(passes, faults, needed, pay=pay)
    assert is_tally_accepted(passes, faults, needed) == _verification_accepts(passes, faults, needed)
    if pay == PlantPay.UNPAID:
        assert not accepted, "an unpaid commitment's Δ never enters θ_(r+1), whatever its seats say"
    else:
        assert accepted == _verification_accepts(passes, faults, needed)


@given(counts, counts, counts, st.booleans(), st.booleans(), st.booleans(), pays)
def test_is_commitment_paid_follows_is_paid_then_plants(passes, faults, needed, attested, planted, unpaid, pay):
    paid = is_commitment_paid(passes, faults, needed, attested, planted, unpaid, pay=pay)
    counted = is_tally_paid(passes, faults, needed, attested, planted, unpaid)
    # Verification._isPaid: !unpaid && (planted ? attested : accepted)
    assert counted == (not unpaid and (attested if planted else _verification_accepts(passes, faults, needed)))
    assert paid == (counted and pay != PlantPay.UNPAID)
    if paid:
        assert not unpaid and pay != PlantPay.UNPAID
    if not planted and not unpaid and pay != PlantPay.UNPAID:
        assert paid == is_commitment_accepted(passes, faults, needed, pay=pay), "unplanted: paid iff accepted"


@given(counts, counts, st.integers(min_value=1, max_value=8))
def test_a_planted_attested_commitment_is_paid_whatever_its_seats(passes, faults, needed):
    """The reveal overturned its passes and left its fails standing: the planting solver is paid as if accepted."""
    assert is_commitment_paid(passes, faults, needed, True, True, False, pay=PlantPay.PLANTED)
    assert not is_commitment_paid(passes, faults, needed, False, True, False, pay=PlantPay.PLANTED), "never attested"


@pytest.mark.parametrize(
    ("passes", "faults", "pay", "accepted", "paid"),
    [
        (2, 0, PlantPay.NORMAL, True, True),  # a strict majority of 3 seats, no fault
        (1, 0, PlantPay.NORMAL, False, False),  # a minority: the unattested seats count against it
        (3, 1, PlantPay.NORMAL, False, False),  # a standing fault blocks whatever the passes
        (3, 0, PlantPay.UNPAID, False, False),  # the reveal was missed (or no anchor, or disproven)
    ],
)
def test_three_seats_examples(passes, faults, pay, accepted, paid):
    needed = get_needed_seats(3, 5)
    assert needed == 2
    assert is_commitment_accepted(passes, faults, needed, pay=pay) == accepted
    assert is_commitment_paid(passes, faults, needed, True, False, False, pay=pay) == paid


def test_a_missed_reveal_nobody_reported_is_counted_but_never_paid():
    """Plants marks nothing until the report, so `_isPaid` still counts it in paidCommitments; payOf says UNPAID."""
    assert is_tally_paid(2, 0, 2, True, False, False)
    assert not is_commitment_paid(2, 0, 2, True, False, False, pay=PlantPay.UNPAID)


def test_never_opened_status_is_never_accepted():
    """A status never opened has needed == 0: no passes can accept it."""
    assert not is_commitment_accepted(0, 0, 0, pay=PlantPay.NORMAL)
    assert not is_commitment_paid(5, 0, 0, True, False, False, pay=PlantPay.NORMAL)
