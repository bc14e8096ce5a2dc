"""What the finality waits and readers need of a chain client, as a structural type below the client.

`ChainClient` (protocol/adapters/chain.py) is built from the transaction sender (protocol/adapters/transactions.py),
which waits on the finality helpers (protocol/adapters/finality.py); those helpers take the client back as an
argument. Naming `ChainClient` there closed a cycle chain -> transactions -> finality -> chain. They name this
`ChainConnection` instead: the handful of members they call, which `ChainClient` has, so the modules read bottom-up
(chain_errors, chain_connection, finality, transactions, chain) and the acyclic-siblings contract in .importlinter
holds.

# INVARIANT: every member here is one `ChainClient` defines with the same signature; mypy checks each place a
`ChainClient` is passed where a `ChainConnection` is expected, so a renamed client method fails the type check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from hexbytes import HexBytes
    from web3 import Web3
    from web3.types import BlockIdentifier

    from protocol.history.events import ChainEvent

T = TypeVar("T")


class ChainConnection(Protocol):
    """The web3 connection with retries, the head and final block, reads of blocks and events, and re-sending of
    the signed transactions this process sent: what confirmation waits and reorg-checked readers use."""

    w3: Web3
    rpc_url: str

    def _retry(self, fn: Callable[[], T], *, what: str) -> T:
        """`fn()` retried with backoff while the RPC is unreachable (ChainUnavailableError after the last try)."""
        ...

    def _send_raw(self, raw: bytes, context: str) -> HexBytes:
        """Send already-signed bytes (the same bytes again after a reorg dropped them)."""
        ...

    def block_number(self) -> int: ...

    def final_block_number(self) -> int: ...

    def get_block(self, block: BlockIdentifier = "latest") -> Any: ...

    def note_reorg(self) -> None: ...

    def sent_transactions(self, address: str) -> dict[int, bytes]: ...

    def get_events(
        self,
        from_block: int,
        to_block: int | None = None,
        *,
        chunk: int = 2000,
        names: Iterable[str] | None = None,
        contracts: Iterable[str] | None = None,
    ) -> list[ChainEvent]: ...
