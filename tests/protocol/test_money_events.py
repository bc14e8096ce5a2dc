"""What touched one account's money, from hand-built contract events (protocol/money_events.py; no chain)."""

from __future__ import annotations

from protocol.money_events import JurySeat, Seat, compute_money_report
from tests.history_builder import CONFIG, ETH, JUROR, SOLVER_A, SOLVER_B, VERIFIER, RunEvents, honest_two_rounds

LATE = 10**10
"""A chain time after every window of every hand-built run."""


def _report(ev: RunEvents, address: str, now: int = LATE, seats: tuple[Seat, ...] = (), jury=()):
    return compute_money_report(ev.events, ev.run_id, address, ev.timestamps, seats, now, jury_seats=jury)


def _round_start(ev: RunEvents, r: int) -> int:
    return next(e.args["start"] for e in ev.events if e.name == "RoundStarted" and e.args["round"] == r)


def _three_rounds_with_b_missing(missed: tuple[int, ...]) -> RunEvents:
    """SOLVER_A and SOLVER_B joined in round 0; B commits nothing in the rounds `missed`."""
    ev = RunEvents(maxRounds=3)
    ev.create()
    ev.join(SOLVER_A)
    ev.join(SOLVER_B)
    ev.register(VERIFIER)
    for r in range(3):
        play_round(ev, r, [s for s in (SOLVER_A, SOLVER_B) if not (s == SOLVER_B and r in missed)])
    return ev


def play_round(ev: RunEvents, r: int, solvers: list[str], after_commits=lambda: None) -> None:
    """Round `r` in which `solvers` commit, open and pass, then θ is claimed and the round settled; `after_commits`
    adds events between the commitments and the seed."""
    for solver in solvers:
        ev.commit(r, solver)
    after_commits()
    ev.seed(r)
    for solver in solvers:
        ev.open(r, solver)
        ev.attest(r, solver)
        ev.finalize(r, solver)
    ev.claim_theta(r)
    ev.settle(r)


def test_an_honest_solver_committed_and_was_paid_and_missed_nothing():
    report = _report(honest_two_rounds(), SOLVER_A)
    assert [e.round for e in report.of_kind("committed")] == [0, 1]
    minted = [e for e in report.of_kind("paid") if e.what == "solver shares minted"]
    assert [(e.round, e.shares) for e in minted] == [(0, 400 * ETH), (1, 400 * ETH)]
    assert not report.of_kind("missed") and not report.of_kind("slashed") and not report.of_kind("failed")
    assert report.health_reasons == []


def test_unclaimed_shares_are_not_reported_as_paid():
    report = _report(honest_two_rounds(unclaimed=((1, SOLVER_A),)), SOLVER_A)
    assert [e.round for e in report.of_kind("paid") if e.what == "solver shares minted"] == [0]


def test_a_round_a_member_did_not_commit_in_is_a_missed_commit_window_once_it_closed():
    ev = _three_rounds_with_b_missing(missed=(1, 2))
    commit_end = _round_start(ev, 1) + CONFIG["commitWindow"]
    assert not _report(ev, SOLVER_B, now=commit_end - 1).of_kind("missed")
    report = _report(ev, SOLVER_B, now=commit_end)
    assert [(e.round, e.what) for e in report.of_kind("missed")] == [(1, "commit window")]
    assert report.health_reasons and "commit window of round 1" in report.health_reasons[0]
    assert "no commitment before the commit window closed" in report.health_reasons[0]
    assert [e.round for e in _report(ev, SOLVER_B).current_misses] == [1, 2]


def test_a_missed_window_stops_counting_once_a_later_round_succeeds():
    report = _report(_three_rounds_with_b_missing(missed=(1,)), SOLVER_B)
    assert [e.round for e in report.of_kind("missed")] == [1]  # still listed (the round earned nothing) ...
    assert report.current_misses == () and report.health_reasons == []  # ... but no longer unhealthy


def test_a_solver_that_joins_during_a_round_is_not_due_in_it():
    ev = RunEvents()
    ev.create()
    ev.join(SOLVER_A)  # after round 0 started: it may sit round 0 out
    assert not _report(ev, SOLVER_A).of_kind("missed")


def test_a_failed_and_slashed_solver_sees_the_fail_the_slash_its_amount_and_why():
    ev = RunEvents()
    ev.deposit(SOLVER_B, 1)
    ev.create()
    ev.join(SOLVER_B)
    ev.commit(0, SOLVER_B)
    ev.seed(0)
    ev.open(0, SOLVER_B)
    ev.attest(0, SOLVER_B, fail=True)
    ev.finalize(0, SOLVER_B, fail=True)
    report = _report(ev, SOLVER_B)
    (failed,) = report.of_kind("failed")
    assert failed.by == VERIFIER and "sample 1 (segment 2)" in failed.reason
    (slash,) = report.of_kind("slashed")
    assert slash.amount_wei == 10 * ETH and slash.what == "solver fault" and slash.round == 0
    assert slash.by == "Verification.SolverFaultProven"
    assert "fail attestation on the commitment stood" in slash.reason
    assert report.slashed_wei == 10 * ETH
    assert not _report(ev, VERIFIER).of_kind("slashed")  # the verifier's report holds only its own money


