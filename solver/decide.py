"""What a solver node does next: a pure function of what it read from the chain and its disk.

The node loop is read -> `decide_solver_action` -> act. Everything here is a plain value, so
the decisions are unit-tested without a chain (tests/solver/test_decide.py).

Round r of a run (times from RunRegistry.roundTimes):
    [start, commit_end)        train H steps from θ_r, then commit (once)
    [commit_end, challenge_end) verifiers attest, anyone may challenge
    after challenge_end        a coordinator finalizes attestations, posts the θ_(r+1) claim,
                               and settles once the claim's window has closed
Every solver claims its shares for each settled round in which its work was accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from protocol.adapters.contracts import ClaimStatus, RoundTimes

RoundStatus = Literal["trained", "committed", "missed"]


@dataclass(frozen=True)
class RoundRecord:
    """What this node durably knows about one of its rounds (stored in SQLite)."""

    run_id: int
    round: int
    status: RoundStatus
    theta_hash: str = ""
    root: str = ""
    delta_hash: str = ""
    tokens: int = 0
    doc_hash: str = ""
    commit_tx: str = ""


@dataclass(frozen=True)
class SolverView:
    now: int
    times: RoundTimes
    record: RoundRecord | None
    committed_on_chain: bool
    coordinator: bool
    claim_status: ClaimStatus
    claim_window_end: int
    open_disputes: int
    unfinalized: int
    unclaimed_rounds: tuple[int, ...]
    unwithdrawn_claim_bonds: tuple[int, ...] = ()


@dataclass(frozen=True)
class Action:
    kind: Literal[
        "train", "commit", "mark_committed", "mark_missed", "finalize", "post_claim", "settle", "claim_shares",
        "withdraw_claim_bond", "wait", "done",
    ]  # fmt: skip
    round: int = -1
    seconds: float = 0.0


def decide_solver_action(view: SolverView) -> Action:
    """The next action; `wait` carries how long nothing can change by itself."""
    if view.unclaimed_rounds:
        return Action("claim_shares", view.unclaimed_rounds[0])
    if view.unwithdrawn_claim_bonds:
        return Action("withdraw_claim_bond", view.unwithdrawn_claim_bonds[0])
    times = view.times
    if times.finished:
        return Action("done")
    r, record = times.round, view.record
    if record is None or record.round != r:
        if view.now < times.commit_end:
            return Action("train", r)
        return Action("mark_missed", r)
    if record.status == "trained":
        if view.committed_on_chain:
            return Action("mark_committed", r)
        if view.now < times.commit_end:
            return Action("commit", r)
        return Action("mark_missed", r)
    if not view.coordinator:
        return Action("wait", r, seconds=1.0)
    return _decide_coordinator(view)


def _decide_coordinator(view: SolverView) -> Action:
    times, r = view.times, view.times.round
    if view.now < times.challenge_end:
        return Action("wait", r, seconds=max(0.2, times.challenge_end - view.now))
    if view.open_disputes:
        return Action("wait", r, seconds=1.0)
    if view.unfinalized:
        return Action("finalize", r)
    if view.claim_status == ClaimStatus.NONE:
        return Action("post_claim", r)
    if view.claim_status == ClaimStatus.POSTED and view.now < view.claim_window_end:
        return Action("wait", r, seconds=max(0.2, view.claim_window_end - view.now))
    if view.claim_status in (ClaimStatus.POSTED, ClaimStatus.UPHELD):
        return Action("settle", r)
    return Action("wait", r, seconds=1.0)
