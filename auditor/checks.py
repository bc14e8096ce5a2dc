"""The audit's checks: functions of what was read (history, public state, artifact facts).

Each returns a `CheckResult` (name, passed, one-line detail, evidence). None does I/O: the
θ re-derivation takes a `load_state` callable (the audit passes one that reads the artifact
stores; the unit tests pass a dict), everything else takes plain values.

Rules are the contracts' (contracts/src):
- accepted commitment: at least one standing pass and no standing fault (Verification), and not unpaid under
  the plant rules (a planted Δ never is: its passes were overturned; `protocol.history.records.Round`);
- θ_(r+1) = `protocol.outer.compute_outer_step(θ_r, accepted Δs)`, nothing accepted leaves θ as is;
- shares minted and stake slashed: auditor/payout_checks.py;
- ETH: the contracts hold exactly what `protocol.ledger.compute_ledger(events)` says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from protocol.commitment import CommitmentDoc, verify_commitment_doc
from protocol.config import TrainConfig
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex, to_hash32
from protocol.history.records import RunHistory
from protocol.outer import compute_outer_step
from protocol.replay import verify_leaf_chain
from protocol.state import compute_state_hash
from protocol.training import State

RUN_DEFINITION = "run definition"
THETA = "θ re-derivation"
DOCUMENTS = "commitment documents"
CHECKPOINTS = "checkpoints"
REPLAY = "accepted work replays"
INTEGRITY = "artifact integrity"
SHARES = "shares minted"
SLASHES = "slashes"
PUBLIC_STATE = "public state matches events"
BALANCE = "ETH balance"
CHECK_ORDER = (
    RUN_DEFINITION, THETA, DOCUMENTS, CHECKPOINTS, REPLAY, INTEGRITY, SHARES, SLASHES, PUBLIC_STATE, BALANCE,
)  # fmt: skip
"""The checks in report order; REPLAY is auditor/replay_check.py (accepted segments replayed)."""
ACCEPTED_WORK = "accepted work"
MAX_LISTED = 6


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    detail: str
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail, "evidence": dict(self.evidence)}


@dataclass(frozen=True)
class AuditWarning:
    """Something true of the run that its operators must see although every check passed: the run is consistent
    (events, state, ETH and θ agree) but did not do what a run is for, e.g. it accepted no work and paid its pool
    to nobody. Shown as a warning row next to the checks; `gradledger audit --strict` exits non-zero on one."""

    name: str
    detail: str
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "detail": self.detail, "evidence": dict(self.evidence)}


def _listed(problems: Sequence[str]) -> str:
    shown = "; ".join(problems[:MAX_LISTED])
    return shown + (f"; and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else "")


def make_check_result(name: str, problems: Sequence[str], ok_detail: str, evidence: Mapping[str, Any]) -> CheckResult:
    """A passed check with `ok_detail`, or a failed one listing the first problems (all in the evidence)."""
    if problems:
        return CheckResult(name, False, _listed(problems), {**evidence, "problems": list(problems)})
    return CheckResult(name, True, ok_detail, dict(evidence))


def short(value: str | None, width: int = 10) -> str:
    return "-" if not value else value[:width] + "…"


# ---------------------------------------------------------------------------------------------
# Run definition


@dataclass(frozen=True)
class RunDefinitionFacts:
    """What reading the run's off-chain definition found (None = fine)."""

    config_problem: str | None
    dataset_problem: str | None
    theta0_problem: str | None
    rules_problem: str | None = None


def check_run_definition(facts: RunDefinitionFacts) -> CheckResult:
    problems = [
        p for p in (facts.config_problem, facts.rules_problem, facts.dataset_problem, facts.theta0_problem) if p
    ]
    return make_check_result(
        RUN_DEFINITION, problems, "config, dataset and θ0 found under their on-chain hashes; H and k agree", {}
    )


# ---------------------------------------------------------------------------------------------
# θ re-derivation


@dataclass(frozen=True)
class ThetaDerivation:
    round: int
    accepted: tuple[str, ...]
    claimed: str | None
    derived: str | None
    problem: str | None


