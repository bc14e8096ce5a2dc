"""Challenges a node makes and drives to their end: shared by the whistleblower and the solver's self-defence.

A challenge is recorded ("sending") in the node's SQLite state before its transaction and confirmed from the chain
after a restart (the dispute id is a pure function of the subject), so a restart loses no open challenge and never
challenges twice. Its dispute is then driven (draw the jury, execute, appeal or expire: node/disputes.py) until it
closes. Who decides *what* to challenge stays with the role: the whistleblower re-checks anyone's attestations, a
solver only the fails on its own commitments (node/self_defence.py); both decide with `decide_attestation_challenge`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eth_account.signers.local import LocalAccount

from node.disputes import JurorRegistryReader, advance_dispute
from node.logs import log_event
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.nodestate import NodeState
from protocol.hashing import hash_to_hex
from protocol.jury import KIND_ATTESTATION, DisputeSubject
from protocol.opening import OpeningError
from protocol.types import AttestationRef, Commitment, DisputeStatus


def seat_id(run_id: int, round_index: int, solver: str, slot: int) -> str:
    """The key of a seat in a node's records: run:round:solver:slot."""
    return f"{run_id}:{round_index}:{solver.lower()}:{slot}"


@dataclass(frozen=True)
class ChallengePlan:
    """Challenge this attestation over draw `sample_index` (the draw a fail named; for a pass, the
    first draw the checker found faulty)."""

    sample_index: int
    reason: str


def decide_attestation_challenge(
    is_fail: bool,
    attestation_right: bool,
    fail_sample_index: int,
    finding_sample_index: int,
    finding: str,
) -> ChallengePlan | None:
    """Challenge a wrong attestation: a pass on faulty work, or a fail on honest work.

    A pass is challenged over the draw the checker found faulty (draw 0 when the fault is in the
    document or trajectory as a whole, or it is not served); a fail can only be challenged over the
    draw it named. Either way the challenge carries that draw's opened leaf and proof (the chain's).
    """
    if attestation_right:
        return None
    if is_fail:
        return ChallengePlan(fail_sample_index, f"fail attestation on honest work: {finding}")
    return ChallengePlan(max(finding_sample_index, 0), f"pass attestation on faulty work: {finding}")


Requeue = Callable[[DisputeSubject], None]
"""Called when a challenge was interrupted before its transaction: the role checks the subject again if in time."""


class ChallengeDesk:
    """A node's challenges: send (recorded first), confirm after a revert or a restart, drive until closed.

    # INVARIANT: a challenge record exists ("sending") before its transaction is sent, and its dispute id is a pure
    function of the subject, so a crash between the two is confirmed from the chain: never two challenges of one
    subject by this node, never an open one forgotten.
    """

    def __init__(
        self,
        protocol: ProtocolClient,
        account: LocalAccount,
        state: NodeState,
        log: logging.Logger,
        registry: JurorRegistryReader,
        requeue: Requeue | None = None,
    ) -> None:
        self.protocol = protocol
        self.account = account
        self.state = state
        self.log = log
        self.registry = registry
        self.requeue = requeue

    @property
    def address(self) -> str:
        return self.account.address

    def records(self) -> list[dict]:
        return [value for _, value in self.state.list("challenge")]

    def open_records(self) -> list[dict]:
        """Challenges not finished: being sent, or in dispute ("reward": a won pass challenge recorded by an older
        version, closed on its next step)."""
        return [c for c in self.records() if c["status"] in ("sending", "open", "reward")]

    def send(self, subject: DisputeSubject, target: str, kind: str, reason: str, transact: Callable[[], Any]) -> bool:
        """Record the challenge of `subject`, then send it (`transact`); True when it was made by this node."""
        record: dict[str, Any] = {
            "dispute_id": hash_to_hex(subject.dispute_id), "subject": subject.to_json(), "target": target,
            "kind": kind, "reason": reason, "status": "sending", "outcome": "",
        }  # fmt: skip
        self.state.put("challenge", record["dispute_id"], record)
        try:
            transact()
        except ContractRevertError as exc:
            self.confirm(record, exc)
            return False
        self.state.put("challenge", record["dispute_id"], {**record, "status": "open"})
        return True

    def challenge_attestation(
        self, ref: AttestationRef, commitment: Commitment, plan: ChallengePlan, target: str, kind: str,
        created_block: int,
    ) -> bool:  # fmt: skip
        """Challenge the attestation of seat `ref` over the plan's draw, naming the leaf and proof the solver opened
        on-chain, with the run's challenge bond; True when this node's challenge was made."""
        opening = self.protocol.get_opening(ref.run_id, ref.round, ref.solver, created_block)
        if opening is None:
            raise OpeningError(f"no CommitmentOpened event yet for {ref.id}")
        opened = opening.leaf_of(ref.slot, plan.sample_index)
        subject = DisputeSubject(KIND_ATTESTATION, ref.run_id, ref.round, ref.solver, ref.slot, 0)
        bond = self.protocol.dispute_terms(ref.run_id).challenge_bond

        def transact() -> None:
            self.protocol.challenge_attestation(
                self.account, ref, commitment, plan.sample_index, opened.leaf, list(opened.proof), bond
            )

        return self.send(subject, target, kind, plan.reason, transact)

    def confirm(self, record: dict, error: ContractRevertError | None = None) -> None:
        """After a failed or interrupted challenge: is there a dispute, and is it ours?"""
        on_chain = self.protocol.dispute_of(bytes.fromhex(record["dispute_id"][2:]))
        if on_chain.status != DisputeStatus.NONE and on_chain.challenger.lower() == self.address.lower():
            self.state.put("challenge", record["dispute_id"], {**record, "status": "open"})
            return
        reason = str(error) if error else "challenge transaction never mined"
        if on_chain.status != DisputeStatus.NONE:
            reason = f"challenged first by {on_chain.challenger}"
        elif error is None and self.requeue is not None:  # interrupted before the transaction: look again in time
            self.requeue(DisputeSubject.from_json(record["subject"]))
        self.state.put("challenge", record["dispute_id"], {**record, "status": "failed", "outcome": reason})
        log_event(self.log, "challenge not made", level=logging.WARNING, dispute=record["dispute_id"][:18], why=reason)

    def drive(self, challenge: dict, now: int) -> None:
        """Move one challenge's dispute along; record its outcome once closed."""
        if challenge["status"] == "sending":
            self.confirm(challenge)
            return
        if challenge["status"] == "reward":  # recorded by an older version: an overturned pass proves no fault reward
            self.state.put("challenge", challenge["dispute_id"], {**challenge, "status": "closed"})
            return
        subject = DisputeSubject.from_json(challenge["subject"])
        record = advance_dispute(self.protocol, self.account, self.registry, subject, now)
        if not record.is_closed:
            return
        outcome = {True: "won", False: "lost"}[record.challenger_wins]
        outcome = "expired" if record.status == DisputeStatus.EXPIRED else outcome
        # a won pass challenge is paid by its dispute (the wrong attester's forfeits): the challenger of an overturned
        # pass is no prover of the solver's fault (FaultRewards pays standing fails only)
        self.state.put("challenge", challenge["dispute_id"], {**challenge, "status": "closed", "outcome": outcome})
        log_event(self.log, "dispute closed", dispute=challenge["dispute_id"][:18], outcome=outcome)
