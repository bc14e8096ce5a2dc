"""protocol.history: planted faults folded from hand-built contract events -- the plant rules of pay and acceptance
(`protocol.types.is_commitment_accepted/is_commitment_paid` over the folded seats), plant disputes, forfeits, and the
reveal window a planting round's phase shows."""

from __future__ import annotations

import pytest

from protocol.history.events import (
    HistoryError,
    compute_attestation_fault_key,
    compute_solver_fault_key,
)
from protocol.history.fold import fold_run_history, get_round_phase, get_round_times
from protocol.ledger import compute_ledger
from protocol.types import PlantPay, PlantTerms
from tests.history_builder import (
    CHALLENGER,
    ETH,
    SOLVER_A,
    SOLVER_B,
    SOLVER_C,
    SOLVER_D,
    TOKENS,
    VERIFIER,
    VERIFIER_2,
    RunEvents,
    planted_run,
    time_of,
    with_args,
)

# -- planted faults ----------------------------------------------------------------------------------


def _sorted(*solvers: str) -> tuple[str, ...]:
    return tuple(sorted(solvers, key=lambda a: bytes.fromhex(a[2:])))


def test_planted_round_folds_to_the_plant_rules_accepted_and_paid():
    ev = planted_run()
    h = fold_run_history(ev.events, 1, ev.timestamps)
    assert h.plants.terms == PlantTerms(2000, ETH, 3 * ETH)
    assert [(a.solver, a.round) for a in h.plants.anchors] == [
        (SOLVER_A, 0),
        (SOLVER_B, 0),
        (SOLVER_C, 0),
        (SOLVER_D, 1),
    ]
    # 10 ETH - the jackpot + the unrevealed solver's stake + the lazy pass's bond and penalty (released once settled)
    assert h.plants.pool == 10 * ETH - ETH + 10 * ETH + ETH + 3 * ETH
    # round 1 cannot be planted: a solver without an anchor is paid as usual
    early = h.rounds[1]
    assert not early.plants_on and early.pay_of(SOLVER_D) == PlantPay.NORMAL
    assert early.accepted == early.paid == (SOLVER_D,)
    rnd = h.rounds[2]
    assert rnd.plants_on
    pays = {c.solver: rnd.pay_of(c.solver) for c in rnd.commitments}
    assert pays == {
        SOLVER_A: PlantPay.PLANTED,
        SOLVER_B: PlantPay.NORMAL,
        SOLVER_C: PlantPay.UNPAID,  # eligible, not revealed (and reported)
        SOLVER_D: PlantPay.UNPAID,  # its anchor is one round old
    }
    eligible = {c.solver: c.plant_eligible for c in rnd.commitments}
    assert eligible == {SOLVER_A: True, SOLVER_B: True, SOLVER_C: True, SOLVER_D: False}
    assert [c.solver for c in rnd.planted] == [SOLVER_A]
    assert rnd.commitment_of(SOLVER_C).unrevealed_reported and not rnd.commitment_of(SOLVER_C).revealed
    # the outer step takes only B's Δ: A's passes were overturned, C and D are unpaid although their tally accepts
    assert rnd.accepted == (SOLVER_B,)
    assert rnd.is_tally_accepted(SOLVER_C) and rnd.is_tally_accepted(SOLVER_D) and not rnd.is_tally_accepted(SOLVER_A)
    # the planting solver is paid as accepted; C and D never are
    assert rnd.paid == _sorted(SOLVER_A, SOLVER_B)
    # Verification's paidCommitments: A (planted, attested) and B; C left it when its missing reveal was reported, D
    # (no anchor old enough) never entered it
    assert rnd.paid_commitments == 2
    assert [rnd.is_marked_unpaid(x) for x in (SOLVER_A, SOLVER_B, SOLVER_C, SOLVER_D)] == [False, False, True, True]
    # totalChecks: A's fail stands, its lazy pass does not; B, C, D's passes
    assert rnd.standing_checks == 4