def rederive_thetas(
    history: RunHistory,
    train: TrainConfig | None,
    load_state: Callable[[str, str], State],
    on_theta: Callable[[int, State], None] | None = None,
    load_update: Callable[[str, str], State] | None = None,
) -> tuple[CheckResult, tuple[ThetaDerivation, ...]]:
    """Re-derive every settled θ_(r+1) from θ_r and the accepted Δs, in order from θ0.

    `load_state(hash, what)` returns a state or raises GradledgerError (missing, corrupt); `load_update(Δ hash,
    what)` what an accepted commitment contributes (default `load_state`: Δ itself; in a codec run D(P_r) of the
    payload document the Δ hash names, protocol/payload.py);
    `on_theta(r, θ_r)` sees every θ_r used (r = 0 .. rounds settled), for loss and start hashes.
    When a round's derivation differs from the chain, the chain's θ_(r+1) is loaded (if it can be)
    so later rounds are still checked on their own.
    """
    problems: list[str] = []
    derivations: list[ThetaDerivation] = []
    if train is None:
        return make_check_result(THETA, ["run config unavailable: cannot re-derive any θ"], "", {}), ()
    if not history.rounds:
        return make_check_result(THETA, ["run has no rounds"], "", {}), ()
    state: State | None = None
    state_hash = hash_to_hex(history.terms.theta0_hash)
    try:
        state = load_state(state_hash, "θ0")
    except GradledgerError as exc:
        problems.append(f"θ0 unavailable: {exc}")
    for rnd in history.rounds:
        if state is not None and state_hash != rnd.theta_hash:
            problems.append(
                f"round {rnd.index} starts from θ {short(rnd.theta_hash)}, not the θ {short(state_hash)} settled before"
            )
            state = None
        if state is None:
            if rnd.settled:
                derivations.append(ThetaDerivation(rnd.index, rnd.accepted, rnd.next_theta_hash, None, "θ_r unknown"))
                problems.append(f"round {rnd.index}: not re-derived, θ_r {short(rnd.theta_hash)} unavailable")
            state, state_hash = _try_load(load_state, rnd.next_theta_hash) if rnd.settled else (None, "")
            continue
        if on_theta is not None:
            on_theta(rnd.index, state)
        if not rnd.settled:
            break
        accepted = rnd.accepted
        deltas: dict[str, State] = {}
        missing: list[str] = []
        for solver in accepted:
            commitment = rnd.commitment_of(solver)
            if commitment is None:  # the fold accepts only commitments it saw: a history built otherwise is broken
                missing.append(f"accepted solver {solver} has no commitment in round {rnd.index}")
                continue
            try:
                deltas[solver] = (load_update or load_state)(commitment.delta_hash, f"Δ of {solver} round {rnd.index}")
            except GradledgerError as exc:
                missing.append(str(exc))
        if missing:
            problems.extend(f"round {rnd.index}: {m}" for m in missing)
            derivations.append(ThetaDerivation(rnd.index, accepted, rnd.next_theta_hash, None, "Δ unavailable"))
            state, state_hash = _try_load(load_state, rnd.next_theta_hash)
            continue
        try:
            following = compute_outer_step(state, deltas, train)
        except GradledgerError as exc:
            problems.append(f"round {rnd.index}: outer step failed: {exc}")
            derivations.append(ThetaDerivation(rnd.index, accepted, rnd.next_theta_hash, None, str(exc)))
            state, state_hash = _try_load(load_state, rnd.next_theta_hash)
            continue
        derived = "0x" + compute_state_hash(following).hex()
        if derived != rnd.next_theta_hash:
            problems.append(
                f"round {rnd.index}: θ_(r+1) re-derived from θ_r and {len(accepted)} accepted Δ is {short(derived)}, "
                f"the chain settled {short(rnd.next_theta_hash)}"
            )
            derivations.append(ThetaDerivation(rnd.index, accepted, rnd.next_theta_hash, derived, "mismatch"))
            state, state_hash = _try_load(load_state, rnd.next_theta_hash)
            continue
        derivations.append(ThetaDerivation(rnd.index, accepted, rnd.next_theta_hash, derived, None))
        state, state_hash = following, derived
    else:
        if state is not None and history.finished and on_theta is not None:
            on_theta(len(history.rounds), state)
    settled = len(history.settled_rounds)
    ok = sum(1 for d in derivations if d.problem is None)
    evidence = {
        "rounds_settled": settled,
        "rounds_rederived": ok,
        "rounds": [
            {
                "round": d.round,
                "accepted": list(d.accepted),
                "claimed": d.claimed,
                "derived": d.derived,
                "problem": d.problem,
            }
            for d in derivations
        ],
    }
    detail = f"all {settled} settled θ_(r+1) re-derived bit-identically from θ_r and the accepted Δs"
    if settled == 0:
        detail = "no round settled yet: nothing to re-derive"
    return make_check_result(THETA, problems, detail, evidence), tuple(derivations)


def _try_load(load_state: Callable[[str, str], State], digest: str | None) -> tuple[State | None, str]:
    """The chain's θ (to go on checking later rounds after a failed one), or None when unavailable."""
    if digest is None:
        return None, ""
    try:
        return load_state(digest, "settled θ"), digest
    except GradledgerError:
        return None, ""


# ---------------------------------------------------------------------------------------------
# Commitment documents and checkpoints


