"""Reading, incrementally, what a node needs to tell its operator about its money: events, seats, credits.

`RunEventReader` keeps the decoded events of every deployment contract (and the run's share token) from the
run's creation block on, with their blocks' timestamps, and reads only the blocks it has not seen on each call;
`read_assigned_seats` asks the chain which seats of a round were assigned to an account; `read_pending_credits`
reads the withdrawable credits an account holds in each contract that keeps credits. What the events mean is
decided by the pure `protocol/money_events.py` over the auditor's fold.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from protocol.adapters.contracts import ProtocolClient
from protocol.history.events import EventLike
from protocol.money_events import Seat
from protocol.types import AttestationRef

CREDIT_CONTRACTS = ("Verification", "Disputes", "FaultRewards", "Plants", "ModelShares")
"""The contracts that credit ETH to an account for it to withdraw (bonds back, rewards, jackpots, round releases)."""


class RunEventReader:
    """The events of a deployment from one run's creation block on, read incrementally, with block timestamps."""

    def __init__(self, protocol: ProtocolClient, run_id: int, from_block: int) -> None:
        self.protocol = protocol
        self.run_id = run_id
        self.events: list[EventLike] = []
        self.timestamps: dict[int, int] = {}
        self.next_block = from_block

    def read_new(self) -> bool:
        """Read the blocks not read yet (True when any event arrived)."""
        chain = self.protocol.chain
        latest = chain.block_number()
        if latest < self.next_block:
            return False
        token = self.protocol.share_token_contract(self.run_id)  # registers the token so its events decode
        contracts = [*chain.deployment.contracts, token]
        new = chain.get_events(self.next_block, latest, contracts=[c for c in contracts if chain.has_contract(c)])
        self.next_block = latest + 1
        if not new:
            return False
        self.timestamps.update(chain.get_block_timestamps({e.block_number for e in new} - set(self.timestamps)))
        self.events.extend(cast(list[EventLike], new))  # ChainEvent is an EventLike (frozen: mypy cannot tell)
        return True


def read_assigned_seats(
    protocol: ProtocolClient, run_id: int, round_index: int, solvers: Iterable[str], address: str
) -> list[Seat]:
    """The seats of the round's commitments (by `solvers`) the chain assigned to `address` (`assignedVerifier`)."""
    seats, count = [], protocol.seat_count(run_id, round_index)
    for solver in solvers:
        for slot in range(count):
            assigned, eligible = protocol.assigned_verifier(AttestationRef(run_id, round_index, solver, slot))
            if eligible and assigned.lower() == address.lower():
                seats.append(Seat(round_index, solver, slot))
    return seats


def read_pending_credits(protocol: ProtocolClient, address: str) -> dict[str, int]:
    """Wei `address` may withdraw from each credit-keeping contract now (0 where it has none)."""
    return {name: protocol.credits_of(name, address) for name in CREDIT_CONTRACTS}
