"""Fees, confirmations and reorgs on a real chain: the policy a node runs under and the readers that survive a reorg.

- `ChainPolicy`: the operator's fee cap and tip (`--max-fee-gwei`, `--priority-fee-gwei`) and the confirmations an
  event needs before a node treats it as final (`--confirmations`; 0 on the devnet, 2 elsewhere by default). The
  CLI sets it once per process (`set_default_chain_policy`); a `ChainClient` opened without one uses it.
- `wait_for_confirmations`: a sent transaction counts as done only once it is `confirmations` blocks deep and still
  canonical; one a reorg dropped before that goes back as the very same signed bytes (same nonce: it can land once
  or not at all, never twice).
- `FinalEventReader` (events kept in memory) and `DurableReadCursor` (a block cursor kept in the node's SQLite)
  read events up to `head - confirmations` and, before each read, check that the last block they read is still
  canonical; after a reorg they drop what came from orphaned blocks and read again from the fork point
  (protocol/finality.py holds the pure rules).
- `require_devnet`: anvil's time and mining controls are refused on any client but anvil on the devnet (31337).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hexbytes import HexBytes
from web3.exceptions import TransactionNotFound, Web3RPCError

from protocol.errors import ConfigError, GradledgerError
from protocol.fees import DEFAULT_PRIORITY_FEE_WEI, GWEI
from protocol.finality import (
    DEVNET_CHAIN_ID,
    BlockRef,
    ReadProgress,
    compute_fork_point,
    drop_orphaned,
    get_default_confirmations,
    get_read_range,
    record_read,
    rewind,
)
from protocol.history.events import ChainEvent

if TYPE_CHECKING:
    from protocol.adapters.chain_connection import ChainConnection
    from protocol.adapters.nodestate import NodeState

logger = logging.getLogger("gradledger.chain")

CONFIRMATION_TIMEOUT_S = 300.0
"""How long a mined transaction may take to become final (dropped and re-sent included) before the node gives up."""
POLL_S = 0.25


class DevnetOnlyError(GradledgerError):
    """A devnet-only shortcut (anvil's clock or mining controls) was asked of another chain."""


class ConfirmationError(GradledgerError):
    """A transaction did not become final: dropped by a reorg and its nonce taken, or not deep enough in time."""


def require_devnet(chain_id: int, client_version: str, is_anvil: bool, what: str) -> None:
    """Refuse `what` (an anvil_* / evm_* call) on anything but anvil serving the devnet chain id: the shortcut keys
    on the client (`web3_clientVersion`), not the chain id alone, which other devnets (Hardhat) share."""
    if chain_id != DEVNET_CHAIN_ID or not is_anvil:
        raise DevnetOnlyError(
            f"{what} is an anvil devnet call (its clock and mining controls, chain id {DEVNET_CHAIN_ID}); this RPC "
            f"runs {client_version} on chain {chain_id}, whose blocks and time move on their own: nothing was sent. "
            "Point --rpc-url at `gradledger devnet up` to use it"
        )


@dataclass(frozen=True)
class ChainPolicy:
    """What the operator set for fees and finality; None fields take the chain's defaults."""

    max_fee_wei: int | None = None
    """The most a transaction pays per gas (base fee + tip); None: no cap."""
    priority_fee_wei: int = DEFAULT_PRIORITY_FEE_WEI
    confirmations: int | None = None
    """Blocks deep an event or a transaction must be to count; None: 0 on the devnet, 2 elsewhere."""

    @classmethod
    def from_gwei(
        cls, max_fee_gwei: float | None, priority_fee_gwei: float | None, confirmations: int | None
    ) -> ChainPolicy:
        """The policy of the command-line options (gwei as given, e.g. 30 or 1.5)."""
        if confirmations is not None and confirmations < 0:
            raise ConfigError(f"--confirmations must be 0 or more, got {confirmations}")
        for name, value in (("--max-fee-gwei", max_fee_gwei), ("--priority-fee-gwei", priority_fee_gwei)):
            if value is not None and not value >= 0:
                raise ConfigError(f"{name} must be a number of gwei, 0 or more; got {value}")
        priority = DEFAULT_PRIORITY_FEE_WEI if priority_fee_gwei is None else round(priority_fee_gwei * GWEI)
        max_fee = None if max_fee_gwei is None else round(max_fee_gwei * GWEI)
        if max_fee is not None and priority > max_fee:
            raise ConfigError(
                f"--priority-fee-gwei {priority / GWEI:g} is above --max-fee-gwei {max_fee / GWEI:g}: the tip is part "
                "of the fee the cap bounds; lower the tip or raise the cap"
            )
        return cls(max_fee, priority, confirmations)

    def get_confirmations(self, chain_id: int) -> int:
        return self.confirmations if self.confirmations is not None else get_default_confirmations(chain_id)


_default_policy = ChainPolicy()


def set_default_chain_policy(policy: ChainPolicy) -> None:
    """The policy of every ChainClient this process opens without one (the CLI sets it from its options)."""
    global _default_policy
    _default_policy = policy


def get_default_chain_policy() -> ChainPolicy:
    return _default_policy


# -- transactions ----------------------------------------------------------------------------------------------


def _receipt_or_none(chain: ChainConnection, tx_hash: HexBytes) -> Any:
    try:
        return chain._retry(lambda: chain.w3.eth.get_transaction_receipt(tx_hash), what="eth_getTransactionReceipt")
    except TransactionNotFound:
        return None


def _is_pending(chain: ChainConnection, tx_hash: HexBytes) -> bool:
    try:
        chain._retry(lambda: chain.w3.eth.get_transaction(tx_hash), what="eth_getTransactionByHash")
    except TransactionNotFound:
        return False
    return True


def wait_for_confirmations(
    chain: ChainConnection, receipt: Any, raw: bytes, tx: dict, context: str, confirmations: int
) -> Any:
    """The receipt of `raw` (signed from `tx`) once it is `confirmations` blocks deep in the canonical chain.

    A reorg may drop the transaction meanwhile (a chain moves its last blocks, and anvil's `anvil_reorg` forgets
    their transactions): it is sent again byte for byte -- same nonce, same call -- so it lands once or not at all,
    but only while its nonce is the account's next one. When an earlier transaction of the account was dropped too
    (the same bytes would wait behind a gap) or the nonce was used meanwhile, ConfirmationError: the node decides
    again from the chain's state whether the action is still missing.
    """
    tx_hash = HexBytes(receipt["transactionHash"])
    deadline = time.monotonic() + CONFIRMATION_TIMEOUT_S
    while time.monotonic() < deadline:
        current = _receipt_or_none(chain, tx_hash)
        if current is None:
            if not _is_pending(chain, tx_hash):
                _resend_dropped(chain, raw, tx, tx_hash, context)
        else:
            block = int(current["blockNumber"])
            if chain.block_number() - block >= confirmations:
                if bytes(chain.get_block(block)["hash"]) == bytes(current["blockHash"]):
                    return current
                continue  # the block moved under us: read the receipt again
        time.sleep(POLL_S)
    raise ConfirmationError(
        f"{context}: transaction {tx_hash.to_0x_hex()} not {confirmations} blocks deep within "
        f"{CONFIRMATION_TIMEOUT_S:.0f} s; check the chain at {chain.rpc_url} (is it producing blocks?)"
    )


def _resend_dropped(chain: ChainConnection, raw: bytes, tx: dict, tx_hash: HexBytes, context: str) -> None:
    chain.note_reorg()
    sender, nonce = tx["from"], int(tx["nonce"])
    fill_nonce_gap(chain, tx, raw, context)
    if _is_pending(chain, tx_hash) or _receipt_or_none(chain, tx_hash) is not None:
        return
    next_nonce = chain._retry(
        lambda: chain.w3.eth.get_transaction_count(sender, "pending"), what="eth_getTransactionCount"
    )
    if next_nonce != nonce:
        raise ConfirmationError(
            f"{context}: transaction {tx_hash.to_0x_hex()} (nonce {nonce}) was dropped by a reorg and the account's "
            f"next nonce is now {next_nonce} ("
            + ("an earlier transaction of it was dropped too" if next_nonce < nonce else "its nonce was used since")
            + "); not sent again as is: the node reads the chain again and acts only if the action is still missing"
        )
    logger.warning(
        "transaction dropped by a reorg: sending the same signed transaction again",
        extra={"fields": {"call": context, "tx": tx_hash.to_0x_hex(), "why": "a chain reorganisation removed the "
                          "block that held it; the same bytes (same nonce) can land once at most"}},
    )  # fmt: skip
    try:
        chain._send_raw(raw, context)
    except Web3RPCError as exc:
        if "already known" in str(exc).lower():
            return
        if "nonce" in str(exc).lower():
            raise ConfirmationError(
                f"{context}: transaction {tx_hash.to_0x_hex()} was dropped by a reorg and its nonce is now used by "
                "another transaction of this account (another process signing with the same key?); the node reads "
                "the chain again and acts only if the action is still missing"
            ) from None
        raise


RECEIPT_TIMEOUT_S = 120.0
GAP_CHECK_S = 2.0


def fill_nonce_gap(chain: ChainConnection, tx: dict, raw: bytes, context: str) -> None:
    """Send again this process's own transactions a reorg dropped below `tx`'s nonce, then `tx` if it was dropped.

    A transaction waits in the pool behind a gap when an earlier one of the account vanished with an orphaned block;
    the earlier ones go back as the very same signed bytes (recorded by the client when first sent), so every
    action lands once at most and none waits behind a hole."""
    sender, nonce = tx["from"], int(tx["nonce"])
    mined = chain._retry(lambda: chain.w3.eth.get_transaction_count(sender, "latest"), what="eth_getTransactionCount")
    own = {**chain.sent_transactions(sender), nonce: raw}
    for missing in range(mined, nonce + 1):
        earlier = own.get(missing)
        if earlier is None or _is_pending(chain, HexBytes(chain.w3.keccak(earlier))):
            continue
        logger.warning(
            "transaction dropped by a reorg: sending the same signed transaction again",
            extra={"fields": {"call": context, "nonce": missing, "why": "a reorg removed it; the same bytes (same "
                              "nonce) land once at most, and later transactions no longer wait behind a gap"}},
        )  # fmt: skip
        chain.note_reorg()
        try:
            chain._send_raw(earlier, context)
        except Web3RPCError as exc:
            if "already known" not in str(exc).lower() and "nonce" not in str(exc).lower():
                raise


def wait_for_receipt(chain: ChainConnection, tx_hash: HexBytes, tx: dict, raw: bytes, context: str) -> Any:
    """The receipt of a sent transaction, filling a nonce gap a reorg left below it (`fill_nonce_gap`) meanwhile;
    ChainError-like ConfirmationError after RECEIPT_TIMEOUT_S."""
    deadline = time.monotonic() + RECEIPT_TIMEOUT_S
    next_check = time.monotonic() + GAP_CHECK_S
    while time.monotonic() < deadline:
        receipt = _receipt_or_none(chain, tx_hash)
        if receipt is not None:
            return receipt
        if time.monotonic() >= next_check:
            fill_nonce_gap(chain, tx, raw, context)
            next_check = time.monotonic() + GAP_CHECK_S
        time.sleep(0.05)
    raise ConfirmationError(f"{context}: transaction {tx_hash.to_0x_hex()} not mined within {RECEIPT_TIMEOUT_S:.0f} s")


# -- events -------------------------------------------------------------------------------------------------


def _canonical_hash(chain: ChainConnection, number: int) -> bytes | None:
    """The hash of block `number` on the chain now: read through `chain.get_block`, so inside a node's tick every
    reader's check of the same block costs one read per head (issue 39), and outside it stays a live read. A reorg
    during a span's read that this leaves unseen is seen by the next read's `find_fork` (the span is recorded with the
    hash read before it)."""
    block = chain.get_block(number)
    return bytes(block["hash"]) if block is not None else None


def find_fork(chain: ChainConnection, progress: ReadProgress) -> tuple[bool, int | None]:
    """(reorganised, fork point): whether the last block read is no longer canonical, and if so the highest
    remembered block that still is (None: none of them, read everything again)."""
    last = progress.last_read
    if last is None or _canonical_hash(chain, last.number) == last.hash:
        return False, None
    canonical: dict[int, bytes | None] = {last.number: None}
    for ref in reversed(progress.remembered[:-1]):
        canonical[ref.number] = _canonical_hash(chain, ref.number)
        if canonical[ref.number] == ref.hash:
            break
    return True, compute_fork_point(progress.remembered, canonical)


def _note_reorg(chain: ChainConnection, reader: str, progress: ReadProgress, fork: int | None, dropped: int) -> None:
    chain.note_reorg()
    logger.warning(
        "chain reorganised: events of orphaned blocks dropped, reading again from the fork point",
        extra={"fields": {
            "reader": reader, "last_read": progress.last_read.number if progress.last_read else -1,
            "fork_block": fork if fork is not None else "unknown", "dropped_events": dropped,
            "reread_from": fork + 1 if fork is not None else progress.start_block,
        }},
    )  # fmt: skip


def read_final_span(
    chain: ChainConnection,
    progress: ReadProgress,
    names: Iterable[str] | None,
    contracts: Iterable[str] | None,
) -> tuple[ReadProgress, list[ChainEvent]] | None:
    """Events of the final blocks not read yet, and the progress after them (None when nothing final is new, or
    when the last block moved while reading: read again next time)."""
    span = get_read_range(progress, chain.final_block_number())
    if span is None:
        return None
    start, end = span
    before = _canonical_hash(chain, end)
    events = chain.get_events(start, end, names=names, contracts=contracts)
    if before is None or _canonical_hash(chain, end) != before:
        return None
    return record_read(progress, BlockRef(end, before)), events


@dataclass(frozen=True)
class ReadUpdate:
    """What one `read_new` brought: the new events and those dropped because their blocks were orphaned."""

    new: tuple[ChainEvent, ...] = ()
    dropped: tuple[ChainEvent, ...] = ()
    reorganised: bool = False


class FinalEventReader:
    """Events of some contracts from `start_block` on, read incrementally up to the final block, reorg-checked.

    `contracts` may be a callable, for readers whose set grows (a run's share token once it is known).
    """

    def __init__(
        self,
        chain: ChainConnection,
        start_block: int,
        *,
        names: Sequence[str] | None = None,
        contracts: Sequence[str] | Callable[[], Sequence[str]] | None = None,
        label: str = "events",
    ) -> None:
        self.chain = chain
        self.names = names
        self.contracts = contracts
        self.label = label
        self.progress = ReadProgress.starting_at(start_block)
        self.events: list[ChainEvent] = []
        self.reorgs = 0

    @property
    def next_block(self) -> int:
        return self.progress.next_block

    def read_new(self) -> ReadUpdate:
        reorganised, fork = find_fork(self.chain, self.progress)
        dropped: list[ChainEvent] = []
        if reorganised:
            self.events, dropped = drop_orphaned(self.events, fork, self.progress.start_block)
            _note_reorg(self.chain, self.label, self.progress, fork, len(dropped))
            self.progress = rewind(self.progress, fork)
            self.reorgs += 1
        contracts = self.contracts() if callable(self.contracts) else self.contracts
        read = read_final_span(self.chain, self.progress, self.names, contracts)
        if read is None:
            return ReadUpdate((), tuple(dropped), reorganised)
        self.progress, new = read
        self.events.extend(new)
        return ReadUpdate(tuple(new), tuple(dropped), reorganised)


class DurableReadCursor:
    """A node's block cursor over some events, kept in its SQLite (kind `read_progress`), reorg-checked.

    `span()` checks the last block read and returns the events of the final blocks not read yet; the caller handles
    them and then calls `advance()`; a node killed in between reads them again (its handling is idempotent).
    A cursor saved by an older node (`NodeState` cursors: a bare block number) is taken over. Its progress is written
    as bookkeeping (`NodeState.put(counts=False)`): moving past blocks without events changes nothing a tick decides
    on, so it leaves the tick idle (issue 39: it made every new block cost a second, identical tick).
    """

    KIND = "read_progress"

    def __init__(self, chain: ChainConnection, state: NodeState, name: str, start_block: int) -> None:
        self.chain = chain
        self.state = state
        self.name = name
        raw = state.get(self.KIND, name)
        if raw is not None:
            self.progress = ReadProgress.from_json(raw)
        else:
            self.progress = ReadProgress(start_block, state.get_cursor(name, start_block), ())
        self._pending: ReadProgress | None = None
        self.last_fork: int | None = None
        self.reorgs = 0

    def span(self, names: Iterable[str] | None = None, contracts: Iterable[str] | None = None) -> list[ChainEvent]:
        reorganised, fork = find_fork(self.chain, self.progress)
        if reorganised:
            _note_reorg(self.chain, self.name, self.progress, fork, -1)
            self.progress = rewind(self.progress, fork)
            self.state.put(self.KIND, self.name, self.progress.to_json())
            self.last_fork = fork if fork is not None else self.progress.start_block - 1
            self.reorgs += 1
        read = read_final_span(self.chain, self.progress, names, contracts)
        if read is None:
            self._pending = None
            return []
        self._pending, events = read
        return events

    def advance(self) -> None:
        """Record the span returned by the last `span()` as handled."""
        if self._pending is None:
            return
        self.progress, self._pending = self._pending, None
        self.state.put(self.KIND, self.name, self.progress.to_json(), counts=False)  # bookkeeping: the tick stays idle
        self.state.set_cursor(self.name, self.progress.next_block)
