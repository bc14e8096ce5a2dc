"""A solver's self-defence: challenge every fail on its own commitment that its own replay contradicts (issue 37).

Before, only whistleblowers re-checked fails, and only a fraction F of them, for free: a verifier that failed
everything profited whenever F was below 0.31, slashing honest solvers and taking half of their stake. The solver
is the one party that always loses by a false fail, and it holds the training the fail disputes, so it is the one to
check it: each round, once the seed is drawn, it reads the seats of its own commitment; for every standing fail it
replays the named draw with the shared checker (node/checker.py: the same replay and verdict verifiers use) and
challenges the fail with the run's challenge bond when the replay says the draw is honest. A jury that overturns the
fail makes it *cleared*, which counts towards acceptance like a pass (Verification counts it in `passes`), so the
griefed solver is paid; the failer loses its bond and is slashed.

# INVARIANT: a solver challenges only a fail its own replay contradicts: if its replay agrees with the fail (its own
training did not reproduce, say after a crash mid-round), it does not throw a bond after it, and says so in an ERROR.
# INVARIANT: a fail on a commitment revealed as planted is right by construction; one whose plant may be pending waits
for the reveal (Plants.isChallengeBlocked), exactly as the whistleblower does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from eth_account.signers.local import LocalAccount

from node.challenges import ChallengeDesk, decide_attestation_challenge, seat_id
from node.checker import CommitmentChecker
from node.disputes import JurorRegistryReader
from node.logs import log_event
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.nodestate import NodeState
from protocol.adapters.runs import RunContext
from protocol.jury import DisputeSubject
from protocol.types import AttestationRef, AttestationState, Opening, RoundTimes


@dataclass(frozen=True)
class OwnFail:
    """A standing fail on this solver's commitment: its seat and the draw it named."""

    ref: AttestationRef
    sample_index: int


def is_defence_window(times: RoundTimes, now: int) -> bool:
    """Fails of the current round can be challenged from the opening deadline (seats attest after it) until
    challengeEnd."""
    return not times.finished and times.commit_end <= now < times.challenge_end


def find_own_fails(protocol: ProtocolClient, run_id: int, times: RoundTimes, solver: str) -> tuple[OwnFail, ...]:
    """The current round's fails on `solver`'s opened commitment that are still Attested (challengeable). One call
    when there is none (the commitment's status), one per seat otherwise."""
    r = times.round
    status = protocol.commitment_status(run_id, r, solver)
    if status.round_plus_one != r + 1 or status.faults == 0:
        return ()
    if protocol.opening_state(run_id, r, solver) != Opening.OPENED:
        return ()
    fails = []
    for slot in range(protocol.seat_count(run_id, r)):
        ref = AttestationRef(run_id, r, solver, slot)
        info = protocol.attestation_of(ref)
        if info.is_fail and info.state == AttestationState.ATTESTED:
            fails.append(OwnFail(ref, info.sample_index))
    return tuple(fails)


class SelfDefence:
    """Read (the seats of the solver's own commitment) -> decide (`decide_attestation_challenge`) -> act (challenge,
    then drive the dispute until it closes). Every seat is looked at once per round (its record in NodeState)."""

    def __init__(
        self,
        protocol: ProtocolClient,
        account: LocalAccount,
        state: NodeState,
        log: logging.Logger,
        registry: JurorRegistryReader,
        get_checker: Callable[[], CommitmentChecker],
    ) -> None:
        self.protocol = protocol
        self.account = account
        self.state = state
        self.log = log
        self.get_checker = get_checker
        self.desk = ChallengeDesk(protocol, account, state, log, registry, self._requeue)

    def open_challenges(self) -> list[dict]:
        return self.desk.open_records()

    def tick(self, ctx: RunContext, times: RoundTimes, now: int) -> None:
        """Check and challenge the current round's fails on this solver's commitment; drive open disputes."""
        if is_defence_window(times, now) and self.protocol.seat_count(ctx.run_id, times.round) > 0:
            for fail in find_own_fails(self.protocol, ctx.run_id, times, self.account.address):
                key = seat_id(fail.ref.run_id, fail.ref.round, fail.ref.solver, fail.ref.slot)
                record = self.state.get("defence", key)
                if record is None or record["status"] == "retry":
                    self._defend(ctx, fail, key)
        for challenge in self.desk.open_records():
            self.desk.drive(challenge, now)

    def _defend(self, ctx: RunContext, fail: OwnFail, key: str) -> None:
        ref = fail.ref
        if self.protocol.is_challenge_blocked(ref.run_id, ref.round, ref.solver):
            if self.protocol.plant_of(ref.run_id, ref.round, ref.solver).planted:
                self.state.put("defence", key, {"status": "planted", "finding": "the plant made this fail right"})
            return  # the reveal decides first; look again next tick
        commitment = self.protocol.get_commitments(ref.run_id, ref.round, ctx.created_block)[ref.solver]
        right, decision, _ = self.get_checker().is_attestation_right(ref, commitment, True, fail.sample_index)
        plan = decide_attestation_challenge(True, right, fail.sample_index, decision.sample_index, decision.reason)
        if plan is None:
            self.state.put("defence", key, {"status": "agreed", "finding": decision.reason})
            log_event(
                self.log, "own replay agrees with a fail on this solver's work: not challenged", level=logging.ERROR,
                seat=key, finding=decision.reason,
            )  # fmt: skip
            return
        verifier = self.protocol.attester_of(ref)
        self.state.put("defence", key, {"status": "challenged", "finding": plan.reason})
        if self.desk.challenge_attestation(ref, commitment, plan, verifier, "fail on own work", ctx.created_block):
            log_event(
                self.log, "challenged a fail on own work", level=logging.WARNING, seat=key, verifier=verifier,
                reason=plan.reason,
            )  # fmt: skip

    def _requeue(self, subject: DisputeSubject) -> None:
        """A challenge interrupted before its transaction: look at the seat again while its window is open."""
        key = seat_id(subject.run_id, subject.round, subject.solver, subject.slot)
        self.state.put("defence", key, {"status": "retry", "finding": "challenge interrupted before it was sent"})
