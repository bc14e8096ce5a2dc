"""When a block is final enough to act on, and how an incremental event reader survives a reorg (pure).

A public chain reorganises: the last few blocks a node read may be replaced by others (its events dropped, or
moved to other blocks). Two rules keep a node right:

- confirmations: events are read only up to `head - confirmations` (`get_final_block`), so a node acts on what
  is unlikely to move. A local automining devnet (chain id 31337) never reorganises on its own: 0 there, and
  `DEFAULT_CONFIRMATIONS` on any other chain unless the operator sets `--confirmations`;
- reorg checks: a reader remembers the hashes of the blocks it read (`ReadProgress.remembered`); before each
  read it asks whether the last one is still canonical; if not, the highest remembered block that still is
  (`compute_fork_point`) is where it rewinds to (`rewind`): events above it are dropped (`drop_orphaned`) and the
  blocks after it are read again.

The I/O side (fetching hashes, reading logs) is protocol/adapters/finality.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

DEVNET_CHAIN_ID = 31337
"""anvil's default chain id: the local devnet, where devnet-only shortcuts are allowed and nothing reorganises."""

DEFAULT_CONFIRMATIONS = 2
"""Blocks an event must be deep on a chain other than the devnet before a node treats it as final."""

REMEMBERED_BLOCKS = 64
"""How many read blocks a reader keeps the hash of: a reorg deeper than that re-reads everything."""


@dataclass(frozen=True)
class BlockRef:
    """A block as a reader saw it: number and hash."""

    number: int
    hash: bytes


@dataclass(frozen=True)
class ReadProgress:
    """Where an incremental reader stands: the next block to read and the hashes of blocks it read (ascending)."""

    start_block: int
    next_block: int
    remembered: tuple[BlockRef, ...] = ()

    @classmethod
    def starting_at(cls, block: int) -> ReadProgress:
        return cls(block, block, ())

    @property
    def last_read(self) -> BlockRef | None:
        """The highest block read (None before the first read)."""
        return self.remembered[-1] if self.remembered else None

    def to_json(self) -> dict:
        return {
            "start_block": self.start_block,
            "next_block": self.next_block,
            "remembered": [[ref.number, ref.hash.hex()] for ref in self.remembered],
        }

    @classmethod
    def from_json(cls, raw: Mapping) -> ReadProgress:
        refs = tuple(BlockRef(int(n), bytes.fromhex(h)) for n, h in raw.get("remembered", ()))
        return cls(int(raw["start_block"]), int(raw["next_block"]), refs)


def is_devnet(chain_id: int) -> bool:
    return chain_id == DEVNET_CHAIN_ID


def get_default_confirmations(chain_id: int) -> int:
    """0 on the local devnet (it never reorganises by itself), DEFAULT_CONFIRMATIONS elsewhere."""
    return 0 if is_devnet(chain_id) else DEFAULT_CONFIRMATIONS


def get_final_block(head: int, confirmations: int) -> int:
    """The highest block at least `confirmations` deep (-1 while the chain is shorter than that)."""
    if confirmations < 0:
        raise ValueError(f"confirmations must be 0 or more, got {confirmations}")
    return head - confirmations


def get_read_range(progress: ReadProgress, final_block: int) -> tuple[int, int] | None:
    """The blocks to read next, [from, to], or None when nothing final is new."""
    if final_block < progress.next_block:
        return None
    return progress.next_block, final_block


def record_read(
    progress: ReadProgress, last: BlockRef, event_blocks: Iterable[BlockRef] = (), limit: int = REMEMBERED_BLOCKS
) -> ReadProgress:
    """Progress after reading up to `last` (inclusive): its hash and those of the blocks that held events are kept,
    the newest `limit` of them."""
    refs = {ref.number: ref for ref in progress.remembered}
    for ref in (*event_blocks, last):
        refs[ref.number] = ref
    kept = tuple(refs[n] for n in sorted(refs))[-limit:]
    return ReadProgress(progress.start_block, last.number + 1, kept)


def compute_fork_point(remembered: Sequence[BlockRef], canonical: Mapping[int, bytes | None]) -> int | None:
    """The highest remembered block whose hash the chain still has at its height (None when none is left).

    `canonical` maps block numbers to the chain's hash now (None: no such block any more); numbers missing from it
    are treated as not checked, hence not a fork point.
    """
    for ref in reversed(remembered):
        if canonical.get(ref.number) == ref.hash:
            return ref.number
    return None


def rewind(progress: ReadProgress, fork_point: int | None) -> ReadProgress:
    """Progress after a reorg whose last common block is `fork_point` (None: unknown, re-read from the start)."""
    if fork_point is None:
        return ReadProgress.starting_at(progress.start_block)
    kept = tuple(ref for ref in progress.remembered if ref.number <= fork_point)
    return ReadProgress(progress.start_block, max(fork_point + 1, progress.start_block), kept)


class HasBlockNumber(Protocol):
    @property
    def block_number(self) -> int: ...


E = TypeVar("E", bound=HasBlockNumber)


def drop_orphaned(events: Sequence[E], fork_point: int | None, start_block: int) -> tuple[list[E], list[E]]:
    """(kept, dropped): events above the fork point came from blocks the chain no longer has."""
    floor = fork_point if fork_point is not None else start_block - 1
    kept = [e for e in events if e.block_number <= floor]
    dropped = [e for e in events if e.block_number > floor]
    return kept, dropped