def test_planted_pass_is_overturned_with_no_dispute_and_the_fail_earns_the_jackpot():
    ev = planted_run()
    h = fold_run_history(ev.events, 1, ev.timestamps)
    rnd = h.rounds[2]
    lazy, honest = rnd.attestations_of(SOLVER_A)
    assert (lazy.verifier, lazy.kind, lazy.state, lazy.planted) == (VERIFIER, "pass", "overturned", True)
    assert lazy.bond_forfeited == ETH and lazy.bond_returned == 0 and lazy.jackpot == 0
    # its bond and the 3 ETH penalty were held by Plants until the round settled, then released into the pool
    assert (lazy.forfeit, lazy.forfeit_release) == (4 * ETH, "pool") and rnd.forfeits_held == 0
    assert not lazy.is_pass_counted and not lazy.is_fault_counted  # Verification leaves `faults` as it was
    assert (honest.verifier, honest.kind, honest.state, honest.planted) == (VERIFIER_2, "fail", "finalized", True)
    assert honest.jackpot == ETH and honest.bond_returned == ETH and honest.is_fault_counted
    assert rnd.lazy_plant_passes == (lazy,) and rnd.jackpots == ETH and h.jackpots == {VERIFIER_2: ETH}
    assert rnd.disputes == ()
    slashes = {(x.account, x.fault, x.requested, x.round) for x in h.slashes}
    assert slashes == {(VERIFIER, "wrong attestation", 3 * ETH, 2), (SOLVER_C, "unrevealed plant", 10 * ETH, 2)}
    keys = {x.account: x.fault_key for x in h.slashes}
    assert keys[VERIFIER] == compute_attestation_fault_key(1, 2, SOLVER_A, 0)
    # an unrevealed plant is slashed under the commitment's own key: once, whatever else proves its fault
    assert keys[SOLVER_C] == compute_solver_fault_key(1, 2, SOLVER_C)
    assert "reporter" in {p.address: p.roles for p in h.participants}[CHALLENGER]


def test_a_reveal_that_is_not_planted_or_a_run_without_terms_changes_nothing():
    ev = planted_run()
    ev.events = [with_args(e, planted=False) if e.name == "PlantRevealed" else e for e in ev.events]
    ev.events = [e for e in ev.events if e.name not in ("PlantApplied", "JackpotPaid")]
    rnd = fold_run_history(ev.events, 1, ev.timestamps).rounds[2]
    assert rnd.pay_of(SOLVER_A) == PlantPay.NORMAL and not rnd.planted
    assert {a.state for a in rnd.attestations_of(SOLVER_A)} == {"attested", "finalized"}
    assert not rnd.is_accepted(SOLVER_A) and not rnd.is_paid(SOLVER_A)  # a standing fail: the usual rules
    # planting never set up (no terms): anchors and reveals do not gate anything
    ev = planted_run()
    ev.events = [e for e in ev.events if e.name != "PlantTermsSet"]
    h = fold_run_history(ev.events, 1, ev.timestamps)
    rnd = h.rounds[2]
    assert h.plants.terms is None and not rnd.plants_on
    assert rnd.pay_of(SOLVER_C) == rnd.pay_of(SOLVER_D) == PlantPay.NORMAL
    assert rnd.accepted == rnd.paid == _sorted(SOLVER_B, SOLVER_C, SOLVER_D)


def test_jackpot_outside_a_planted_reveal_is_an_error():
    ev = planted_run()
    ev.events = [e for e in ev.events if e.name != "PlantRevealed" or e.args["solver"] != SOLVER_A]
    with pytest.raises(HistoryError, match="outside a planted reveal"):
        fold_run_history(ev.events, 1, ev.timestamps)


# -- plant disputes ----------------------------------------------------------------------------------


