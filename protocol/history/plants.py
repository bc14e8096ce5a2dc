"""Planted faults in a run's history: the Plants contract's events and Verification's PlantApplied.

Handlers for the run's plant terms and pool, each solver's chain anchor, the reveals made inside a round's reveal
window (and which said "planted"), the plants reported unrevealed, the plants a jury disproved (a plant dispute
won by its challenger: the work unpaid; the dispute itself is folded by `protocol.history.disputes`), the jackpots
of the fails on planted commitments, the plant's effect on the seats (PlantApplied: every pass overturned, every
fail left standing) and the forfeits of the overturned passes (bond + penalty), held by Plants until the round
settles and then released into the plant pool, or back to the verifier when a jury disproved the plant. Each is a
plain function `handler(state, event, args)` over `protocol.history.state.FoldState`; `HANDLERS` maps event names
to them for `protocol.history.fold`, which also calls `freeze_plants`, `is_planting_round` and `with_eligibility`
when it freezes the rounds: whether a round's pay follows the plant rules depends on the run's terms and each solver's
anchor, both known only once folded.
The rules are docs/planted-faults.md's; `rounds.Round` applies them (pay, accepted, paid). Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from protocol import planting
from protocol.history.events import EventLike, HistoryError, compute_solver_fault_key, to_address, to_hash_hex
from protocol.history.records import Commitment, PlantAnchor, PlantHistory
from protocol.history.state import FoldState, Handler
from protocol.types import PlantTerms

# Plants ---------------------------------------------------------------------------------------


def on_plant_terms_set(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    """The terms, and the pool after `funded` (the call's value) joined what fundPool may have added before."""
    if s.ours(a):
        s.plant_terms = PlantTerms(int(a["rateBps"]), int(a["jackpot"]), int(a["penalty"]))
        s.plant_pool = int(a["pool"])
        s.plant_seed_block = int(a["seedBlock"])


def on_run_seed_drawn(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    """Plants.drawRunSeed: round 0's previous seed base, for a run whose terms were set before the start."""
    if s.ours(a):
        s.run_seed_base = to_hash_hex(a["seedBase"])


def on_plant_pool_funded(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    """PlantPoolFunded: the event carries the pool after the change."""
    if s.ours(a):
        s.plant_pool = int(a["pool"])


def on_plant_forfeit_held(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    """Plants.onPlantedPass, in the planted reveal's transaction: the pass's bond and the penalty slashed from its
    verifier are held for the seat until the round settles (not in the pool yet)."""
    if s.ours(a):
        s.set_attestation(int(a["round"]), to_address(a["solver"]), int(a["slot"]), forfeit=int(a["amount"]))


def on_plant_forfeit_released(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    """Plants.releaseForfeit after settlement: into the pool, or credited back to the verifier (the plant was
    disproven, so the pass was right)."""
    if not s.ours(a):
        return
    release = "returned" if a["returned"] else "pool"
    s.set_attestation(
        int(a["round"]), to_address(a["solver"]), int(a["slot"]), forfeit_release=release,
        forfeit_block=e.block_number,
    )  # fmt: skip
    s.plant_pool = int(a["pool"])


def on_plant_anchor_set(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        solver = to_address(a["solver"])
        s.anchors[solver] = PlantAnchor(
            solver, to_hash_hex(a["anchor"]), int(a["round"]), e.block_number, early=bool(a["early"])
        )


def _set_commitment(s: FoldState, index: int, solver: str, **changes: Any) -> bool:
    """Update `solver`'s commitment of round `index`; False when it has none (a reveal needs no commitment)."""
    commitments = s.round(index).commitments
    for i, c in enumerate(commitments):
        if c.solver == solver:
            commitments[i] = replace(c, **changes)
            return True
    return False


def on_plant_revealed(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    """A reveal inside the round's window (Plants emits nothing for an older secret, which pays nothing)."""
    if not s.ours(a):
        return
    index, solver, planted = int(a["round"]), to_address(a["solver"]), bool(a["planted"])
    _set_commitment(s, index, solver, revealed=True, planted=planted)
    # the jackpots of this plant follow in the same transaction and name only the verifier
    s.applying_plant = (index, solver) if planted else None


def on_unrevealed_slashed(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if not s.ours(a):
        return
    index, solver = int(a["round"]), to_address(a["solver"])
    if not _set_commitment(s, index, solver, unrevealed_reported=True):
        raise HistoryError(f"run {s.run_id} round {index}: unrevealed plant of {solver} reported without a commitment")
    s.plant_pool += int(a["taken"])  # the slash proceeds join the pool (the event carries no pool)
    # slashed under the commitment's own key (FAULT_SOLVER), just before this event (none if the key was used)
    s.name_fault(compute_solver_fault_key(s.run_id, index, solver), ("unrevealed plant", index, solver, None), e)
    s.role(to_address(a["reporter"]), "reporter")


def on_plant_disproven(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    """Plants.onFalsePlant, inside the execution of a plant dispute the challenger won: the commitment is unpaid from
    now on (the solver's slash, FAULT_SOLVER at solverMinStake, and DisputeExecuted follow in the transaction)."""
    if not s.ours(a):
        return
    index, solver = int(a["round"]), to_address(a["solver"])
    if not any(d.kind == "plant" and d.round == index and d.solver == solver for d in s.disputes.values()):
        raise HistoryError(f"run {s.run_id} round {index}: plant of {solver} disproven without a plant dispute")
    if not _set_commitment(s, index, solver, disproven=True):
        raise HistoryError(f"run {s.run_id} round {index}: plant of {solver} disproven without a commitment")


def on_jackpot_paid(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    """A fail on the plant being applied earned the jackpot (or what was left of the pool)."""
    if not s.ours(a):
        return
    s.plant_pool = int(a["pool"])
    verifier = to_address(a["verifier"])
    if s.applying_plant is None:
        raise HistoryError(f"run {s.run_id}: jackpot to {verifier} outside a planted reveal")
    index, solver = s.applying_plant
    rnd = s.round(index)
    seat = next((k for k, x in rnd.attestations.items() if x.solver == solver and x.verifier == verifier), None)
    if seat is None or not rnd.attestations[seat].is_fail:
        raise HistoryError(f"run {s.run_id} round {index}: jackpot to {verifier}, which holds no fail on {solver}")
    s.set_attestation(index, solver, seat[1], jackpot=rnd.attestations[seat].jackpot + int(a["amount"]))


# Verification ---------------------------------------------------------------------------------


def on_plant_applied(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    """Verification._markPlanted: every attested pass overturned (its bond forfeited to Plants, which holds it with
    the penalty: PlantForfeitHeld; no AttestationResolved is emitted), every attested fail left standing; both marked
    planted."""
    if not s.ours(a) or s.created is None:
        return
    index, solver = int(a["round"]), to_address(a["solver"])
    bond = s.created.terms.attestation_bond
    for (seat_solver, slot), x in list(s.round(index).attestations.items()):
        if seat_solver != solver or x.state != "attested":
            continue
        if x.is_fail:
            s.set_attestation(index, solver, slot, planted=True)
        else:
            s.set_attestation(
                index, solver, slot, planted=True, state="overturned", ended_block=e.block_number, bond_forfeited=bond
            )


HANDLERS: dict[str, Handler] = {
    # Plants
    "PlantTermsSet": on_plant_terms_set,
    "PlantPoolFunded": on_plant_pool_funded,
    "PlantForfeitHeld": on_plant_forfeit_held,
    "PlantForfeitReleased": on_plant_forfeit_released,
    "PlantAnchorSet": on_plant_anchor_set,
    "RunSeedDrawn": on_run_seed_drawn,
    "PlantRevealed": on_plant_revealed,
    "UnrevealedSlashed": on_unrevealed_slashed,
    "PlantDisproven": on_plant_disproven,
    "JackpotPaid": on_jackpot_paid,
    # Verification
    "PlantApplied": on_plant_applied,
}


# Freezing -------------------------------------------------------------------------------------


def freeze_plants(s: FoldState) -> PlantHistory:
    return PlantHistory(s.plant_terms, s.plant_pool, tuple(s.anchors.values()), s.plant_seed_block, s.run_seed_base)


def is_planting_round(s: FoldState, index: int) -> bool:
    """Plants.payOf's first test (`protocol.planting.is_planting_round`)."""
    rate = 0 if s.plant_terms is None else s.plant_terms.rate_bps
    return planting.is_planting_round(rate, index, from_round_zero=s.plant_seed_block != 0)


def with_eligibility(s: FoldState, index: int, commitments: Iterable[Commitment]) -> tuple[Commitment, ...]:
    """The round's commitments with `plant_eligible` set as Plants._isEligible (`protocol.planting.is_plant_eligible`
    in a planting round; a commitment without an eligible anchor there is unpaid)."""
    out = []
    for c in commitments:
        anchor = s.anchors.get(c.solver)
        eligible = (
            is_planting_round(s, index)
            and anchor is not None
            and planting.is_plant_eligible(
                anchor.round, index, early_anchor=anchor.early, from_round_zero=s.plant_seed_block != 0
            )
        )
        out.append(replace(c, plant_eligible=eligible))
    return tuple(out)
