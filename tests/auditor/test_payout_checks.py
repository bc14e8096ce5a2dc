"""auditor.payout_checks: shares and slashes pass on honest histories and fail, naming why, on broken ones."""

from __future__ import annotations

from auditor import payout_checks
from protocol.history.events import compute_attestation_fault_key, compute_solver_fault_key
from protocol.history.fold import fold_run_history
from tests.history_builder import (
    ETH,
    JUROR,
    SOLVER_A,
    SOLVER_B,
    SOLVER_C,
    SOLVER_D,
    VERIFIER,
    VERIFIER_2,
    RunEvents,
    attested_pass,
    honest_two_rounds,
    planted_run,
    with_args,
)


def _fold(ev: RunEvents):
    return fold_run_history(ev.events, ev.run_id, ev.timestamps)


# -- shares ----------------------------------------------------------------------------------------


def test_shares_pass_on_honest_history():
    result, contributions = payout_checks.check_shares(_fold(honest_two_rounds()))
    assert result.passed, result.detail
    assert len(contributions) == 8 and all(c.claimed for c in contributions)
    assert result.evidence["minted_total"] == 1900 * ETH


def test_shares_fail_on_a_wrong_amount():
    ev = honest_two_rounds()
    ev.events = [
        with_args(e, shares=401 * ETH)
        if e.name == "SolverSharesClaimed" and e.args["round"] == 1 and e.args["solver"] == SOLVER_B
        else e
        for e in ev.events
    ]
    ev.events = [
        with_args(e, amount=401 * ETH)
        if e.name == "SharesMinted" and e.args["round"] == 1 and e.args["to"] == SOLVER_B and e.args["kind"] == 0
        else e
        for e in ev.events
    ]
    result, _ = payout_checks.check_shares(_fold(ev))
    assert not result.passed
    assert "minted 401000000000000000000, verified work implies 400000000000000000000" in result.detail


