"""What a solver node does next: a pure function of what it read from the chain and its disk.

The node loop is read -> `decide_solver_action` -> act. Everything here is a plain value, so
the decisions are unit-tested without a chain (tests/solver/test_decide.py).

Round r of a run (times from RunRegistry.roundTimes):
    before start               round 0 of a run with a start delay: wait (joined; nothing to train or commit yet)
    [start, commit_end)        train H steps from θ_r, then commit (once)
    [commit_end, open_end)     once the seed is drawn (drawing it if nobody has), open the sampled leaves
                               on-chain (protocol/opening.py); an unopened commitment is slashed
    [commit_end, challenge_end) verifiers attest opened commitments, anyone may challenge
    [attest_end, reveal_end)   while the run plants (docs/planted-faults.md), reveal the round's secret
    [attest_end, challenge_end) report the seats of its own opened commitment left unattested (node/abstentions.py)
    after challenge_end        a coordinator finalizes attestations, posts the θ_(r+1) claim,
                               and settles once the claim's window has closed
Every solver claims its shares for each settled round in which its work was accepted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from protocol.errors import GradledgerError
from protocol.hashing import Hash32, hash_to_hex, to_hash32
from protocol.types import ClaimStatus, Commitment, Opening, RoundTimes
from protocol.windows import is_round_trainable_in_time

RoundStatus = Literal["trained", "committed", "unopenable", "missed", "sat_out"]
"""`unopenable`: committed, but the stored document holds no leaf for a sampled segment (or there is none).
`missed`: this node was due in the round (it took part before) and did not commit in its window.
`sat_out`: the node started too late for the round (too little of its commit window left to train, or none);
it joins the next one. Not a miss: nothing was due from it."""


@dataclass(frozen=True)
class RoundRecord:
    """What this node durably knows about one of its rounds (stored in SQLite as JSON, hashes as 0x-hex)."""

    run_id: int
    round: int
    status: RoundStatus
    theta_hash: Hash32 | None = None
    root: Hash32 | None = None
    delta_hash: Hash32 | None = None
    tokens: int = 0
    doc_hash: Hash32 | None = None
    commit_tx: str = ""

    def to_json(self) -> dict[str, Any]:
        """The SQLite form: hashes as 0x-hex ("" when unknown)."""
        out = asdict(self)
        for name in _HASH_FIELDS:
            value = getattr(self, name)
            out[name] = hash_to_hex(value) if value is not None else ""
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> RoundRecord:
        values = dict(raw)
        for name in _HASH_FIELDS:
            values[name] = to_hash32(values[name], name) if values.get(name) else None
        return cls(**values)

    @property
    def commitment(self) -> Commitment:
        """What to commit on-chain for this trained round."""
        if self.root is None or self.delta_hash is None:
            raise GradledgerError(f"round {self.round} has no trained commitment to send")
        return Commitment(self.root, self.delta_hash, self.tokens)


_HASH_FIELDS = ("theta_hash", "root", "delta_hash", "doc_hash")


@dataclass(frozen=True)
class SolverView:
    now: int
    times: RoundTimes
    block: int
    record: RoundRecord | None
    committed_on_chain: bool
    coordinator: bool
    claim_status: ClaimStatus
    claim_window_end: int
    open_disputes: int
    unfinalized: int
    unclaimed_rounds: tuple[int, ...]
    unwithdrawn_claim_bonds: tuple[int, ...] = ()
    seed_drawn: bool = False
    opening: Opening = Opening.NONE
    """This solver's commitment of the current round: opened, reported unopened, or neither yet."""
    reveal_due: bool = False
    """This solver's opened commitment of the current round may be planted and its reveal window is open."""
    abstention_check_due: bool = False
    """This solver's commitment of the current round is opened, attestEnd has passed (challengeEnd not yet) and its
    seats were not looked at for abstentions yet."""
    unresolved: tuple[str, ...] = ()
    """Coordinator, past open_end: solvers whose commitment is neither opened nor reported (settle needs none)."""
    member: bool = True
    """Joined and not left: the run holds this solver's solverMinStake reserved."""
    round_training_ms: int = 0
    """This node's measured compute for one round (protocol/windows.py); 0 when not measured."""
    first_round: bool = False
    """No earlier round of this run is recorded: the node has just started following the run."""
    run_seed_block: int = 0
    """Round 0's plant draw waits for the run seed, proven by this block's header (node/plants.py
    `get_pending_run_seed_block`: the block after the run seed block; 0: nothing pending)."""


@dataclass(frozen=True)
class Action:
    kind: Literal[
        "train", "commit", "mark_committed", "mark_missed", "draw_seed", "open", "reveal", "report_unopened",
        "finalize", "post_claim", "settle", "claim_shares", "withdraw_claim_bond", "leave_run", "wait", "done",
        "sit_out", "report_abstentions", "draw_run_seed",
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
        # every round has settled: leaving releases the stake the run reserved
        return Action("leave_run") if view.member else Action("done")
    if view.now < times.start:
        # round 0 of a run with a start delay: `commit` reverts RoundNotStarted until the start, and a round not yet
        # started is neither missed nor sat out; the node waits (joined already: RunNode.start joins first)
        return Action("wait", times.round, seconds=max(0.2, times.start - view.now))
    r, record = times.round, view.record
    if record is None or record.round != r:
        if is_round_trainable_in_time(times.commit_end - view.now, view.round_training_ms):
            if view.run_seed_block:
                # INVARIANT: an early anchor's round 0 trains only once its plant draw is fixed (the run seed drawn);
                # the act waits for the block that proves it (mining it on an automining devnet)
                return Action("draw_run_seed", r)
            return Action("train", r)
        # too late to finish this round: a node that just started joins the next one; one that was due (it
        # followed earlier rounds and was down or restarted) missed it. Neither trains for nothing.
        return Action("sit_out" if view.first_round else "mark_missed", r)
    if record.status == "trained":
        if view.committed_on_chain:
            return Action("mark_committed", r)
        if view.now < times.commit_end and view.block < times.seed_block:
            return Action("commit", r)
        return Action("mark_missed", r)
    if record.status == "committed" and view.opening == Opening.NONE and times.commit_end <= view.now < times.open_end:
        # INVARIANT: a committed round is opened before open_end, or it is slashed: opening comes before all else.
        return Action("open" if view.seed_drawn else "draw_seed", r)
    if view.reveal_due:
        # INVARIANT: an eligible commitment's secret is revealed in its window, or the solver is slashed and unpaid.
        return Action("reveal", r)
    if view.abstention_check_due:
        # self-defence: a seat of its own commitment left unattested is reported (its verifier charged the bond)
        return Action("report_abstentions", r)
    if not view.coordinator:
        return Action("wait", r, seconds=1.0)
    return _decide_coordinator(view)


def _decide_coordinator(view: SolverView) -> Action:
    times, r = view.times, view.times.round
    if view.now < times.challenge_end:
        return Action("wait", r, seconds=max(0.2, times.challenge_end - view.now))
    if view.open_disputes:
        return Action("wait", r, seconds=1.0)
    if view.unresolved:
        return Action("report_unopened", r)
    if view.unfinalized:
        return Action("finalize", r)
    if view.claim_status == ClaimStatus.NONE:
        return Action("post_claim", r)
    if view.claim_status == ClaimStatus.POSTED and view.now < view.claim_window_end:
        return Action("wait", r, seconds=max(0.2, view.claim_window_end - view.now))
    if view.claim_status in (ClaimStatus.POSTED, ClaimStatus.UPHELD):
        return Action("settle", r)
    return Action("wait", r, seconds=1.0)