def test_a_plant_disproven_by_a_jury_is_unpaid_not_accepted_and_its_solver_slashed():
    ev = planted_run(claimed=(SOLVER_B,), dispute="false plant")
    h = fold_run_history(ev.events, 1, ev.timestamps)
    rnd = h.rounds[2]
    (d,) = rnd.disputes
    assert rnd.plant_disputes == (d,)
    assert (d.kind, d.round, d.solver, d.slot, d.segment_index, d.challenger) == (
        "plant",
        2,
        SOLVER_A,
        None,
        2,
        CHALLENGER,
    )
    assert (d.status, d.challenger_wins, d.winner, d.total, d.bond_returned) == (
        "executed",
        True,
        CHALLENGER,
        10 * ETH,
        2 * ETH,
    )
    a = rnd.commitment_of(SOLVER_A)
    assert a.planted and a.disproven and rnd.disproven_plants == (a,) and rnd.planted == (a,)
    # Plants.payOf: unpaid once disproven; neither paid as planted nor accepted into θ
    assert rnd.pay_of(SOLVER_A) == PlantPay.UNPAID
    assert not rnd.is_paid(SOLVER_A) and not rnd.is_accepted(SOLVER_A)
    assert rnd.paid == (SOLVER_B,) and rnd.accepted == (SOLVER_B,)
    # Verification.onUnpaid takes A out of the pay denominator (B alone is paid, the whole bucket); its seats stay as
    # the reveal left them (the lazy pass overturned, the fail standing with its jackpot)
    assert rnd.paid_commitments == 1 and rnd.standing_checks == 4
    assert [x.state for x in rnd.attestations_of(SOLVER_A)] == ["overturned", "finalized"] and rnd.jackpots == ETH
    # the pass was right after all: its held forfeit (bond + penalty) went back to VERIFIER, not into the pool
    lazy = rnd.attestations_of(SOLVER_A)[0]
    assert (lazy.forfeit, lazy.forfeit_release) == (4 * ETH, "returned")
    assert h.plants.pool == 10 * ETH - ETH + 10 * ETH
    # the solver slashed its solverMinStake under FAULT_SOLVER (the same key as any proven fault of the commitment)
    (slash,) = [x for x in h.slashes if x.account == SOLVER_A]
    assert (slash.fault, slash.round, slash.requested, slash.amount) == ("solver fault", 2, 10 * ETH, 10 * ETH)
    assert slash.fault_key == compute_solver_fault_key(1, 2, SOLVER_A)
    assert rnd.juror_votes == 1 and [c.kind for c in h.share_claims if c.round == 2] == ["solver", "juror"]
    assert "challenger" in {p.address: p.roles for p in h.participants}[CHALLENGER]


def test_a_plant_found_true_or_left_unresolved_stays_paid_as_planted():
    for dispute, status, winner in (("true plant", "executed", SOLVER_A), ("unresolved", "expired", None)):
        ev = planted_run(dispute=dispute)
        h = fold_run_history(ev.events, 1, ev.timestamps)
        rnd = h.rounds[2]
        (d,) = rnd.plant_disputes
        assert (d.status, d.winner) == (status, winner), dispute
        assert not rnd.commitment_of(SOLVER_A).disproven and rnd.disproven_plants == ()
        assert rnd.pay_of(SOLVER_A) == PlantPay.PLANTED and rnd.paid == _sorted(SOLVER_A, SOLVER_B)
        assert not any(x.account == SOLVER_A for x in h.slashes), dispute
    assert d.appeals == 2 and d.bond_returned == 2 * ETH * 8 // 10


def test_an_open_plant_dispute_holds_the_round():
    ev = planted_run()
    ev.events = ev.events[: next(i for i, e in enumerate(ev.events) if e.name == "UnrevealedSlashed") + 1]
    ev.challenge_plant(2, SOLVER_A, segment=1)
    h = fold_run_history(ev.events, 1, ev.timestamps)
    rnd = h.rounds[2]
    (d,) = rnd.disputes
    assert (d.kind, d.status, d.segment_index) == ("plant", "open", 1)
    assert rnd.pay_of(SOLVER_A) == PlantPay.PLANTED  # until a verdict says otherwise
    assert get_round_phase(h, 2, time_of(ev.block)) == "dispute open"


def test_a_plant_disproven_without_a_plant_dispute_is_an_error():
    ev = planted_run(claimed=(SOLVER_B,), dispute="false plant")
    ev.events = [e for e in ev.events if e.name != "PlantChallenged"]
    with pytest.raises(HistoryError, match="disproven without a plant dispute"):
        fold_run_history(ev.events, 1, ev.timestamps)


def test_a_plant_challenge_bond_enters_the_ledger():
    plain, disputed = planted_run(), planted_run(dispute="unresolved")
    bonds = [compute_ledger(ev.events).by_kind.get("challenge bonds", 0) for ev in (plain, disputed)]
    assert bonds == [0, 2 * ETH]


# -- issue 36: pay per commitment, abstentions, held forfeits, per-segment plant disputes ----------------------------


def test_solver_pay_ignores_declared_tokens():
    """Every paid commitment earns bucket // paidCommitments: a solver declaring more tokens gets no larger share."""
    ev = RunEvents()
    ev.create()
    ev.commit(0, SOLVER_A, tokens=TOKENS * 1000)
    ev.commit(0, SOLVER_B)
    ev.seed(0)
    ev.attest(0, SOLVER_A)
    ev.attest(0, SOLVER_B)
    rnd = fold_run_history(ev.events, 1, ev.timestamps).rounds[0]
    assert rnd.paid == _sorted(SOLVER_A, SOLVER_B) and rnd.paid_commitments == 2


