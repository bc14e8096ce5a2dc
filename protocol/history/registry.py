"""The run itself in a run's history: RunRegistry's and Verification's events.

Handlers for the run's creation, rounds, solver commitments, θ_(r+1) claims and settlement
(RunRegistry), and for verifier registration, seeds, attestations, their finalization or resolution
and the solver and verifier share claims (Verification). Each is a plain function
`handler(state, event, args)` over `protocol.history.state.FoldState`; `HANDLERS` maps event names to
them for `protocol.history.fold`. Every commitment records the fault keys a slash for it would carry, as the
contracts compute them: its own (FAULT_SOLVER: a proven fault, unopened, an unrevealed or disproven plant) and
each seat's (FAULT_ATTESTATION: a wrong attestation, a pass on a planted commitment, an abstention), known from the
commit on because the contracts slash before they emit the event that says why.
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from protocol.history.events import (
    ATTESTATION_STATES,
    CLAIM_STATUSES,
    EventLike,
    compute_attestation_fault_key,
    compute_solver_fault_key,
    decode_run_terms,
    get_tx_hash,
    to_address,
    to_hash_hex,
)
from protocol.history.records import Abstention, Attestation, Commitment, RevenueFlow, Seed, ShareClaim, ThetaClaim
from protocol.history.state import FoldState, Handler, RoundBuilder, RunCreation

# RunRegistry ----------------------------------------------------------------------------------


def on_run_created(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if a["runId"] != s.run_id:
        return
    s.created = RunCreation(
        creator=to_address(a["creator"]),
        token=to_address(a["shareToken"]),
        pool=int(a["rewardPool"]),
        terms=decode_run_terms(a["config"]),
        block=e.block_number,
    )
    s.role(s.created.creator, "creator")
    s.revenue.append(
        RevenueFlow("reward pool", s.created.pool, s.created.creator, None, e.block_number, s.time(e.block_number))
    )


def on_round_started(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        index = int(a["round"])
        s.start_round(RoundBuilder(index, int(a["start"]), e.block_number, to_hash_hex(a["thetaHash"])))


def on_solver_joined(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        s.role(to_address(a["solver"]), "solver")


def on_committed(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if not s.ours(a):
        return
    index, solver = int(a["round"]), to_address(a["solver"])
    s.round(index).commitments.append(
        Commitment(
            index,
            solver,
            to_hash_hex(a["root"]),
            to_hash_hex(a["deltaHash"]),
            int(a["tokens"]),
            int(a["numSegments"]),
            e.block_number,
            s.time(e.block_number),
        )
    )
    s.role(solver, "solver")
    s.fault_keys[compute_solver_fault_key(s.run_id, index, solver)] = ("solver fault", index, solver, None)
    # reportAbstention slashes a seat's verifier before any attestation event names the seat
    for slot in range(s.created.terms.verifiers_per_commitment if s.created is not None else 0):
        key = compute_attestation_fault_key(s.run_id, index, solver, slot)
        s.fault_keys.setdefault(key, ("wrong attestation", index, solver, slot))


def _set_opening(s: FoldState, a: Mapping[str, Any], opening: str) -> None:
    commitments = s.round(int(a["round"])).commitments
    solver = to_address(a["solver"])
    for i, c in enumerate(commitments):
        if c.solver == solver:
            commitments[i] = replace(c, opening=opening)


def on_commitment_opened(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        _set_opening(s, a, "opened")


def on_commitment_unopened(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        _set_opening(s, a, "unopened" if a["slashed"] else "void")


def on_theta_claimed(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if not s.ours(a):
        return
    index, claimer = int(a["round"]), to_address(a["claimer"])
    s.round(index).claims[int(a["nonce"])] = ThetaClaim(
        index,
        int(a["nonce"]),
        claimer,
        to_hash_hex(a["thetaHash"]),
        int(a["bond"]),
        e.block_number,
        s.time(e.block_number),
        "posted",
    )
    s.role(claimer, "claimer")


def on_claim_resolved(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if not s.ours(a):
        return
    rnd, nonce = s.round(int(a["round"])), int(a["nonce"])
    status = CLAIM_STATUSES[int(a["status"])]
    if nonce in rnd.claims:
        rnd.claims[nonce] = replace(rnd.claims[nonce], status="upheld" if status == "upheld" else "rejected")


def on_round_settled(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if not s.ours(a):
        return
    rnd = s.round(int(a["round"]))
    rnd.settled, rnd.next_theta_hash = True, to_hash_hex(a["thetaHash"])
    rnd.settled_block, rnd.settled_time, rnd.claimer = e.block_number, s.time(e.block_number), to_address(a["claimer"])
    nonce = int(a["nonce"])
    if nonce in rnd.claims:
        rnd.claims[nonce] = replace(rnd.claims[nonce], status="settled")


def on_run_finished(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        s.finished = True


def on_claim_bond_withdrawn(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if not s.ours(a):
        return
    rnd = s.round(int(a["round"]))
    for nonce, claim in rnd.claims.items():
        if claim.status == "settled":
            rnd.claims[nonce] = replace(claim, bond_withdrawn=True)


# Verification ---------------------------------------------------------------------------------


def on_verifier_registered(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        s.role(to_address(a["verifier"]), "verifier")


def on_seed_drawn(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        s.round(int(a["round"])).seed = Seed(
            to_hash_hex(a["seedBase"]),
            int(a["blockNumber"]),
            int(a["verifierCount"]),
            e.block_number,
            s.time(e.block_number),
        )


def _attested(s: FoldState, e: EventLike, a: Mapping[str, Any], is_fail: bool) -> None:
    index, solver, slot = int(a["round"]), to_address(a["solver"]), int(a["slot"])
    verifier = to_address(a["verifier"])
    sample = int(a["sampleIndex"]) if is_fail else None
    segment = int(a["segmentIndex"]) if is_fail else None
    s.round(index).attestations[(solver, slot)] = Attestation(
        index,
        solver,
        slot,
        verifier,
        is_fail,
        sample,
        segment,
        e.block_number,
        s.time(e.block_number),
        "attested",
    )
    s.role(verifier, "verifier")
    key = compute_attestation_fault_key(s.run_id, index, solver, slot)
    s.fault_keys[key] = ("wrong attestation", index, solver, slot)


def on_pass_attested(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        _attested(s, e, a, False)


def on_fail_attested(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        _attested(s, e, a, True)


def on_attestation_finalized(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        s.set_attestation(
            int(a["round"]),
            to_address(a["solver"]),
            int(a["slot"]),
            state="finalized",
            ended_block=e.block_number,
            bond_returned=int(a["bond"]),
        )


def on_attestation_resolved(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if not s.ours(a):
        return
    state = ATTESTATION_STATES[int(a["state"])]
    bond = int(a["bond"])
    changes = {"bond_forfeited": bond} if state == "overturned" else {"bond_returned": bond}
    s.set_attestation(
        int(a["round"]), to_address(a["solver"]), int(a["slot"]), state=state, ended_block=e.block_number, **changes
    )


def on_verifier_shares_claimed(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        solver, slot = to_address(a["solver"]), int(a["slot"])
        s.claims.append(
            ShareClaim(
                int(a["round"]),
                "verifier",
                to_address(a["verifier"]),
                int(a["shares"]),
                f"attestation {solver} slot {slot}",
                e.block_number,
                get_tx_hash(e),
                solver=solver,
                slot=slot,
            )
        )


def on_solver_shares_claimed(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        solver = to_address(a["solver"])
        s.claims.append(
            ShareClaim(
                int(a["round"]),
                "solver",
                solver,
                int(a["shares"]),
                f"commitment of {solver}",
                e.block_number,
                get_tx_hash(e),
                solver=solver,
            )
        )


def on_abstention_reported(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    """Verification.reportAbstention: the seat's verifier did not attest the opened commitment by attestEnd; it was
    slashed `taken` (FAULT_ATTESTATION of the seat, StakeSlashed earlier in the transaction), all to the reward pool
    (PoolFunded follows)."""
    if not s.ours(a):
        return
    index, solver, slot = int(a["round"]), to_address(a["solver"]), int(a["slot"])
    verifier, reporter = to_address(a["verifier"]), to_address(a["reporter"])
    s.round(index).abstentions.append(
        Abstention(index, solver, slot, verifier, reporter, int(a["taken"]), e.block_number, s.time(e.block_number))
    )
    s.name_fault(compute_attestation_fault_key(s.run_id, index, solver, slot), ("abstention", index, solver, slot), e)
    s.role(reporter, "reporter")


HANDLERS: dict[str, Handler] = {
    # RunRegistry
    "RunCreated": on_run_created,
    "RoundStarted": on_round_started,
    "SolverJoined": on_solver_joined,
    "Committed": on_committed,
    "CommitmentOpened": on_commitment_opened,
    "CommitmentUnopened": on_commitment_unopened,
    "ThetaClaimed": on_theta_claimed,
    "ClaimResolved": on_claim_resolved,
    "RoundSettled": on_round_settled,
    "RunFinished": on_run_finished,
    "ClaimBondWithdrawn": on_claim_bond_withdrawn,
    # Verification
    "VerifierRegistered": on_verifier_registered,
    "SeedDrawn": on_seed_drawn,
    "PassAttested": on_pass_attested,
    "FailAttested": on_fail_attested,
    "AttestationFinalized": on_attestation_finalized,
    "AttestationResolved": on_attestation_resolved,
    "VerifierSharesClaimed": on_verifier_shares_claimed,
    "SolverSharesClaimed": on_solver_shares_claimed,
    "AbstentionReported": on_abstention_reported,
}