@dataclass(frozen=True)
class DocumentFacts:
    """A commitment's document as found (or not), and what reading its checkpoints found."""

    round: int
    solver: str
    doc: CommitmentDoc | None
    where: str
    searched: str
    checkpoint_problems: tuple[str, ...] = ()
    checkpoints_checked: int = 0
    delta_binding: str | None = None  # None = fine, else why Δ != θ_r - c_H


StartHashes = Mapping[tuple[int, str], str | None]
"""(round, solver) -> the hash of the c_0 its first leaf must start at (θ_r with fresh or carried AdamW moments by
protocol/moments.py's rule, auditor/artifact_reads.py `compute_start_hashes`), None when the carried moments it must
hold could not be read."""


def judge_document(history: RunHistory, found: DocumentFacts | None, start_hashes: StartHashes) -> str | None:
    """Why a commitment's document fails (None: its leaves hash to the committed root and chain from θ_r)."""
    if found is None or found.doc is None:
        searched = found.searched if found else "nowhere"
        return f"commitment document missing (searched {searched})"
    rnd = history.rounds[found.round]
    c = rnd.commitment_of(found.solver)
    if c is None:
        return f"a document of {found.solver}, who did not commit in round {rnd.index} (document at {found.where})"
    doc = found.doc
    reason = verify_commitment_doc(
        doc, history.run_id, rnd.index, c.solver, bytes.fromhex(c.root[2:]), bytes.fromhex(c.delta_hash[2:]), c.tokens
    )
    if reason is None and "0x" + doc.theta_hash.hex() != rnd.theta_hash:
        reason = "document trains from another θ than the round's"
    key = (rnd.index, c.solver)
    if reason is None and key in start_hashes:
        start_hash = start_hashes[key]
        if start_hash is None:
            reason = (
                "the AdamW moments its round must start from (its previous accepted round's end checkpoint) are missing"
            )
        else:
            reason = verify_leaf_chain(
                list(doc.leaves),
                history.run_id,
                rnd.index,
                c.solver,
                to_hash32(start_hash),
                history.terms.num_segments,
            )
    return None if reason is None else f"{reason} (document at {found.where})"


def check_documents(
    history: RunHistory, facts: Mapping[tuple[int, str], DocumentFacts], start_hashes: StartHashes
) -> CheckResult:
    """The given commitments' documents: leaves hash to the committed root, Δ and tokens agree, leaves chain."""
    problems = []
    for (index, solver), found in sorted(facts.items()):
        reason = judge_document(history, found, start_hashes)
        if reason is not None:
            problems.append(f"round {index} {history.label_of(solver)} ({solver}): {reason}")
    checked = len(facts) - len(problems)
    evidence = {"commitments_checked": len(facts), "documents_verified": checked}
    return make_check_result(
        DOCUMENTS,
        problems,
        f"{checked} document(s) of accepted work: leaves hash to the committed root and chain from θ_r",
        evidence,
    )


def check_checkpoints(history: RunHistory, facts: Mapping[tuple[int, str], DocumentFacts]) -> CheckResult:
    """Every checkpoint a document names is present and hash-correct; Δ = θ_r - c_H."""
    problems: list[str] = []
    checked = 0
    for (index, solver), found in sorted(facts.items()):
        if found.doc is None:
            continue
        label = f"round {index} {history.label_of(solver)}"
        problems.extend(f"{label}: {p}" for p in found.checkpoint_problems)
        if found.delta_binding is not None:
            problems.append(f"{label}: {found.delta_binding}")
        checked += found.checkpoints_checked
    return make_check_result(
        CHECKPOINTS,
        problems,
        f"{checked} checkpoints present and hash-correct; every Δ = θ_r - c_H",
        {"checkpoints_checked": checked},
    )


def check_integrity(corrupt: Sequence[tuple[str, str]]) -> CheckResult:
    problems = [f"{where} does not hash to its name {short(digest, 18)}" for digest, where in corrupt]
    return make_check_result(
        INTEGRITY, problems, "every artifact copy read hashes to its name", {"corrupt_copies": len(corrupt)}
    )


# ---------------------------------------------------------------------------------------------
# Public state and ETH


@dataclass(frozen=True)
class PublicState:
    """Public state of the contracts at the audited block (what events must agree with)."""

    round: int
    finished: bool
    theta_of: Mapping[int, str]
    statuses: Mapping[tuple[int, str], Mapping[str, int]]
    tallies: Mapping[int, tuple[int, int]]
    juror_votes: Mapping[int, int]
    minted_in_round: Mapping[int, int]
    stakes: Mapping[tuple[str, str], tuple[int, int]]
    share_balances: Mapping[str, int]
    total_supply: int


