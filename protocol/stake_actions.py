"""An operator's stake in one role and what may be done with it now (StakeManager's rules, read side).

StakeManager keeps, per (account, role), bonded stake (of which `reserved` backs open obligations: a run joined, a
verifier or juror registration) and unbonding stake that becomes withdrawable `unbondingDelay` seconds after the last
`requestUnbond`. These functions decide what `gradledger unbond` and `withdraw` ask for, so that a request the
contract would refuse is refused here first, with what to do instead, before any transaction.

# INVARIANT: `get_unbond_amount` never asks for more than the free bonded stake (bonded - reserved): StakeManager
refuses that, and an operator told "reverted" learns nothing about which run holds the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.errors import ConfigError
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER

ROLE_BY_NAME = {"solver": ROLE_SOLVER, "verifier": ROLE_VERIFIER}
"""The stake roles by the name the CLI takes (`--role`); jurors stake in the verifier role."""


@dataclass(frozen=True)
class StakeState:
    """StakeManager.stakeOf of one (account, role), in wei; `release_time` in chain seconds (0: nothing unbonding)."""

    bonded_wei: int
    unbonding_wei: int
    release_time: int
    reserved_wei: int

    @property
    def free_wei(self) -> int:
        """Bonded stake no obligation reserves: what may start unbonding (or back a new join or registration)."""
        return max(self.bonded_wei - self.reserved_wei, 0)

    def is_withdrawable(self, now: int) -> bool:
        """Whether unbonding stake has waited out the delay at chain time `now`."""
        return self.unbonding_wei > 0 and now >= self.release_time


def get_unbond_amount(role: str, state: StakeState, requested_wei: int | None) -> int:
    """The wei to start unbonding: `requested_wei`, or all free stake when None. Refuses nothing-to-do and more than
    is free, naming what holds the rest."""
    if requested_wei is not None and requested_wei <= 0:
        raise ConfigError(f"--amount must be more than 0 ETH (or leave it out to unbond all free {role} stake)")
    amount = state.free_wei if requested_wei is None else requested_wei
    if amount == 0:
        raise ConfigError(
            f"no free {role} stake to unbond: {state.bonded_wei} wei bonded, {state.reserved_wei} wei reserved by runs "
            f"or registrations; leave them first (`gradledger leave --run N`, `gradledger leave --juror`)"
        )
    if amount > state.free_wei:
        raise ConfigError(
            f"cannot unbond {amount} wei of {role} stake: only {state.free_wei} wei is free ({state.bonded_wei} wei "
            f"bonded, {state.reserved_wei} wei reserved by runs or registrations); leave them first or ask for less"
        )
    return amount


def get_withdrawable_roles(states: dict[str, StakeState], now: int) -> list[str]:
    """The roles whose unbonding stake may be withdrawn at chain time `now`."""
    return [role for role, state in states.items() if state.is_withdrawable(now)]


def get_exit_step(active: bool, reserved: bool, exit_at: int, now: int, run_finished: bool = False) -> str:
    """The next step out of a verifier or juror registration: "deregister" (still on the list), "release" (off the
    list and its exit delay over: frees the reservation), "wait" (off the list, reserved until `exit_at`) or "none"
    (nothing held). Two steps because seats drawn before leaving stay the leaver's until the exit delay ends; of a
    finished run (`run_finished`) no seat is drawn again, so VerifierRegistry releases at once: leaving it is one
    step (deregister releases in the same call) and a pending exit is released without waiting."""
    if active:
        return "deregister"
    if not reserved:
        return "none"
    return "release" if now >= exit_at or run_finished else "wait"
