"""Reading, incrementally, what a node needs to tell its operator about its money: events, seats, credits.

`RunEventReader` keeps the decoded events of every deployment contract (and the run's share token) from the
run's creation block on, with their blocks' timestamps, and reads only the final blocks it has not seen on each call
(reorg-checked: events of orphaned blocks are dropped and read again, protocol/adapters/finality.py);
`read_assigned_seats` asks the chain which seats of a round were assigned to an account; `read_pending_credits`
reads the withdrawable credits an account holds in each contract that keeps credits. What the events mean is
decided by the pure `protocol/money_events.py` over the auditor's fold.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.finality import FinalEventReader, ReadUpdate
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
        self.timestamps: dict[int, int] = {}
        self.reader = FinalEventReader(protocol.chain, from_block, contracts=self._contracts, label="run events")

    @property
    def events(self) -> list[EventLike]:
        return cast(list[EventLike], self.reader.events)  # ChainEvent is an EventLike (frozen: mypy cannot tell)

    @property
    def next_block(self) -> int:
        return self.reader.next_block

    def _contracts(self) -> list[str]:
        chain = self.protocol.chain
        token = self.protocol.share_token_contract(self.run_id)  # registers the token so its events decode
        return [c for c in [*chain.deployment.contracts, token] if chain.has_contract(c)]

    def read_new(self) -> ReadUpdate:
        """Read the final blocks not read yet: the events that arrived, and those a reorg dropped (a reader that folds
        incrementally folds again from `events` when any were dropped)."""
        update = self.reader.read_new()
        for event in update.dropped:
            self.timestamps.pop(event.block_number, None)  # an orphaned block's time; its replacement is read anew
        if update.new:
            blocks = {e.block_number for e in update.new}
            self.timestamps.update(self.protocol.chain.get_block_timestamps(blocks - set(self.timestamps)))
        return update


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
