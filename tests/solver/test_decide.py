"""The solver's decisions, without a chain: one view in, one action out."""

from __future__ import annotations

from dataclasses import replace

import pytest

from protocol.hashing import Hash32
from protocol.types import ClaimStatus, Opening, RoundTimes
from solver.decide import RoundRecord, SolverView, decide_solver_action

TIMES = RoundTimes(
    round=2,
    start=1000,
    commit_end=1020,
    attest_end=1035,
    challenge_end=1040,
    finished=False,
    seed_block=500,
    open_end=1027,
)
TRAINED = RoundRecord(
    1,
    2,
    "trained",
    root=Hash32(b"\xab" * 32),
    delta_hash=Hash32(b"\xcd" * 32),
    tokens=10,
    doc_hash=Hash32(b"\xef" * 32),
)
COMMITTED = replace(TRAINED, status="committed")
BASE = SolverView(
    now=1005, times=TIMES, block=480, record=None, committed_on_chain=False, coordinator=False,
    claim_status=ClaimStatus.NONE, claim_window_end=0, open_disputes=0, unfinalized=0, unclaimed_rounds=(),
)  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "kind"),
    [
        ({}, "train"),
        ({"now": 1020}, "mark_missed"),
        ({"record": TRAINED}, "commit"),
        ({"record": TRAINED, "block": 500}, "mark_missed"),  # the seed block is reached: a commit would revert
        ({"record": TRAINED, "committed_on_chain": True}, "mark_committed"),  # crashed after sending the commit
        ({"record": TRAINED, "now": 1021}, "mark_missed"),
        ({"record": COMMITTED}, "wait"),
        # Opening: draw the seed if nobody has, then open, before open_end; after it, nothing can save the stake.
        ({"record": COMMITTED, "now": 1021}, "draw_seed"),
        ({"record": COMMITTED, "now": 1021, "seed_drawn": True}, "open"),
        ({"record": COMMITTED, "now": 1026, "seed_drawn": True}, "open"),
        ({"record": COMMITTED, "now": 1021, "seed_drawn": True, "opening": Opening.OPENED}, "wait"),
        ({"record": COMMITTED, "now": 1027, "seed_drawn": True}, "wait"),
        ({"record": replace(COMMITTED, status="unopenable"), "now": 1021, "seed_drawn": True}, "wait"),
        # Planted faults: an opened, eligible commitment's secret is revealed in its window (the node computes due).
        ({"record": COMMITTED, "now": 1036, "opening": Opening.OPENED, "reveal_due": True}, "reveal"),
        (
            {"record": COMMITTED, "now": 1036, "opening": Opening.OPENED, "reveal_due": True, "coordinator": True},
            "reveal",
        ),
        # Abstentions: after attestEnd the seats of its own opened commitment left unattested are reported, once a
        # round (the node computes due), after the reveal, before coordinating
        (
            {"record": COMMITTED, "now": 1036, "opening": Opening.OPENED, "abstention_check_due": True},
            "report_abstentions",
        ),
        (
            {
                "record": COMMITTED,
                "now": 1036,
                "opening": Opening.OPENED,
                "abstention_check_due": True,
                "reveal_due": True,
            },
            "reveal",
        ),
        (
            {
                "record": COMMITTED,
                "now": 1036,
                "opening": Opening.OPENED,
                "abstention_check_due": True,
                "coordinator": True,
            },
            "report_abstentions",
        ),
        ({"record": replace(COMMITTED, round=1)}, "train"),  # a new round began
        # Late starts: a node sits out a round it cannot finish (15 s left, 12 s of training + 4 s to commit).
        ({"round_training_ms": 10_000}, "train"),
        ({"round_training_ms": 12_000, "first_round": True}, "sit_out"),
        ({"round_training_ms": 12_000}, "mark_missed"),  # it followed the run before: it was due, and is late
        ({"now": 1020, "first_round": True}, "sit_out"),  # started after the commit window closed
        # Plants from round 0: an early anchor's round 0 trains only once the run seed is drawn (node/plants.py)
        ({"run_seed_block": 470}, "draw_run_seed"),  # draw the run seed first (the act waits for its block)
        ({"run_seed_block": 470, "round_training_ms": 12_000, "first_round": True}, "sit_out"),  # too late anyway
        ({"unclaimed_rounds": (0, 1)}, "claim_shares"),
        ({"unwithdrawn_claim_bonds": (1,)}, "withdraw_claim_bond"),
        ({"times": replace(TIMES, finished=True)}, "leave_run"),  # release the stake the run reserved
        ({"times": replace(TIMES, finished=True), "member": False}, "done"),
    ],
)
def test_solver_actions(changes, kind):
    assert decide_solver_action(replace(BASE, **changes)).kind == kind


def test_claimed_shares_come_before_new_work():
    view = replace(BASE, unclaimed_rounds=(1,), record=None)
    assert decide_solver_action(view) == decide_solver_action(view)  # pure
    assert decide_solver_action(view).round == 1


@pytest.mark.parametrize(
    ("changes", "kind"),
    [
        ({"now": 1030}, "wait"),  # challenge window still open
        ({"now": 1040, "open_disputes": 1}, "wait"),
        ({"now": 1040, "unfinalized": 2}, "finalize"),
        # settle needs every commitment opened or reported: the coordinator reports the rest first
        ({"now": 1040, "unfinalized": 2, "unresolved": ("0x" + "11" * 20,)}, "report_unopened"),
        ({"now": 1040, "open_disputes": 1, "unresolved": ("0x" + "11" * 20,)}, "wait"),
        ({"now": 1040}, "post_claim"),
        ({"now": 1041, "claim_status": ClaimStatus.POSTED, "claim_window_end": 1045}, "wait"),
        ({"now": 1045, "claim_status": ClaimStatus.POSTED, "claim_window_end": 1045}, "settle"),
        ({"now": 1046, "claim_status": ClaimStatus.UPHELD, "claim_window_end": 1045}, "settle"),
        ({"now": 1046, "claim_status": ClaimStatus.CHALLENGED, "claim_window_end": 1045}, "wait"),
    ],
)
def test_coordinator_actions(changes, kind):
    view = replace(BASE, coordinator=True, record=COMMITTED, **changes)
    assert decide_solver_action(view).kind == kind


def test_waits_are_bounded_by_the_next_deadline():
    view = replace(BASE, coordinator=True, record=COMMITTED, now=1030)
    assert decide_solver_action(view).seconds == 10
