"""The audit's payout checks: shares minted for verified work, stake slashed for proven faults.

Pure functions of the run's history, like every check (auditor/checks.py holds the others and
the rules they follow). The formulas are the contracts' (contracts/src):
- shares per settled round (Verification.claimSolverShares / claimVerifierShares,
  Disputes.claimJurorReward): solver = floor(floor(S * solverBps / 10^4) / paidCommitments) per paid
  commitment -- equal for every paid commitment, whatever tokens it declared --, verifier =
  floor(floor(S * verifierBps / 10^4) / standingChecks) per standing attestation, juror =
  floor(floor(S * jurorBps / 10^4) / jurorVotes) per signature of an executed verdict.
  Paid and paidCommitments follow the plant rules (docs/planted-faults.md, `protocol.history.records.Round`):
  a planted commitment that was attested is paid as accepted; one without an anchor old enough, whose plant a
  jury disproved or whose missing reveal was reported leaves paidCommitments; a missed reveal nobody reported
  stays counted but never mints;
- slashes: a finalized fail, a fail upheld by a jury and a pass overturned by a jury slash the
  solver (fault key FAULT_SOLVER, the run's solverMinStake); an attestation overturned by a jury slashes
  its verifier (FAULT_ATTESTATION, verifierMinStake); a pass overturned by a planted reveal slashes its
  verifier the plant penalty (FAULT_ATTESTATION) and nobody else -- a fail on a planted commitment is right,
  so its finalization slashes no solver; a seat of an opened commitment left unattested and reported slashes its
  verifier the attestation bond (FAULT_ATTESTATION); a plant reported unrevealed slashes its solver (FAULT_SOLVER,
  solverMinStake: the commitment's one key, so once with any other fault of it); a plant dispute won by its
  challenger (the plant disproven) slashes the solver (FAULT_SOLVER, solverMinStake), one lost or unresolved
  slashes nobody; a dispute that ends unresolved (no verdict after every appeal) slashes nobody.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor.checks import SHARES, SLASHES, CheckResult, make_check_result, short
from protocol.history.events import compute_attestation_fault_key, compute_solver_fault_key
from protocol.history.records import Round, RunHistory
from protocol.types import PlantPay

# ---------------------------------------------------------------------------------------------
# Shares


@dataclass(frozen=True)
class Contribution:
    round: int
    kind: str
    key: str
    holder: str | None
    expected: int
    claimed: bool


def expected_contributions(history: RunHistory) -> list[Contribution]:
    """Every contribution of a settled round that earns shares, with the amount the contracts owe: paid commitments
    (planted ones included), standing attestations, signatures of executed verdicts."""
    s = history.terms
    claimed = {(c.round, c.kind, _claim_key(c)) for c in history.share_claims}
    out = []
    for rnd in history.settled_rounds:
        checks, votes = rnd.standing_checks, rnd.juror_votes
        for solver in rnd.paid:
            key = f"commitment {solver}"
            out.append(
                Contribution(
                    rnd.index,
                    "solver",
                    key,
                    solver,
                    get_solver_shares(history, rnd),
                    (rnd.index, "solver", key) in claimed,
                )
            )
        for a in rnd.attestations:
            if a.state in ("finalized", "upheld", "attested"):
                key = f"attestation {a.solver} slot {a.slot}"
                out.append(
                    Contribution(
                        rnd.index,
                        "verifier",
                        key,
                        a.verifier,
                        s.verifier_bucket // checks,
                        (rnd.index, "verifier", key) in claimed,
                    )
                )
        for d in rnd.disputes:
            if d.status != "executed":
                continue
            for seat in range(d.signer_count):
                rewarded = seat < len(d.juror_rewards)
                holder = d.juror_rewards[seat].juror if rewarded else None
                key = f"dispute {d.dispute_id} signer {seat + 1}"
                out.append(Contribution(rnd.index, "juror", key, holder, s.juror_bucket // votes, rewarded))
    return out


def get_solver_shares(history: RunHistory, rnd: Round) -> int:
    """What each paid commitment of a settled round mints (Verification.claimSolverShares): the round's solver bucket
    divided equally among its paid commitments."""
    return history.terms.solver_bucket // rnd.paid_commitments


def _claim_key(claim: Any) -> str:
    if claim.kind == "solver":
        return f"commitment {claim.solver}"
    if claim.kind == "verifier":
        return f"attestation {claim.solver} slot {claim.slot}"
    return f"dispute {claim.dispute_id} seat {claim.seat}"


def check_shares(history: RunHistory) -> tuple[CheckResult, list[Contribution]]:
    """Every mint pays a contribution of a settled round exactly the contracts' formula, once."""
    s = history.terms
    problems: list[str] = []
    rounds = {r.index: r for r in history.rounds}
    seen: set[tuple[int, str, str]] = set()
    for claim in history.share_claims:
        rnd = rounds.get(claim.round)
        where = f"round {claim.round} {claim.kind} shares of {history.label_of(claim.holder)}"
        if rnd is None or not rnd.settled:
            problems.append(f"{where}: minted for a round that is not settled")
            continue
        key = (claim.round, claim.kind, _claim_key(claim))
        if key in seen:
            problems.append(f"{where}: minted twice for {key[2]}")
        seen.add(key)
        expected, reason = _expected_claim(history, rnd, claim)
        if reason is not None:
            problems.append(f"{where}: {reason}")
        elif claim.amount != expected:
            problems.append(f"{where}: minted {claim.amount}, verified work implies {expected}")
    mints = list(history.mints)
    for claim in history.share_claims:
        match = next(
            (
                m
                for m in mints
                if m.transaction_hash == claim.transaction_hash
                and m.holder == claim.holder
                and m.amount == claim.amount
                and m.kind == claim.kind
                and m.round == claim.round
            ),
            None,
        )
        if match is None:
            problems.append(f"round {claim.round} {claim.kind} claim of {claim.holder}: no matching SharesMinted")
        else:
            mints.remove(match)
    for m in mints:
        problems.append(
            f"round {m.round}: {m.amount} {m.kind} shares minted to {m.holder} for no recorded contribution"
        )
    per_round: dict[int, int] = {}
    for m in history.mints:
        per_round[m.round] = per_round.get(m.round, 0) + m.amount
        if m.minted_in_round != per_round[m.round]:
            problems.append(f"round {m.round}: mintedInRound {m.minted_in_round} != running sum {per_round[m.round]}")
    for index, total in per_round.items():
        if total > s.shares_per_round:
            problems.append(f"round {index}: {total} shares minted, more than sharesPerRound {s.shares_per_round}")
    minted_total = sum(m.amount for m in history.mints)
    if minted_total != history.total_supply:
        problems.append(f"share token supply {history.total_supply} != shares minted {minted_total}")
    contributions = expected_contributions(history)
    pending = [c for c in contributions if not c.claimed]
    evidence = {
        "minted_total": minted_total,
        "mints": len(history.mints),
        "per_round": {str(k): v for k, v in sorted(per_round.items())},
        "unclaimed_contributions": len(pending),
        "unclaimed_shares": sum(c.expected for c in pending),
    }
    detail = (
        f"{len(history.share_claims)} mints, {minted_total / 1e18:,.4f} shares: each equals what its verified work "
        f"implies; {len(pending)} contribution(s) not claimed yet"
    )
    return make_check_result(SHARES, problems, detail, evidence), contributions


