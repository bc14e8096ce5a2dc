"""Where a run stands now, from its folded history: what `gradledger run status` shows and the explorer serves.

A pure function of the history and the chain's time, so the status a CLI prints, a JSON consumer reads and a test
asserts are one value: the current round and its phase (`get_round_phase`, the same as the audit's), the deadlines of
its windows, and per round the commitments, how many are accepted, attestations (passes, fails), disputes and the θ
it settled to. Addresses are checksummed as in the events; times are chain seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Literal

from protocol.history.fold import get_round_phase, get_round_times
from protocol.history.records import RunHistory
from protocol.history.rounds import Commitment, Round

CommitmentStatusName = Literal["planted", "unopened", "void", "accepted", "failed", "pending"]


@dataclass(frozen=True)
class RoundStatus:
    round: int
    phase: str
    start: int
    commit_end: int
    open_end: int
    attest_end: int
    challenge_end: int
    commitments: int
    accepted: int
    """Commitments whose Δ enters θ_(r+1) (`Round.accepted`): final once the round is settled."""
    passes: int
    fails: int
    disputes: int
    disputes_open: int
    settled: bool
    theta: str
    next_theta: str | None
    loss: float | None = None
    """Held-out loss of θ_r, when the caller evaluated it (the artifacts, not the chain, hold θ: `get_run_status`'s
    `losses`)."""


@dataclass(frozen=True)
class RunStatus:
    run_id: int
    now: int
    finished: bool
    max_rounds: int
    current_round: int
    phase: str
    rounds: tuple[RoundStatus, ...]
    disputes: tuple[dict, ...]
    slashed_wei: int
    final_loss: float | None = None
    """Of a finished run: the held-out loss of its last θ, when evaluated."""

    def to_json(self) -> dict:
        return asdict(self)


def get_commitment_status(rnd: Round, commitment: Commitment) -> CommitmentStatusName:
    """What became of one commitment, as the explorer lists it: "planted" (revealed as the protocol's own test of its
    verifiers, paid but not in θ), "unopened" (its sampled leaves never opened: the solver slashed), "void" (no seed was
    drawn), "accepted" (its Δ enters θ_(r+1), `Round.is_accepted`), "failed" (a standing fault, or its round settled
    without accepting it), else "pending" (still being attested or disputed)."""
    solver = commitment.solver
    if commitment.planted:
        return "planted"
    if commitment.opening in ("unopened", "void"):
        return "unopened" if commitment.opening == "unopened" else "void"
    if rnd.is_accepted(solver):
        return "accepted"
    if rnd.settled or any(a.is_fault_counted for a in rnd.attestations_of(solver)):
        return "failed"
    return "pending"


def get_round_status(history: RunHistory, rnd: Round, now: int, loss: float | None = None) -> RoundStatus:
    times = get_round_times(history, rnd.index)
    standing = [a for a in rnd.attestations if a.state not in ("overturned", "voided")]
    return RoundStatus(
        round=rnd.index, phase=get_round_phase(history, rnd.index, now), start=times.start,
        commit_end=times.commit_end, open_end=times.open_end, attest_end=times.attest_end,
        challenge_end=times.challenge_end, commitments=len(rnd.commitments), accepted=len(rnd.accepted),
        passes=sum(1 for a in standing if not a.is_fail), fails=sum(1 for a in standing if a.is_fail),
        disputes=len(rnd.disputes),
        disputes_open=sum(1 for d in rnd.disputes if d.status in ("open", "jury drawn", "decided")),
        settled=rnd.settled, theta=rnd.theta_hash, next_theta=rnd.next_theta_hash, loss=loss,
    )  # fmt: skip


def get_run_status(history: RunHistory, now: int, losses: Mapping[int, float] | None = None) -> RunStatus:
    """The run's status at chain time `now` (the run's latest round is the current one until it finishes); `losses`:
    held-out loss of θ_r by r, where evaluated (θ lives in the artifacts, not in the events)."""
    known = losses or {}
    rounds = tuple(get_round_status(history, rnd, now, known.get(rnd.index)) for rnd in history.rounds)
    current = history.current_round
    if history.finished:
        phase = "finished"
    elif current < len(rounds):
        phase = rounds[current].phase
    else:
        phase = "not started"
    fields = ("dispute_id", "kind", "round", "status", "challenger", "challenger_wins")
    disputes = tuple({name: getattr(d, name) for name in fields} for rnd in history.rounds for d in rnd.disputes)
    return RunStatus(
        run_id=history.run_id, now=now, finished=history.finished, max_rounds=history.terms.max_rounds,
        current_round=current, phase=phase, rounds=rounds, disputes=disputes,
        slashed_wei=sum(s.amount for s in history.slashes),
        final_loss=known.get(len(history.rounds)) if history.finished else None,
    )  # fmt: skip