def test_solver_shares_are_equal_per_paid_commitment_whatever_tokens_were_declared():
    """Issue 36, finding 1: a solver declaring 1000x the tokens used to take 1000x the round's solver shares; now each
    paid commitment mints bucket // paidCommitments, and a tokens-weighted mint fails the check."""

    def run(a_shares: int) -> RunEvents:
        ev = RunEvents()
        ev.create()
        ev.commit(0, SOLVER_A, tokens=768 * 1000)
        ev.commit(0, SOLVER_B)
        ev.seed(0)
        for solver in (SOLVER_A, SOLVER_B):
            ev.attest(0, solver)
            ev.finalize(0, solver)
        ev.claim_theta(0)
        ev.settle(0)
        ev.claim_solver(0, SOLVER_A, a_shares)
        ev.claim_solver(0, SOLVER_B, 400 * ETH)
        return ev

    result, contributions = payout_checks.check_shares(_fold(run(400 * ETH)))
    assert result.passed, result.detail
    assert {c.holder: c.expected for c in contributions if c.kind == "solver"} == {
        SOLVER_A: 400 * ETH,
        SOLVER_B: 400 * ETH,
    }
    result, _ = payout_checks.check_shares(_fold(run(800 * ETH * 1000 // 1001)))  # the old tokens-weighted share
    assert not result.passed and "verified work implies 400000000000000000000" in result.detail


def test_shares_fail_on_double_mint_unsettled_round_and_unexplained_mint():
    ev = honest_two_rounds()
    ev.claim_solver(1, SOLVER_A, 400 * ETH)  # the same commitment paid twice
    result, _ = payout_checks.check_shares(_fold(ev))
    assert not result.passed and "minted twice" in result.detail
    assert "more than sharesPerRound" in result.detail

    ev = RunEvents()
    ev.create()
    ev.commit(0, SOLVER_A)
    ev.seed(0)
    ev.attest(0, SOLVER_A)
    ev.claim_solver(0, SOLVER_A, 800 * ETH)  # before settlement
    result, _ = payout_checks.check_shares(_fold(ev))
    assert "minted for a round that is not settled" in result.detail

    ev = honest_two_rounds()
    ev.step()
    ev._mint(1, VERIFIER, 1, 5 * ETH)  # SharesMinted without a contribution event
    result, _ = payout_checks.check_shares(_fold(ev))
    assert "for no recorded contribution" in result.detail


def test_unclaimed_contributions_are_pending_not_failures():
    ev = honest_two_rounds(unclaimed=((1, SOLVER_B),))
    result, contributions = payout_checks.check_shares(_fold(ev))
    assert result.passed, result.detail
    (pending,) = [c for c in contributions if not c.claimed]
    assert (pending.round, pending.kind, pending.holder, pending.expected) == (1, "solver", SOLVER_B, 400 * ETH)


# -- slashes ---------------------------------------------------------------------------------------


def _fail_run(finalize: bool = True) -> RunEvents:
    ev = RunEvents()
    ev.deposit(SOLVER_A, 1)
    ev.create()
    ev.commit(0, SOLVER_A)
    ev.seed(0)
    ev.attest(0, SOLVER_A, fail=True)
    if finalize:
        ev.finalize(0, SOLVER_A, fail=True)
    return ev


def test_slashes_pass_when_every_proven_fault_is_slashed():
    result, pending = payout_checks.check_slashes(_fold(_fail_run()))
    assert result.passed and result.evidence["slashed_wei"] == 10 * ETH and not pending
    result, pending = payout_checks.check_slashes(_fold(_fail_run(finalize=False)))
    assert result.passed and "not finalized yet" in pending[0]


def test_slashes_fail_on_a_missing_or_unexplained_slash():
    ev = _fail_run()
    ev.events = [e for e in ev.events if e.name != "StakeSlashed"]
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed and "fail attestation finalized, but no slash" in result.detail

    ev = honest_two_rounds()
    ev.step()
    ev.slash(SOLVER_B, 1, compute_solver_fault_key(1, 1, SOLVER_B))
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed and "without a proven fault" in result.detail


def test_overturned_pass_requires_both_slashes():
    ev = attested_pass()
    ev.overturn_pass(0, SOLVER_A)
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert result.passed, result.detail
    ev.events = [e for e in ev.events if not (e.name == "StakeSlashed" and e.args["account"] == VERIFIER)]
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed and "pass attestation overturned by a jury, but no slash" in result.detail


def _unopened_run(slashed: bool = True) -> RunEvents:
    ev = RunEvents()
    for account in (SOLVER_A, SOLVER_B):
        ev.deposit(account, 1)
    ev.deposit(VERIFIER, 2)
    ev.create()
    ev.register(VERIFIER)
    ev.commit(0, SOLVER_A)
    ev.commit(0, SOLVER_B)
    ev.seed(0)
    ev.open(0, SOLVER_A)
    ev.attest(0, SOLVER_A)
    ev.report_unopened(0, SOLVER_B, slashed=slashed)
    return ev


def test_an_unopened_commitment_is_a_proven_fault_and_folds_as_unopened():
    history = _fold(_unopened_run())
    openings = {c.solver: c.opening for c in history.rounds[0].commitments}
    assert openings == {SOLVER_A: "opened", SOLVER_B: "unopened"}
    result, _ = payout_checks.check_slashes(history)
    assert result.passed and result.evidence["slashed_wei"] == 10 * ETH, result.detail
    # reported void (the seed never drawn): nothing is due, and a slash would be unexplained
    void = _fold(_unopened_run(slashed=False))
    assert {c.solver: c.opening for c in void.rounds[0].commitments}[SOLVER_B] == "void"
    assert payout_checks.check_slashes(void)[0].passed


def test_an_unopened_report_without_its_slash_fails_the_audit():
    ev = _unopened_run()
    ev.events = [e for e in ev.events if e.name != "StakeSlashed"]
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed and "commitment not opened by the deadline, but no slash" in result.detail


# -- planted faults --------------------------------------------------------------------------------


def test_planted_round_pays_the_planting_solver_and_passes_both_checks():
    history = _fold(planted_run())
    shares, contributions = payout_checks.check_shares(history)
    assert shares.passed, shares.detail
    solver_pay = {(c.round, c.holder): c.expected for c in contributions if c.kind == "solver"}
    # round 2: A (planted) and B (revealed, not planted) are the round's two paid commitments; C and D never are
    assert solver_pay == {(1, SOLVER_D): 800 * ETH, (2, SOLVER_A): 400 * ETH, (2, SOLVER_B): 400 * ETH}
    verifier_seats = {(c.holder, c.key) for c in contributions if c.kind == "verifier" and c.round == 2}
    assert (VERIFIER_2, f"attestation {SOLVER_A} slot 1") in verifier_seats  # the planted fail stands
    assert (VERIFIER, f"attestation {SOLVER_A} slot 0") not in verifier_seats  # the lazy pass does not
    assert all(c.expected == 150 * ETH // 4 for c in contributions if c.kind == "verifier" and c.round == 2)
    slashes, pending = payout_checks.check_slashes(history)
    # the lazy pass's penalty (3 ETH, not verifierMinStake) and the unrevealed solver's stake (solverMinStake)
    assert slashes.passed, slashes.detail
    assert slashes.evidence["slashed_wei"] == 13 * ETH and pending == []


def test_an_unpaid_commitment_minted_fails_the_shares_check():
    ev = planted_run(claimed=(SOLVER_A, SOLVER_B, SOLVER_C))
    result, _ = payout_checks.check_shares(_fold(ev))
    assert not result.passed
    assert "round 2 solver shares of solver-4: the commitment is not paid work (its plant secret was not revealed" in (
        result.detail
    )
    ev = planted_run(claimed=(SOLVER_A, SOLVER_B, SOLVER_D))
    result, _ = payout_checks.check_shares(_fold(ev))
    assert not result.passed and "no eligible anchor" in result.detail


def test_a_solver_slashed_for_a_planted_fail_fails_the_slash_check():
    ev = planted_run()
    ev.step()
    ev.slash(SOLVER_A, 1, compute_solver_fault_key(1, 2, SOLVER_A))  # as if the finalized planted fail slashed it
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed
    assert (
        f"{SOLVER_A} slashed 10000000000000000000 for solver fault in round 2 without a proven fault" in result.detail
    )


def test_a_planted_pass_must_be_slashed_the_plant_penalty():
    ev = planted_run()
    key = compute_attestation_fault_key(1, 2, SOLVER_A, 0)
    ev.events = [
        with_args(e, requested=10 * ETH) if e.name == "StakeSlashed" and e.args["faultKey"].hex() == key[2:] else e
        for e in ev.events
    ]
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed
    assert "slash requested 10000000000000000000, the rules ask 3000000000000000000" in result.detail
    assert "pass on a planted commitment overturned by the reveal" in result.detail
    ev = planted_run()
    ev.events = [e for e in ev.events if not (e.name == "StakeSlashed" and e.args["account"] == VERIFIER)]
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed and "overturned by the reveal, but no slash" in result.detail


def test_an_unrevealed_report_without_its_slash_fails_the_audit():
    ev = planted_run()
    ev.events = [e for e in ev.events if not (e.name == "StakeSlashed" and e.args["account"] == SOLVER_C)]
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed
    assert "plant secret not revealed in the reveal window (reported), but no slash" in result.detail


# -- plant disputes --------------------------------------------------------------------------------


def test_a_disproven_plant_is_slashed_the_solver_stake_unpaid_and_passes_both_checks():
    history = _fold(planted_run(claimed=(SOLVER_B,), dispute="false plant"))
    shares, contributions = payout_checks.check_shares(history)
    assert shares.passed, shares.detail
    solver_pay = {(c.round, c.holder): c.expected for c in contributions if c.kind == "solver" and c.round == 2}
    # A left the round's paid commitments (Verification.onUnpaid): B, the only one left, gets the whole bucket
    assert solver_pay == {(2, SOLVER_B): 800 * ETH}
    jurors = [c for c in contributions if c.kind == "juror"]
    assert [(c.round, c.holder, c.expected, c.claimed) for c in jurors] == [(2, JUROR, 50 * ETH, True)]
    due, pending = payout_checks.expected_slashes(history)
    key = compute_solver_fault_key(1, 2, SOLVER_A)
    assert due[key].requested == 10 * ETH and "plant disproven by a jury" in due[key].why and pending == []
    slashes, _ = payout_checks.check_slashes(history)
    # the lazy pass's penalty, the unrevealed solver's stake and the false planter's stake
    assert slashes.passed, slashes.detail
    assert slashes.evidence["slashed_wei"] == 23 * ETH


def test_a_disproven_plant_without_its_slash_or_with_a_wrong_one_fails_the_audit():
    ev = planted_run(claimed=(SOLVER_B,), dispute="false plant")
    ev.events = [e for e in ev.events if not (e.name == "StakeSlashed" and e.args["account"] == SOLVER_A)]
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed
    assert "plant disproven by a jury (not the planted training), but no slash" in result.detail
    ev = planted_run(claimed=(SOLVER_B,), dispute="false plant")
    ev.events = [
        with_args(e, requested=3 * ETH) if e.name == "StakeSlashed" and e.args["account"] == SOLVER_A else e
        for e in ev.events
    ]
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed and "slash requested 3000000000000000000, the rules ask 10000000000000000000" in (
        result.detail
    )


def test_a_disproven_plant_minted_fails_the_shares_check():
    result, _ = payout_checks.check_shares(_fold(planted_run(dispute="false plant")))
    assert not result.passed
    assert "round 2 solver shares of solver-3: the commitment is not paid work (its plant was disproven by a jury)" in (
        result.detail
    )


def test_a_plant_found_true_slashes_nobody_and_a_slash_of_its_solver_is_unexplained():
    for dispute in ("true plant", "unresolved"):
        history = _fold(planted_run(dispute=dispute))
        assert payout_checks.check_shares(history)[0].passed, dispute
        slashes, _ = payout_checks.check_slashes(history)
        assert slashes.passed and slashes.evidence["slashed_wei"] == 13 * ETH, slashes.detail
    ev = planted_run(dispute="true plant")
    ev.step()
    ev.slash(SOLVER_A, 1, compute_solver_fault_key(1, 2, SOLVER_A))  # as if the lost dispute slashed the solver
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed and f"{SOLVER_A} slashed 10000000000000000000 for solver fault in round 2" in result.detail


# -- abstentions -----------------------------------------------------------------------------------


def _abstention_run() -> RunEvents:
    """Round 0 with two seats: VERIFIER passes SOLVER_A's opened commitment, VERIFIER_2 abstains and is reported."""
    ev = RunEvents(verifiersPerCommitment=2)
    for verifier in (VERIFIER, VERIFIER_2):
        ev.deposit(verifier, 2)
    ev.create()
    ev.commit(0, SOLVER_A)
    ev.seed(0)
    ev.open(0, SOLVER_A)
    ev.attest(0, SOLVER_A, VERIFIER, 0)
    ev.report_abstention(0, SOLVER_A, VERIFIER_2, 1)
    return ev


def test_an_abstention_is_slashed_the_attestation_bond():
    history = _fold(_abstention_run())
    due, _ = payout_checks.expected_slashes(history)
    key = compute_attestation_fault_key(1, 0, SOLVER_A, 1)
    assert due[key].requested == ETH and "did not attest the opened commitment" in due[key].why
    result, _ = payout_checks.check_slashes(history)
    assert result.passed and result.evidence["slashed_wei"] == ETH, result.detail


def test_an_abstention_without_its_slash_or_with_another_amount_fails_the_audit():
    ev = _abstention_run()
    ev.events = [e for e in ev.events if e.name != "StakeSlashed"]
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed and "did not attest the opened commitment, but no slash" in result.detail
    ev = _abstention_run()
    ev.events = [with_args(e, requested=10 * ETH) if e.name == "StakeSlashed" else e for e in ev.events]
    result, _ = payout_checks.check_slashes(_fold(ev))
    assert not result.passed and "the rules ask 1000000000000000000" in result.detail


def test_an_unrevealed_plant_already_slashed_for_a_fault_is_not_slashed_twice():
    """Issue 36, finding 6: reportUnrevealed slashes under the commitment's FAULT_SOLVER key, so a commitment whose
    fail was finalized first is not slashed again (StakeManager takes a key once: no second StakeSlashed)."""
    ev = planted_run()
    key = compute_solver_fault_key(1, 2, SOLVER_C)
    ev.events = [e for e in ev.events if not (e.name == "StakeSlashed" and e.args["account"] == SOLVER_C)]
    settle = next(i for i, e in enumerate(ev.events) if e.name == "UnrevealedSlashed")
    earlier = RunEvents()
    earlier.block = ev.events[settle].block_number
    earlier.stakes[(SOLVER_C, 1)] = 10 * ETH
    earlier.slash(SOLVER_C, 1, key)  # as if a fault of the commitment were proven first
    ev.events = sorted([*ev.events, *earlier.events], key=lambda e: (e.block_number, e.log_index))
    history = _fold(ev)
    (slash,) = [x for x in history.slashes if x.account == SOLVER_C]
    assert slash.fault_key == key and slash.requested == 10 * ETH
    assert payout_checks.check_slashes(history)[0].passed
