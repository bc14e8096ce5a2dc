"""What the chain client raises and returns (protocol/adapters/chain.py), in a module of their own so the
transaction sender (protocol/adapters/transactions.py) shares them without importing the client."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol.errors import GradledgerError
from protocol.history.events import ChainEvent


class ChainError(GradledgerError):
    """Something went wrong talking to the chain."""


class ChainUnavailableError(ChainError):
    """The RPC endpoint cannot be reached (after retries)."""


class WrongChainError(ChainError):
    """The RPC endpoint serves another chain than the manifest's."""


class UnknownHeaderLayoutError(ChainError):
    """A block's header fields, RLP-encoded in the order this client knows, do not hash to the block's hash: the
    node serves a header layout (fork, client) this client cannot prove on-chain."""


class ContractRevertError(ChainError):
    """A call or transaction reverted; `error` is the decoded custom error name."""

    def __init__(self, error: str, args: dict[str, Any], detail: str) -> None:
        super().__init__(detail)
        self.error = error
        self.args_ = args


@dataclass(frozen=True)
class TxResult:
    """A mined, successful transaction."""

    transaction_hash: str
    block_number: int
    gas_used: int
    events: tuple[ChainEvent, ...]
    contract_address: str | None = None


class HeadGoneError(Exception):
    """A read at the remembered head's number found no such block: the chain reorganised to a shorter one."""


def is_unknown_block(exc: Exception) -> bool:
    """Whether an RPC error says the block asked for does not exist (anvil: BlockOutOfRange; geth: header not found)."""
    text = str(exc).lower()
    return any(word in text for word in ("blockoutofrange", "header not found", "unknown block", "block not found"))