def test_a_missed_reveal_nobody_reported_stays_counted_but_is_never_paid():
    ev = planted_run()
    ev.events = [e for e in ev.events if e.name not in ("UnrevealedSlashed", "CommitmentUnpaid")]
    ev.events = [e for e in ev.events if not (e.name == "StakeSlashed" and e.args["account"] == SOLVER_C)]
    rnd = fold_run_history(ev.events, 1, ev.timestamps).rounds[2]
    assert rnd.pay_of(SOLVER_C) == PlantPay.UNPAID and not rnd.is_paid(SOLVER_C)
    assert rnd.is_counted_paid(SOLVER_C) and rnd.paid_commitments == 3  # A, B and C: C's share is never minted


def test_an_abstention_slashes_the_seat_verifier_the_bond_into_the_reward_pool():
    ev = RunEvents(verifiersPerCommitment=2)
    ev.deposit(SOLVER_A, 1)
    ev.deposit(VERIFIER, 2)
    ev.deposit(VERIFIER_2, 2)
    ev.create()
    ev.commit(0, SOLVER_A)
    ev.seed(0)
    ev.open(0, SOLVER_A)
    ev.attest(0, SOLVER_A, VERIFIER, 0)
    before = compute_ledger(ev.events).implied_balance
    ev.report_abstention(0, SOLVER_A, VERIFIER_2, 1, reporter=SOLVER_A)
    h = fold_run_history(ev.events, 1, ev.timestamps)
    rnd = h.rounds[0]
    (x,) = rnd.abstentions
    assert (x.solver, x.slot, x.verifier, x.reporter, x.taken) == (SOLVER_A, 1, VERIFIER_2, SOLVER_A, ETH)
    # an abstention is no attestation: it does not count, pay or block
    assert len(rnd.attestations) == 1 and rnd.standing_checks == 1 and rnd.paid == (SOLVER_A,)
    (slash,) = h.slashes
    assert (slash.account, slash.fault, slash.requested, slash.amount, slash.slot) == (
        VERIFIER_2,
        "abstention",
        ETH,
        ETH,
        1,
    )
    assert slash.fault_key == compute_attestation_fault_key(1, 0, SOLVER_A, 1)
    assert h.revenue_total("pool funded") == ETH
    assert "reporter" in {p.address: p.roles for p in h.participants}[SOLVER_A]
    # stake moved into the reward pool: ETH stays inside the protocol
    assert compute_ledger(ev.events).implied_balance == before


def test_a_forfeit_is_held_until_released_and_counts_in_no_pool_meanwhile():
    ev = planted_run()
    ev.events = [e for e in ev.events if e.name != "PlantForfeitReleased"]
    h = fold_run_history(ev.events, 1, ev.timestamps)
    rnd = h.rounds[2]
    lazy = rnd.attestations_of(SOLVER_A)[0]
    assert (lazy.forfeit, lazy.forfeit_release) == (4 * ETH, None) and rnd.forfeits_held == 4 * ETH
    assert h.plants.pool == 10 * ETH - ETH + 10 * ETH  # not in the pool until released
    # bond and penalty were already inside the protocol (an attestation bond, a stake): the ledger is unchanged
    assert compute_ledger(ev.events).implied_balance == compute_ledger(planted_run().events).implied_balance


def test_plant_disputes_are_per_segment_and_the_second_can_disprove_the_plant():
    """The planter disputes its own plant over a segment it did train as planted and loses; that no longer uses up
    the check: a whistleblower's dispute of another segment disproves the plant."""
    ev = planted_run(claimed=(SOLVER_B,), dispute="false plant", own_dispute=True)
    h = fold_run_history(ev.events, 1, ev.timestamps)
    rnd = h.rounds[2]
    own, other = rnd.plant_disputes
    assert own.dispute_id != other.dispute_id
    assert [(d.segment_index, d.challenger, d.winner) for d in (own, other)] == [
        (0, SOLVER_A, SOLVER_A),
        (2, CHALLENGER, CHALLENGER),
    ]
    assert rnd.commitment_of(SOLVER_A).disproven and rnd.pay_of(SOLVER_A) == PlantPay.UNPAID
    assert rnd.paid_commitments == 1 and rnd.paid == (SOLVER_B,)