def _expected_claim(history: RunHistory, rnd: Any, claim: Any) -> tuple[int, str | None]:
    s = history.terms
    if claim.kind == "solver":
        c = rnd.commitment_of(claim.solver)
        if c is None or not rnd.is_paid(claim.solver):
            return 0, f"the commitment is not paid work ({_why_unpaid(rnd, claim.solver)})"
        if claim.holder != claim.solver:
            return 0, f"paid to {claim.holder}, not the solver {claim.solver}"
        return get_solver_shares(history, rnd), None
    if claim.kind == "verifier":
        a = next((x for x in rnd.attestations if x.solver == claim.solver and x.slot == claim.slot), None)
        if a is None or a.state not in ("finalized", "upheld"):
            return 0, "no standing (finalized or upheld) attestation behind it"
        if claim.holder != a.verifier:
            return 0, f"paid to {claim.holder}, not the attester {a.verifier}"
        return s.verifier_bucket // rnd.standing_checks, None
    d = next((x for x in rnd.disputes if x.dispute_id == claim.dispute_id), None)
    if d is None or d.status != "executed":
        return 0, "no executed verdict behind it"
    if claim.seat is None or claim.seat >= 32:
        return 0, "seat out of range"
    return s.juror_bucket // rnd.juror_votes, None


def _why_unpaid(rnd: Any, solver: str) -> str:
    pay = rnd.pay_of(solver)
    if pay == PlantPay.UNPAID:
        c = rnd.commitment_of(solver)
        if c is not None and c.disproven:
            return "its plant was disproven by a jury"
        if c is not None and c.plant_eligible:
            return "its plant secret was not revealed in the reveal window"
        return "the run plants and the solver had no eligible anchor (two rounds old, or set before the start)"
    if pay == PlantPay.PLANTED:
        return "planted but never attested"
    return "not accepted: no standing pass, or a standing fault"


# ---------------------------------------------------------------------------------------------
# Slashes


@dataclass(frozen=True)
class DueSlash:
    """A slash the outcomes prove is due: why, and the stake the contract must have asked for."""

    why: str
    requested: int


