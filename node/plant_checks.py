"""Checking a revealed plant and disputing a false one: shared by the whistleblower and by every verifier node over
its own seats (issue 37, docs/planted-faults.md).

A commitment revealed as planted must be the planted training: the same steps on the batches of the revealed secret.
A solver that reveals a plant over work it did not train that way (it skipped the round's training, or trained
honestly to grief the seats that passed it) is false, and a plant dispute (Disputes.challengePlant, one per segment)
over a segment that does not replay as planted slashes it and leaves it unpaid. Before issue 37 only a whistleblower
checked plants, for free, so with nobody watching a planted round's training could be skipped and paid. Now each
verifier checks the plant over the segments of its own seats on it (`PlantDefence`, run by the verifier node): every
planted commitment has seats, so every plant is checked by someone whose pass it overturned or whose fail it paid.

# INVARIANT: a node disputes a plant only over a segment its own replay (node/checker.py `is_plant_true`, the
verifiers' replay with the revealed batches) says is not the planted training; a plant whose checked segments all
replay as planted is left alone, so an honest plant never costs its solver a dispute by this node.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from eth_account.signers.local import LocalAccount

from node.challenges import ChallengeDesk
from node.checker import CommitmentChecker
from node.disputes import JurorRegistryReader
from node.logs import log_event
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.nodestate import NodeState
from protocol.adapters.runs import RunContext
from protocol.hashing import Hash32, to_hash32
from protocol.jury import DisputeSubject, get_plant_subject
from protocol.opening import OpeningError
from protocol.types import AttestationRef, Commitment, RoundTimes


def find_planted_reveals(protocol: ProtocolClient, ctx: RunContext, round_index: int) -> dict[str, Hash32]:
    """Solver -> revealed secret, for the round's commitments revealed as planted (PlantRevealed events)."""
    out = {}
    for event in protocol.chain.get_events(ctx.created_block, names=["PlantRevealed"], contracts=["Plants"]):
        a = event.args
        if a["runId"] == ctx.run_id and a["round"] == round_index and a["planted"]:
            out[a["solver"]] = to_hash32(a["secret"])
    return out


def find_false_segment(
    checker: CommitmentChecker,
    log: logging.Logger,
    round_index: int,
    solver: str,
    commitment: Commitment,
    secret: bytes,
    segments: Sequence[int],
) -> tuple[int | None, str]:
    """Replay `segments` in order with the revealed secret; the first that is not the planted training and why
    (None: every one replays as planted)."""
    for segment in segments:
        true, reason = checker.is_plant_true(round_index, solver, commitment, segment, secret)
        log_event(log, "plant checked", solver=solver, segment=segment, verdict="true" if true else "false")
        if not true:
            return segment, reason
    return None, f"{len(segments)} segment(s) replay as the planted training"


def challenge_plant_segment(
    protocol: ProtocolClient,
    account: LocalAccount,
    desk: ChallengeDesk,
    ctx: RunContext,
    round_index: int,
    solver: str,
    commitment: Commitment,
    segment: int,
    reason: str,
) -> bool:
    """Dispute the plant over `segment` (an opened segment: its leaf and proof are on-chain) with the run's challenge
    bond; True when this node's dispute was made (False: someone disputed that segment first, or it reverted)."""
    opening = protocol.get_opening(ctx.run_id, round_index, solver, ctx.created_block)
    if opening is None:
        raise OpeningError(f"no CommitmentOpened event for the planted commitment of {solver}")
    opened = next((e for e in opening.entries if e.segment == segment), None)
    if opened is None:
        raise OpeningError(f"segment {segment} of {solver}'s planted commitment was not opened")
    subject = get_plant_subject(ctx.run_id, round_index, solver, segment)
    bond = protocol.dispute_terms(ctx.run_id).challenge_bond

    def transact() -> None:
        protocol.challenge_plant(
            account, ctx.run_id, round_index, solver, commitment, opened.segment, opened.leaf, list(opened.proof), bond
        )

    return desk.send(subject, solver, "plant", reason, transact)


