"""The events a node's tick reads, read once per head and by range: one shared, reorg-checked log (issue 39).

A node's tick asked the chain for events in several places, each on its own: "every `Committed` event of the
deployment from the run's first block on" (`ProtocolClient.get_commitments`), `CommitmentOpened` and `PlantRevealed`
the same way, and the spans of its cursors and of its money watch. Each asked `eth_getLogs` again, on every tick, and
the first kind over the whole run: a cost that grew with the run's length and was paid on every new block.

`EventMemo` keeps one `FinalEventReader` (protocol/adapters/finality.py: reorg-checked, final blocks only) over every
contract the client knows, from the lowest block a whole-history read asked for. Inside a node's tick
(`HeadReads.scope()`), `ChainClient.get_events` answers from it: at a new head the reader reads the blocks it has not
read (one `eth_getLogs` for all of them and every reader; none when the new head is the one block left and its logs
Bloom filter holds none of their addresses: protocol/adapters/quiet_blocks.py), and every read of the tick filters
what it holds. What it cannot answer (a span that starts before it, a block it has not read) is read live, as before.

# INVARIANT: an answer is what a live read of the same final blocks would return, in chain order: the reader reads
every registered contract up to the final block of the head the tick is at, drops and reads again what a reorg
orphaned, and starts over when the client learns a contract it did not read (a run's share token).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, Protocol

from protocol.adapters.chain_connection import ChainConnection
from protocol.adapters.finality import FinalEventReader
from protocol.adapters.quiet_blocks import is_quiet_block
from protocol.finality import BlockRef, get_read_range, record_read
from protocol.history.events import ChainEvent


class MemoChain(ChainConnection, Protocol):
    """What the memo needs of its client (`ChainClient`, named structurally: the client holds the memo)."""

    def contract_names(self) -> list[str]: ...

    def contract(self, name: str) -> Any: ...


CATCH_UP_BLOCKS = 2000
"""A first span starting further back than this below the final block is read live, not held (`ChainClient.get_events`'s
chunk): the memo holds what a node follows, from its run's first block or its cursors' recent positions."""


class EventMemo:
    """Every registered contract's events from one block on, extended once per head (see the module docstring)."""

    def __init__(self, chain: MemoChain) -> None:
        self.chain = chain
        self.reader: FinalEventReader | None = None
        self.contracts: frozenset[str] = frozenset()
        self.read_at: tuple[bytes, int] = (b"", -1)  # (head hash, final block) the reader was last extended at
        self._local = threading.local()

    def is_reading(self) -> bool:
        """Whether this thread is inside the memo's own read (which must go to the chain)."""
        return getattr(self._local, "reading", False)

    def events(
        self, from_block: int, to_block: int | None, names: Iterable[str] | None, contracts: Iterable[str] | None
    ) -> list[ChainEvent] | None:
        """The events a live `get_events(from_block, to_block, names=..., contracts=...)` would return, or None when
        the memo cannot answer (then the caller reads live)."""
        known = frozenset(self.chain.contract_names())
        wanted = known if contracts is None else frozenset(contracts)
        if not wanted <= known:
            return None  # an unknown contract: the live read names it
        restart: int | None = None
        if self.reader is None:
            if to_block is not None and self.chain.final_block_number() - from_block > CATCH_UP_BLOCKS:
                return None  # a cursor catching up: read live, and hold nothing that old for it
            restart = from_block
        elif from_block < self.reader.progress.start_block:
            if to_block is not None:
                return None  # a span before what is held: read live
            restart = from_block  # a whole-history read: it read all of it on every tick before
        elif known != self.contracts:
            restart = self.reader.progress.start_block
        if restart is not None:
            self._start(restart, known)
        assert self.reader is not None
        self._extend()
        last = self.reader.next_block - 1
        end = last if to_block is None else to_block
        if end > last:
            return None  # past what is final and read at this head
        names_wanted = None if names is None else set(names)
        return [
            e
            for e in self.reader.events
            if from_block <= e.block_number <= end
            and e.contract in wanted
            and (names_wanted is None or e.name in names_wanted)
        ]

    def _start(self, from_block: int, contracts: frozenset[str]) -> None:
        self.reader = FinalEventReader(self.chain, from_block, contracts=sorted(contracts), label="tick events")
        self.contracts = contracts
        self.read_at = (b"", -1)

    def _extend(self) -> None:
        """Read the final blocks not read yet, once per head (a reorg seen drops the head, so it reads again)."""
        assert self.reader is not None
        head = self.chain.get_block("latest")
        at = (bytes(head["hash"]), self.chain.final_block_number())
        if at == self.read_at:
            return
        if not self._pass_quiet_head(head, at[1]):
            self._local.reading = True
            try:
                self.reader.read_new()
            finally:
                self._local.reading = False
        self.read_at = at

    def _pass_quiet_head(self, head: Any, final: int) -> bool:
        """Record the head as read, without `eth_getLogs`, when it is the one block left to read, the child of the last
        block read, and its logs Bloom filter holds no address of the contracts read (protocol/adapters/
        quiet_blocks.py: no false negatives, so there is certainly nothing to read in it)."""
        assert self.reader is not None
        progress, number = self.reader.progress, int(head["number"])
        last = progress.last_read
        if final != number or get_read_range(progress, final) != (number, number) or last is None:
            return False
        if (last.number, last.hash) != (number - 1, bytes(head.get("parentHash", b""))):
            return False
        if not is_quiet_block(head, [self.chain.contract(name).address for name in self.contracts]):
            return False
        self.reader.progress = record_read(progress, BlockRef(number, bytes(head["hash"])))
        return True