def expected_slashes(history: RunHistory) -> tuple[dict[str, DueSlash], list[str]]:
    """(fault key -> the slash due, faults still pending) from commitment and attestation outcomes."""
    s = history.terms
    due: dict[str, DueSlash] = {}
    pending: list[str] = []
    executed = {(d.round, d.solver, d.slot): d for r in history.rounds for d in r.disputes if d.kind == "attestation"}
    penalty = history.plants.terms.penalty if history.plants.terms is not None else 0
    for rnd in history.rounds:
        for c in rnd.commitments:
            if c.opening == "unopened":  # reported after the opening deadline with the seed drawn
                key = compute_solver_fault_key(history.run_id, rnd.index, c.solver)
                why = f"round {rnd.index} {c.solver}: commitment not opened by the deadline"
                due.setdefault(key, DueSlash(why, s.solver_min_stake))
            if c.unrevealed_reported:  # the commitment's own key: slashed once with any other fault of it
                key = compute_solver_fault_key(history.run_id, rnd.index, c.solver)
                why = f"round {rnd.index} {c.solver}: plant secret not revealed in the reveal window (reported)"
                due.setdefault(key, DueSlash(why, s.solver_min_stake))
            if c.disproven:  # Disputes._resolvePlant: the same key as any proven fault of the commitment
                key = compute_solver_fault_key(history.run_id, rnd.index, c.solver)
                why = f"round {rnd.index} {c.solver}: plant disproven by a jury (not the planted training)"
                due.setdefault(key, DueSlash(why, s.solver_min_stake))
        for a in rnd.attestations:
            dispute = executed.get((rnd.index, a.solver, a.slot))
            solver_key = compute_solver_fault_key(history.run_id, rnd.index, a.solver)
            where = f"round {rnd.index} {a.solver} slot {a.slot}"
            if a.planted:  # the plant decided: a pass is the verifier's fault, a fail is right and slashes nobody
                if a.state == "overturned":
                    key = compute_attestation_fault_key(history.run_id, rnd.index, a.solver, a.slot)
                    due[key] = DueSlash(f"{where}: pass on a planted commitment overturned by the reveal", penalty)
            elif a.is_fail and a.state == "finalized":
                due.setdefault(solver_key, DueSlash(f"{where}: fail attestation finalized", s.solver_min_stake))
            elif a.is_fail and a.state == "upheld" and dispute is not None and dispute.status == "executed":
                why = f"{where}: fail attestation upheld by a jury"
                due.setdefault(solver_key, DueSlash(why, s.solver_min_stake))
            elif a.state == "overturned":
                key = compute_attestation_fault_key(history.run_id, rnd.index, a.solver, a.slot)
                due[key] = DueSlash(f"{where}: {a.kind} attestation overturned by a jury", s.verifier_min_stake)
                if not a.is_fail:
                    why = f"{where}: pass overturned (the commitment is a proven fault)"
                    due.setdefault(solver_key, DueSlash(why, s.solver_min_stake))
            elif a.is_fail and a.state in ("attested", "challenged"):
                pending.append(f"{where}: fail attestation not finalized yet (the solver's slash is pending)")
        for x in rnd.abstentions:  # Verification.reportAbstention: the seat's key, the round's attestation bond
            key = compute_attestation_fault_key(history.run_id, rnd.index, x.solver, x.slot)
            why = f"round {rnd.index} {x.solver} slot {x.slot}: {x.verifier} did not attest the opened commitment"
            due[key] = DueSlash(why, s.attestation_bond)
    return due, pending


def check_slashes(history: RunHistory) -> tuple[CheckResult, list[str]]:
    """Exactly the faults the outcomes prove were slashed, each for what the contracts ask: the run's stake, or the
    plant penalty for a pass on a planted commitment."""
    due, pending = expected_slashes(history)
    problems = []
    slashed = {x.fault_key: x for x in history.slashes}
    for key, expected in due.items():
        if key not in slashed:
            problems.append(f"{expected.why}, but no slash with fault key {short(key, 18)}")
    for key, x in slashed.items():
        if key not in due:
            problems.append(f"{x.account} slashed {x.amount} for {x.fault} in round {x.round} without a proven fault")
            continue
        wanted = due[key].requested
        if x.requested != wanted:
            problems.append(f"{x.account}: slash requested {x.requested}, the rules ask {wanted} ({due[key].why})")
        if x.amount > x.requested:
            problems.append(f"{x.account}: {x.amount} taken, more than the {x.requested} requested")
    total = sum(x.amount for x in history.slashes)
    detail = f"{len(history.slashes)} slash(es), {total / 1e18:g} ETH, each for a proven fault"
    if not history.slashes:
        detail = "no fault proven, nobody slashed"
    return make_check_result(
        SLASHES, problems, detail, {"slashes": len(history.slashes), "slashed_wei": total}
    ), pending