def is_plant_check_window(times: RoundTimes, now: int) -> bool:
    """Plants of the current round are revealed from attestEnd and can be disputed until challengeEnd."""
    return not times.finished and times.attest_end <= now < times.challenge_end


class PlantDefence:
    """A verifier's check of the plants revealed over its own seats: read (the round's planted reveals, this node's
    attestation records) -> decide (replay its seats' segments with the secret) -> act (dispute a false plant, then
    drive the dispute until it closes). Each planted commitment is looked at once per round (NodeState)."""

    def __init__(
        self,
        protocol: ProtocolClient,
        account: LocalAccount,
        state: NodeState,
        log: logging.Logger,
        registry: JurorRegistryReader,
        get_checker: Callable[[], CommitmentChecker],
        own_seats: Callable[[int], Mapping[str, Sequence[AttestationRef]]],
    ) -> None:
        """`own_seats(round)`: solver -> this node's attested seats on its commitment (from its own records)."""
        self.protocol = protocol
        self.account = account
        self.state = state
        self.log = log
        self.get_checker = get_checker
        self.own_seats = own_seats
        self.desk = ChallengeDesk(protocol, account, state, log, registry, self._requeue)

    def tick(self, ctx: RunContext, times: RoundTimes, now: int) -> None:
        """Check the plants revealed over this node's seats of the current round; drive open plant disputes."""
        if is_plant_check_window(times, now):
            reveals: dict[str, Hash32] | None = None
            own = self.own_seats(times.round)
            for solver in sorted(own):
                key = f"plant-seat:{ctx.run_id}:{times.round}:{solver}"
                record = self.state.get("plant_defence", key)
                if record is not None and record["status"] != "retry":
                    continue
                # one view call per seat and tick: the reveal events (read from the run's first block) only once a
                # plant is there to check, and a commitment revealed unplanted (most of them) never looked at again
                plant = self.protocol.plant_of(ctx.run_id, times.round, solver)
                if not plant.revealed:
                    continue  # not yet, or never (planting off, a round that cannot be planted, a withheld reveal)
                if not plant.planted:
                    self.state.put("plant_defence", key, {"status": "not planted", "finding": "revealed unplanted"})
                    continue
                if reveals is None:
                    reveals = find_planted_reveals(self.protocol, ctx, times.round)
                if solver in reveals:
                    self._check(ctx, times.round, solver, reveals[solver], own[solver], key)
        for challenge in self.desk.open_records():
            self.desk.drive(challenge, now)

    def _check(
        self, ctx: RunContext, round_index: int, solver: str, secret: bytes, seats: Sequence[AttestationRef], key: str
    ) -> None:
        checker = self.get_checker()
        segments = sorted({segment for ref in seats for _, segment in checker.get_samples(ref)})
        commitment = self.protocol.get_commitments(ctx.run_id, round_index, ctx.created_block)[solver]
        segment, reason = find_false_segment(checker, self.log, round_index, solver, commitment, secret, segments)
        status = "right" if segment is None else "challenged"
        self.state.put("plant_defence", key, {"status": status, "finding": reason})
        if segment is None:
            return
        if challenge_plant_segment(
            self.protocol, self.account, self.desk, ctx, round_index, solver, commitment, segment, reason
        ):
            log_event(
                self.log, "challenged a false plant over its own seat", level=logging.WARNING, solver=solver,
                segment=segment, reason=reason,
            )  # fmt: skip

    def _requeue(self, subject: DisputeSubject) -> None:
        """A dispute interrupted before its transaction: check the plant again while its window is open."""
        key = f"plant-seat:{subject.run_id}:{subject.round}:{subject.solver}"
        self.state.put("plant_defence", key, {"status": "retry", "finding": "dispute interrupted before it was sent"})