def test_plant_terms_after_fund_pool_count_only_what_set_terms_brought():
    """Issue 36, finding 9 (the attack): fundPool before setTerms. PlantTermsSet reported the pool (fundPool's ETH
    included), which the ledger added on top of PlantPoolFunded: the fund counted twice, the audit's balance check
    off by its amount. The ledger now adds PlantTermsSet.funded (msg.value)."""
    ev = RunEvents()
    ev.create()
    ev.fund_plant_pool(5 * ETH)
    ev.set_plant_terms(pool=10 * ETH)
    (terms_set,) = [e for e in ev.events if e.name == "PlantTermsSet"]
    assert (terms_set.args["funded"], terms_set.args["pool"]) == (10 * ETH, 15 * ETH)
    ledger = compute_ledger(ev.events)
    assert ledger.by_kind["plant pools"] == 15 * ETH
    assert ledger.implied_balance == 10 * ETH + 15 * ETH  # the reward pool and the plant pool, each once
    assert fold_run_history(ev.events, 1, ev.timestamps).plants.pool == 15 * ETH


def test_terms_set_before_the_start_put_every_round_under_the_plant_rules():
    """Plants from round 0 (issue 37): terms set before the start (PlantTermsSet.seedBlock != 0) make rounds 0 and 1
    planting rounds too; an anchor registered before the start is eligible from round 0, a later one only two rounds
    after its own, and a commitment without an eligible anchor in a planting round is unpaid."""
    ev = planted_run()
    ev.events = [with_args(e, seedBlock=7) if e.name == "PlantTermsSet" else e for e in ev.events]
    ev.events = [
        with_args(e, early=True) if e.name == "PlantAnchorSet" and e.args["round"] == 0 else e for e in ev.events
    ]
    h = fold_run_history(ev.events, 1, ev.timestamps)
    assert h.plants.seed_block == 7
    assert {a.solver: a.early for a in h.plants.anchors} == {
        SOLVER_A: True, SOLVER_B: True, SOLVER_C: True, SOLVER_D: False,
    }  # fmt: skip
    first = h.rounds[1]
    assert first.plants_on
    # SOLVER_D anchored in round 1, after the start: its round 1 is a planting round it cannot be planted in, unpaid
    assert not first.commitment_of(SOLVER_D).plant_eligible and first.pay_of(SOLVER_D) == PlantPay.UNPAID
    assert first.paid == ()
    # round 2 folds as before: the early anchors are eligible, SOLVER_D's anchor is still one round old
    eligible = {c.solver: c.plant_eligible for c in h.rounds[2].commitments}
    assert eligible == {SOLVER_A: True, SOLVER_B: True, SOLVER_C: True, SOLVER_D: False}
    # the same early anchors under terms set after the start: rounds 0 and 1 follow the usual rules
    ev = planted_run()
    ev.events = [
        with_args(e, early=True) if e.name == "PlantAnchorSet" and e.args["round"] == 0 else e for e in ev.events
    ]
    first = fold_run_history(ev.events, 1, ev.timestamps).rounds[1]
    assert not first.plants_on and first.pay_of(SOLVER_D) == PlantPay.NORMAL and first.paid == (SOLVER_D,)


def test_a_planting_round_shows_its_reveal_window_between_attest_end_and_the_challenge_windows_middle():
    """get_round_phase names the reveal window (protocol.planting.is_in_reveal_window over get_round_times, the
    windows RunRegistry.roundTimes gives) only in a round whose pay follows the plant rules."""
    ev = RunEvents()  # commit 30 s, attest 15 s, challenge 4 s: the reveal window is [start + 45, start + 47)
    ev.create()
    ev.set_plant_terms(seed_block=7)  # set before the start: round 0 is a planting round
    ev.join(SOLVER_A)
    ev.set_anchor(SOLVER_A, 0, early=True)
    h = fold_run_history(ev.events, 1, ev.timestamps)
    rnd = h.rounds[0]
    assert rnd.plants_on
    start = rnd.start_time
    times = get_round_times(h, 0)
    assert (times.commit_end, times.attest_end, times.challenge_end) == (start + 30, start + 45, start + 49)
    assert times.open_end == start + 30 + 15 // 2 and not times.finished
    phases = [get_round_phase(h, 0, start + dt) for dt in (44, 45, 46, 47, 48, 49)]
    assert phases == [
        "attest window", "reveal window", "reveal window", "challenge window", "challenge window", "awaiting θ claim",
    ]  # fmt: skip
    unplanted = fold_run_history([with_args(e, rateBps=0) if e.name == "PlantTermsSet" else e for e in ev.events], 1)
    assert not unplanted.rounds[0].plants_on
    assert get_round_phase(unplanted, 0, start + 45) == "challenge window", "no plant, no reveal window"