def test_an_unopened_commitment_is_a_missed_open_window_and_a_slash_by_run_registry():
    ev = RunEvents()
    ev.deposit(SOLVER_B, 1)
    ev.create()
    ev.join(SOLVER_B)
    ev.commit(0, SOLVER_B)
    ev.seed(0)
    ev.report_unopened(0, SOLVER_B)
    report = _report(ev, SOLVER_B)
    assert [(e.round, e.what) for e in report.of_kind("missed")] == [(0, "open window")]
    (slash,) = report.of_kind("slashed")
    assert slash.by == "RunRegistry.UnopenedSlashed" and "not opened" in slash.reason


def _opened_round_zero(attested: bool) -> RunEvents:
    ev = RunEvents()
    ev.create()
    ev.join(SOLVER_A)
    ev.register(VERIFIER)
    ev.commit(0, SOLVER_A)
    ev.seed(0)
    ev.open(0, SOLVER_A)
    if attested:
        ev.attest(0, SOLVER_A)
        ev.finalize(0, SOLVER_A)
    return ev


def test_an_assigned_seat_left_unattested_is_a_missed_attest_window():
    seats = (Seat(0, SOLVER_A, 0),)
    ev = _opened_round_zero(attested=False)
    attest_end = _round_start(ev, 0) + CONFIG["commitWindow"] + CONFIG["attestWindow"]
    assert not _report(ev, VERIFIER, now=attest_end - 1, seats=seats).of_kind("missed")
    report = _report(ev, VERIFIER, now=attest_end, seats=seats)
    (missed,) = report.of_kind("missed")
    assert (missed.round, missed.what) == (0, "attest window") and SOLVER_A in missed.reason
    assert "attest window of round 0" in report.health_reasons[0]


def test_a_reported_abstention_is_a_slash_of_the_bond_by_verification():
    seats = (Seat(0, SOLVER_A, 0),)
    ev = _opened_round_zero(attested=False)
    ev.stakes[(VERIFIER, 2)] = 10 * ETH
    ev.report_abstention(0, SOLVER_A, VERIFIER, 0, reporter=SOLVER_A)
    report = _report(ev, VERIFIER, seats=seats)
    (slashed,) = report.of_kind("slashed")
    assert (slashed.what, slashed.amount_wei, slashed.by) == ("abstention", ETH, "Verification.AbstentionReported")
    assert "not attested by attestEnd" in slashed.reason
    assert [e.what for e in report.of_kind("missed")] == ["attest window"]


def test_an_attested_seat_is_no_miss_and_its_bond_back_is_paid():
    report = _report(_opened_round_zero(attested=True), VERIFIER, seats=(Seat(0, SOLVER_A, 0),))
    assert not report.of_kind("missed")
    assert [e.what for e in report.of_kind("committed")] == ["attestation"]
    (bond,) = report.of_kind("paid")
    assert (bond.what, bond.amount_wei) == ("attestation bond returned", CONFIG["attestationBond"])


def test_a_seat_of_a_commitment_never_opened_is_no_miss():
    ev = RunEvents()
    ev.create()
    ev.join(SOLVER_A)
    ev.commit(0, SOLVER_A)
    ev.seed(0)
    ev.report_unopened(0, SOLVER_A)
    assert not _report(ev, VERIFIER, seats=(Seat(0, SOLVER_A, 0),)).of_kind("missed")


def test_every_event_key_is_unique():
    ev = _three_rounds_with_b_missing(missed=(1,))
    for address in (SOLVER_A, SOLVER_B, VERIFIER):
        keys = [e.key for e in _report(ev, address, seats=(Seat(1, SOLVER_A, 0),)).events]
        assert len(keys) == len(set(keys)), address


def _disputed_pass(decided: bool | None) -> tuple[RunEvents, str]:
    """Round 0 of SOLVER_A passed and challenged; then a jury drawn and its verdict (seat 0 signs) when `decided`,
    silent juries until the dispute expired when False, nothing yet when None."""
    ev = _opened_round_zero(attested=True)
    dispute = ev.challenge_pass(0, SOLVER_A)
    if decided:
        ev.decide(dispute, challenger_wins=False)
    elif decided is False:
        ev.step()
        ev.emit("Disputes", "JuryDrawn", disputeId=bytes.fromhex(dispute[2:]), seed=b"\x00" * 32, appeals=0,
                snapshotBlock=0, poolSize=3, seats=3, eligible=7)  # fmt: skip
        ev.expire(dispute)
    return ev, dispute


def test_a_juror_seat_that_signed_the_verdict_voted_and_one_that_did_not_missed():
    ev, dispute = _disputed_pass(decided=True)
    signed = _report(ev, JUROR, seats=(), jury=(JurySeat(dispute, 0, 0),))
    assert [(e.kind, e.what) for e in signed.events] == [("committed", "jury vote")]
    silent = _report(ev, JUROR, jury=(JurySeat(dispute, 0, 1),))
    (missed,) = silent.of_kind("missed")
    assert missed.what == "jury vote" and "without this juror's signature" in missed.reason
    assert silent.health_reasons == []  # the chain cannot tell a late vote from none: reported, never unhealthy


def test_a_silent_jury_is_a_missed_vote_and_an_undecided_one_is_not_yet():
    ev, dispute = _disputed_pass(decided=False)
    (missed,) = _report(ev, JUROR, jury=(JurySeat(dispute, 0, 2),)).of_kind("missed")
    assert "no verdict before its deadline" in missed.reason
    ev, dispute = _disputed_pass(decided=None)
    assert not _report(ev, JUROR, jury=(JurySeat(dispute, 0, 0),)).events
    assert not _report(ev, JUROR, jury=(JurySeat("0x" + "ee" * 32, 0, 0),)).events  # another run's dispute