def check_public_state(history: RunHistory, state: PublicState) -> CheckResult:
    problems = []
    compared = 0

    def same(what: str, from_events: Any, public: Any) -> None:
        nonlocal compared
        compared += 1
        if from_events != public:
            problems.append(f"{what}: events say {from_events}, public state says {public}")

    same("current round", history.current_round, state.round)
    same("run finished", history.finished, state.finished)
    for index, theta in sorted(state.theta_of.items()):
        if index < len(history.rounds):
            same(f"θ of round {index}", history.rounds[index].theta_hash, theta)
        elif index == len(history.rounds) and history.rounds:
            same("final θ", history.rounds[-1].next_theta_hash, theta)
    for rnd in history.rounds:
        for c in rnd.commitments:
            status = state.statuses.get((rnd.index, c.solver))
            if not status or status.get("roundPlusOne") != rnd.index + 1:
                continue  # the slot was reused by a later round with nothing left to pay
            same(
                f"round {rnd.index} {c.solver} passes/faults/needed",
                (*rnd.seat_counts(c.solver), rnd.needed),
                (status["passes"], status["faults"], status["needed"]),
            )
        if rnd.seed is not None and rnd.index in state.tallies:
            same(
                f"round {rnd.index} standing checks / paid commitments",
                (rnd.standing_checks, rnd.paid_commitments),
                state.tallies[rnd.index],
            )
        if rnd.index in state.juror_votes:
            same(f"round {rnd.index} juror votes", rnd.juror_votes, state.juror_votes[rnd.index])
        if rnd.index in state.minted_in_round:
            minted = sum(m.amount for m in history.mints if m.round == rnd.index)
            same(f"round {rnd.index} shares minted", minted, state.minted_in_round[rnd.index])
    last: dict[tuple[str, str], tuple[int, int]] = {}
    for point in history.stakes:
        last[(point.account, point.role)] = (point.bonded, point.unbonding)
    for key, value in sorted(last.items()):
        if key in state.stakes:
            same(f"stake of {key[0]} as {key[1]} (bonded, unbonding)", value, state.stakes[key])
    balances = history.balances
    for holder in sorted(set(balances) | set(state.share_balances)):
        same(f"shares of {holder}", balances.get(holder, 0), state.share_balances.get(holder, 0))
    same("share token total supply", history.total_supply, state.total_supply)
    return make_check_result(
        PUBLIC_STATE,
        problems,
        f"{compared} values from events equal the contracts' public state",
        {"values_compared": compared},
    )


def check_balance(contract_balances: Mapping[str, int], implied: int, by_kind: Mapping[str, int]) -> CheckResult:
    held = sum(contract_balances.values())
    evidence = {
        "contract_balance_wei": held,
        "implied_balance_wei": implied,
        "balances": dict(contract_balances),
        "ledger": dict(by_kind),
    }
    if held != implied:
        return CheckResult(
            BALANCE,
            False,
            f"contracts hold {held} wei, the events imply {implied} wei (difference {held - implied})",
            evidence,
        )
    return CheckResult(BALANCE, True, f"contracts hold {held / 1e18:.6f} ETH, exactly what the events imply", evidence)


# ---------------------------------------------------------------------------------------------
# Warnings


def find_warnings(history: RunHistory) -> tuple[AuditWarning, ...]:
    """What a passed audit must still point out. One today: settled rounds that accepted no work.

    A run whose every round missed its windows settles with θ unchanged and releases its pool to a share token
    nobody holds; every check passes, because that is what the contracts' rules say happens. Reported here as
    such (with how to get the pool back), so "all checks passed" is never the whole story of an empty run.
    """
    settled = history.settled_rounds
    idle = [r for r in settled if not r.accepted]
    if not idle:
        return ()
    released = sum(r.pool_released for r in idle)
    evidence = {"rounds": [r.index for r in idle], "settled_rounds": len(settled), "pool_released_wei": released}
    if len(idle) < len(settled):
        listed = ", ".join(str(r.index) for r in idle)
        detail = (
            f"round(s) {listed} of {len(settled)} settled accepted no work: θ stayed as it was in them "
            f"({released / 1e18:,.6f} ETH of the pool was released to those rounds)"
        )
        return (AuditWarning(ACCEPTED_WORK, detail, evidence),)
    detail = (
        f"no work was accepted in any of the {len(settled)} settled round(s): θ never changed and no solver was paid"
    )
    if history.finished and history.total_supply == 0:
        detail += (
            f"; the reward pool ({history.reward_pool / 1e18:,.6f} ETH) went to a share token nobody holds: the "
            f"creator can reclaim it 30 days after the last settlement with `gradledger run reclaim --run "
            f"{history.run_id}`"
        )
    return (AuditWarning(ACCEPTED_WORK, detail, evidence),)
