"""Hand-built contract events for history and audit unit tests (no chain).

`RunEvents` emits what the contracts emit for each step of a run, with the fields of
contracts/src/*.sol, one block per step; tests then fold them with protocol.history. Its steps live by subject in
tests/history_events.py (accounts, config and a run's ordinary life), tests/history_dispute_events.py (disputes) and
tests/history_plant_events.py (planted faults); the scenarios shared by several test modules are here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from protocol.history.events import ChainEvent
from tests.history_events import (
    CHALLENGER,
    CONFIG,
    CREATOR,
    ETH,
    JUROR,
    SOLVER_A,
    SOLVER_B,
    SOLVER_C,
    SOLVER_D,
    TOKEN,
    TOKENS,
    VERIFICATION_CONTRACT,
    VERIFIER,
    VERIFIER_2,
    ZERO,
    theta,
    time_of,
)
from tests.history_plant_events import PlantRunEvents

__all__ = [
    "CHALLENGER",
    "CONFIG",
    "CREATOR",
    "ETH",
    "JUROR",
    "SOLVER_A",
    "SOLVER_B",
    "SOLVER_C",
    "SOLVER_D",
    "TOKEN",
    "TOKENS",
    "VERIFICATION_CONTRACT",
    "VERIFIER",
    "VERIFIER_2",
    "ZERO",
    "PlantDispute",
    "RunEvents",
    "attested_pass",
    "honest_two_rounds",
    "planted_run",
    "theta",
    "time_of",
    "with_args",
]


class RunEvents(PlantRunEvents):
    """A chain-ordered event list for one deployment, built step by step (one block per call)."""


def honest_two_rounds(events: RunEvents | None = None, unclaimed: tuple[tuple[int, str], ...] = ()) -> RunEvents:
    """Two solvers and one verifier, two rounds, everything accepted, settled and claimed (but for the
    solver shares of `unclaimed` (round, solver) pairs)."""
    ev = events or RunEvents()
    for account in (SOLVER_A, SOLVER_B):
        ev.deposit(account, 1)
    ev.deposit(VERIFIER, 2)
    ev.create()
    ev.join(SOLVER_A)
    ev.join(SOLVER_B)
    ev.register(VERIFIER)
    for r in (0, 1):
        ev.commit(r, SOLVER_A)
        ev.commit(r, SOLVER_B)
        ev.seed(r)
        ev.attest(r, SOLVER_A)
        ev.attest(r, SOLVER_B)
        ev.finalize(r, SOLVER_A)
        ev.finalize(r, SOLVER_B)
        ev.claim_theta(r)
        ev.settle(r)
        for solver in (SOLVER_A, SOLVER_B):
            if (r, solver) not in unclaimed:
                ev.claim_solver(r, solver, 400 * ETH)
            ev.claim_verifier(r, solver, 75 * ETH)
    return ev


def attested_pass(maxRounds: int = 2) -> RunEvents:
    """Round 0 of a run: SOLVER_A committed and VERIFIER attested a pass on it."""
    ev = RunEvents(maxRounds=maxRounds)
    ev.deposit(SOLVER_A, 1)
    ev.deposit(VERIFIER, 2)
    ev.create()
    ev.commit(0, SOLVER_A)
    ev.seed(0)
    ev.attest(0, SOLVER_A)
    return ev


PlantDispute = Literal["false plant", "true plant", "unresolved"]
"""How `planted_run`'s dispute of SOLVER_A's plant ends: won by the challenger (the plant disproven), lost by it,
or expired without a verdict."""


def planted_run(
    claimed: tuple[str, ...] = (SOLVER_A, SOLVER_B), dispute: PlantDispute | None = None, own_dispute: bool = False
) -> RunEvents:
    """Three rounds of a run that plants (20%, jackpot 1 ETH, penalty 3 ETH, pool 10 ETH); two seats per commitment.

    Round 1: SOLVER_D commits without an anchor old enough -- paid as usual, plants start in round 2. Round 2:
    - SOLVER_A (anchor in round 0) is planted: VERIFIER's pass on it is overturned by the reveal, VERIFIER_2's fail
      earns the jackpot and is finalized without slashing the solver; paid, its Δ not accepted;
    - SOLVER_B (anchor in round 0) reveals "not planted": accepted and paid;
    - SOLVER_C (anchor in round 0) never reveals and is reported: slashed, unpaid, its Δ not accepted;
    - SOLVER_D (anchor in round 1, too young) is unpaid and its Δ not accepted.
    The solver shares of `claimed` of round 2 are claimed (the 800 ETH bucket over the round's paid commitments: A
    and B, 400 ETH each; B alone, 800 ETH, once A's plant is disproven). After settlement the held forfeit of
    VERIFIER's lazy pass is released: into the plant pool, or back to VERIFIER when the plant was disproven.
    With `dispute`, CHALLENGER disputes SOLVER_A's plant (segment 2) after the reveals, and a juror claims its reward
    of an executed verdict (50 ETH: the round's juror bucket over one signature); a disproven plant is not paid,
    so then leave SOLVER_A out of `claimed` (claimSolverShares would revert). With `own_dispute`, SOLVER_A first
    disputes its own plant over segment 0, a segment it did train as planted, and loses (one dispute per segment:
    that uses up no one else's check).
    """
    ev = RunEvents(maxRounds=3, verifiersPerCommitment=2)
    solvers = (SOLVER_A, SOLVER_B, SOLVER_C, SOLVER_D)
    for account in solvers:
        ev.deposit(account, 1)
    for verifier in (VERIFIER, VERIFIER_2):
        ev.deposit(verifier, 2)
    ev.create()
    ev.set_plant_terms()
    for solver in solvers:
        ev.join(solver)
    for solver in (SOLVER_A, SOLVER_B, SOLVER_C):
        ev.set_anchor(solver, 0)
    ev.register(VERIFIER, 0)
    ev.register(VERIFIER_2, 1)
    ev.seed(0)
    ev.claim_theta(0, value=theta(0))
    ev.settle(0, theta_hash=theta(0))
    ev.set_anchor(SOLVER_D, 1)
    ev.commit(1, SOLVER_D)
    ev.seed(1)
    ev.attest(1, SOLVER_D)
    ev.finalize(1, SOLVER_D)
    ev.claim_theta(1)
    ev.settle(1)
    ev.claim_solver(1, SOLVER_D, 800 * ETH)
    for solver in solvers:
        ev.commit(2, solver)
    ev.seed(2)
    ev.attest(2, SOLVER_A, VERIFIER, 0)
    ev.attest(2, SOLVER_A, VERIFIER_2, 1, fail=True)
    for solver in (SOLVER_B, SOLVER_C, SOLVER_D):
        ev.attest(2, solver, VERIFIER, 0)
    ev.reveal(2, SOLVER_A, planted=True)
    ev.reveal(2, SOLVER_B, planted=False)
    ev.report_unrevealed(2, SOLVER_C)
    if own_dispute:
        own = ev.challenge_plant(2, SOLVER_A, segment=0, challenger=SOLVER_A)
        ev.decide(own, False)
        ev.execute_plant(2, SOLVER_A, own, False)
    disputed = None if dispute is None else ev.challenge_plant(2, SOLVER_A)
    if disputed is not None and dispute == "unresolved":
        ev.expire(disputed)
    elif disputed is not None:
        ev.decide(disputed, dispute == "false plant")
        ev.execute_plant(2, SOLVER_A, disputed, dispute == "false plant")
    ev.finalize(2, SOLVER_A, VERIFIER_2, 1, fail=True, planted=True)
    for solver in (SOLVER_B, SOLVER_C, SOLVER_D):
        ev.finalize(2, solver)
    ev.claim_theta(2)
    ev.settle(2)
    ev.release_forfeits(2, returned=dispute == "false plant")
    paid = 1 if dispute == "false plant" else 2
    for solver in claimed:
        ev.claim_solver(2, solver, 800 * ETH // paid)
    if disputed is not None and dispute != "unresolved":
        ev.claim_juror(2, disputed, 50 * ETH)
    return ev


def with_args(event: ChainEvent, **changes: Any) -> ChainEvent:
    return replace(event, args={**event.args, **changes})
