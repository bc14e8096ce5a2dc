"""Blocks in which the deployment did nothing: the reads a node's tick made at the block before still hold (issue 39).

A node's tick reads the same contract state at every new block (the round's times, its commitment, the seed, its
credits...), and on most blocks none of it changed. Whether it can have changed is in the block header the tick reads
anyway: its `logsBloom` is a Bloom filter of the address (and topics) of every log the block's transactions emitted,
with no false negatives. Every transaction that writes the deployment's storage emits an event of the deployment -- the
audit rebuilds a run's whole history from events alone (protocol/history/); in contracts/src every external function
that writes storage emits, or is a callback (`onSolverJoined`, `onDisputeOpened`, `onPlantRevealed`, ...) only the
deployment's own contracts call from functions that emit -- so a block whose bloom holds none of the deployment's
addresses changed none of their storage.

`HeadReads.note_block` then keeps, across that one block (the new head's parent is the head the answers were read at:
no reorg, no block skipped), the answers of `STORAGE_VIEWS`: view functions that read their contract's storage and
nothing else (no `block.timestamp`, `block.number` or `blockhash`, no call into another contract), checked one by one in
contracts/src. Every other read (a view that depends on time, a block by number above the old head, a balance) is read
at the new head as before, and a block with a deployment log drops every answer.

# INVARIANT: a kept answer equals what the call returns at the new head: same storage (no deployment log in the one
block between, the parent hash chains the two heads), and a view in STORAGE_VIEWS depends on nothing else.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from eth_utils import keccak, to_canonical_address

STORAGE_VIEWS: frozenset[tuple[str, str]] = frozenset(
    {
        ("RunRegistry", "roundTimes"),  # RunState and RunParams of the run, _seedBlock
        ("RunRegistry", "commitmentOf"),
        ("RunRegistry", "openingOf"),
        ("RunRegistry", "claimOf"),
        ("RunRegistry", "creatorOf"),
        ("RunRegistry", "runCount"),
        ("Verification", "seedOf"),
        ("Verification", "roundSeed"),
        ("Verification", "commitmentStatusOf"),
        ("Plants", "termsOf"),
        ("PeerDirectory", "urlOf"),
        ("VerifierRegistry", "records"),
        # PullPayments.credits, a public mapping, in every contract that keeps credits
        ("Verification", "credits"),
        ("Disputes", "credits"),
        ("FaultRewards", "credits"),
        ("Plants", "credits"),
        ("ModelShares", "credits"),
    }
)
"""(contract, view) pairs whose answer depends on their contract's storage alone (see the module docstring)."""


def is_storage_read(key: Hashable) -> bool:
    """Whether a `HeadReads` answer is a call of a view in STORAGE_VIEWS (key ("call", contract, function, args))."""
    return isinstance(key, tuple) and len(key) == 4 and key[0] == "call" and (key[1], key[2]) in STORAGE_VIEWS


def bloom_may_contain(bloom: bytes, item: bytes) -> bool:
    """Whether a block's 2048-bit logs Bloom filter may hold `item` (an address or a topic): the Yellow Paper's M3:2048,
    three bits from the first six bytes of keccak256(item). False is certain: no log of `item` is in the block."""
    if len(bloom) != 256:
        return True  # not a bloom this knows: assume the worst
    digest = keccak(item)
    for i in (0, 2, 4):
        bit = ((digest[i] << 8) | digest[i + 1]) & 2047
        if not bloom[255 - bit // 8] & (1 << (bit % 8)):
            return False
    return True


def is_quiet_block(block: Mapping[str, Any], addresses: Iterable[str]) -> bool:
    """Whether `block` (a header as web3 returns it) certainly holds no log of any of `addresses`."""
    bloom = block.get("logsBloom")
    if bloom is None:
        return False
    raw = bytes(bloom)
    return not any(bloom_may_contain(raw, to_canonical_address(a)) for a in addresses)
