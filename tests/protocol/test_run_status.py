"""protocol/history/status.py: where a run stands, from its folded history (what `gradledger run status` prints)."""

from __future__ import annotations

from protocol.history.fold import fold_run_history, get_round_phase
from protocol.history.status import get_commitment_status, get_run_status
from tests.history_builder import RunEvents, attested_pass, honest_two_rounds, planted_run
from tests.history_events import SOLVER_A, SOLVER_B, SOLVER_C, SOLVER_D, VERIFIER, time_of


def test_get_run_status_of_a_settled_run_counts_every_round():
    history = fold_run_history(honest_two_rounds().events, 1)
    status = get_run_status(history, time_of(10_000))
    assert [(r.round, r.commitments, r.accepted, r.passes, r.fails, r.settled) for r in status.rounds] == [
        (0, 2, 2, 2, 0, True),
        (1, 2, 2, 2, 0, True),
    ]
    assert status.rounds[0].next_theta == status.rounds[1].theta  # θ_1 settled in round 0 is round 1's start
    assert status.current_round == 2 and status.disputes == () and status.slashed_wei == 0
    assert all(r.phase == "settled" for r in status.rounds)
    assert status.to_json()["rounds"][1]["accepted"] == 2


def test_get_run_status_mid_round_names_the_phase_and_its_deadlines():
    ev = RunEvents()
    for account in (SOLVER_A, SOLVER_B):
        ev.deposit(account, 1)
    ev.deposit(VERIFIER, 2)
    ev.create()
    ev.join(SOLVER_A)
    ev.commit(0, SOLVER_A)
    history = fold_run_history(ev.events, 1)
    rnd = get_run_status(history, history.rounds[0].start_time + 1).rounds[0]
    assert (rnd.commitments, rnd.accepted, rnd.settled) == (1, 0, False)
    assert rnd.commit_end == rnd.start + history.terms.commit_window
    for now, phase in ((rnd.start + 1, "commit window"), (rnd.commit_end, "attest window")):
        status = get_run_status(history, now)
        assert status.phase == status.rounds[0].phase == phase == get_round_phase(history, 0, now)
        assert not status.finished and status.current_round == 0


def test_get_commitment_status_names_what_became_of_each_commitment():
    history = fold_run_history(planted_run().events, 1)
    statuses = {(rnd.index, c.solver): get_commitment_status(rnd, c) for rnd in history.rounds for c in rnd.commitments}
    assert statuses == {
        (1, SOLVER_D): "accepted",
        (2, SOLVER_A): "planted",  # paid, its Δ kept out of θ_3 on purpose
        (2, SOLVER_B): "accepted",
        (2, SOLVER_C): "failed",  # its plant never revealed: slashed, unpaid
        (2, SOLVER_D): "failed",  # its anchor too young in a planting run: unpaid, not in θ_3
    }
    passed = fold_run_history(attested_pass().events, 1).rounds[0]  # one seat, its pass: accepted as the tally stands
    assert get_commitment_status(passed, passed.commitments[0]) == "accepted" and not passed.settled
    ev = RunEvents()
    ev.deposit(SOLVER_A, 1)
    ev.create()
    ev.commit(0, SOLVER_A)
    waiting = fold_run_history(ev.events, 1).rounds[0]
    assert get_commitment_status(waiting, waiting.commitments[0]) == "pending"  # not attested yet
