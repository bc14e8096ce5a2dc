"""What `gradledger unbond`, `withdraw` and `leave` may ask for (protocol/stake_actions.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import ConfigError
from protocol.stake_actions import StakeState, get_exit_step, get_unbond_amount, get_withdrawable_roles

WEI = st.integers(0, 10**24)


@given(bonded=WEI, reserved=WEI, requested=st.none() | st.integers(-(10**3), 10**24))
def test_get_unbond_amount_never_exceeds_free_stake_succeeds(bonded, reserved, requested):
    state = StakeState(bonded, 0, 0, reserved)
    try:
        amount = get_unbond_amount("solver", state, requested)
    except ConfigError as exc:
        assert "reserved" in str(exc) or "more than 0" in str(exc)
        return
    assert 0 < amount <= state.free_wei
    assert amount == (state.free_wei if requested is None else requested)


def test_get_unbond_amount_all_reserved_names_leave_reverts():
    with pytest.raises(ConfigError, match="gradledger leave"):
        get_unbond_amount("verifier", StakeState(10, 0, 0, 10), None)


def test_get_withdrawable_roles_only_after_release_succeeds():
    states = {"solver": StakeState(0, 5, 100, 0), "verifier": StakeState(7, 0, 0, 0)}
    assert get_withdrawable_roles(states, 99) == []
    assert get_withdrawable_roles(states, 100) == ["solver"]


@pytest.mark.parametrize(
    ("active", "reserved", "exit_at", "now", "finished", "step"),
    [
        (True, True, 0, 50, False, "deregister"),
        (False, True, 100, 50, False, "wait"),
        (False, True, 100, 100, False, "release"),
        (False, False, 0, 50, False, "none"),
        (True, True, 0, 50, True, "deregister"),
        (False, True, 100, 50, True, "release"),  # a finished run draws no seat: no exit delay to wait out
        (False, False, 0, 50, True, "none"),
    ],
)
def test_get_exit_step_succeeds(active, reserved, exit_at, now, finished, step):
    assert get_exit_step(active, reserved, exit_at, now, finished) == step
