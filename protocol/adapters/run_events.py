"""Reading, incrementally, what a node needs to tell its operator about its money: events, seats, credits.

`RunEventReader` hands a node's money watch the deployment's events (and the run's share token's) from the run's
creation block on, with their blocks' timestamps, through the node's own event index
(`protocol/adapters/event_index.py`: `<node dir>/events.sqlite`, the one incremental, reorg-checked index every
reader of a run's history uses): each call syncs the index -- only the final blocks it has not indexed are read --
and returns the events of the blocks it has not handed out yet. A node restarted reads its run's history from its
file instead of from the chain again. `read_assigned_seats` asks the chain which seats of a round were assigned to an
account; `read_pending_credits` reads the withdrawable credits an account holds in each contract that keeps credits.
What the events mean is decided by the pure `protocol/money_events.py` over the auditor's fold.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.event_index import EventIndex
from protocol.history.events import ChainEvent
from protocol.money_events import Seat
from protocol.types import AttestationRef

CREDIT_CONTRACTS = ("Verification", "Disputes", "FaultRewards", "Plants", "ModelShares")
"""The contracts that credit ETH to an account for it to withdraw (bonds back, rewards, jackpots, round releases)."""


@dataclass(frozen=True)
class RunEventsUpdate:
    """What one `read_new` brought: the events not handed out before (chain order, whole blocks), or, after a reorg
    (`reorganised`), every event that stands from the run's creation block on, to be folded anew."""

    new: Sequence[ChainEvent]
    reorganised: bool


class RunEventReader:
    """The deployment's events from one run's creation block on, read incrementally through an `EventIndex`."""

    def __init__(self, protocol: ProtocolClient, run_id: int, from_block: int, index_path: Path | str) -> None:
        self.protocol = protocol
        self.run_id = run_id
        self.from_block = from_block
        self.index = EventIndex(index_path, protocol.chain)  # registers each run's share token as it indexes it
        self.timestamps: dict[int, int] = {}
        self.handed_to = from_block  # the blocks before it were handed out

    @property
    def next_block(self) -> int:
        return self.index.next_block

    def read_new(self) -> RunEventsUpdate:
        """Sync the index and return the events of the blocks not handed out yet (all of them after a reorg)."""
        report = self.index.sync()
        start = self.from_block if report.reorganised else self.handed_to
        if report.reorganised:
            self.timestamps = {}
        elif report.next_block <= start:
            return RunEventsUpdate([], False)  # no new final block
        new = self.index.events(from_block=start)
        self.timestamps.update(self.index.timestamps(from_block=start))
        self.handed_to = max(report.next_block, self.from_block)
        return RunEventsUpdate(new, report.reorganised)


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
