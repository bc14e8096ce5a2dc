"""A block header's RLP encoding from its JSON-RPC fields: what `ChainClient.get_block_header_rlp` hands a contract
(BlockRandomness reads the RANDAO value from it) after checking that its keccak256 is the block's hash."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import rlp
from hexbytes import HexBytes

from protocol.adapters.chain_errors import UnknownHeaderLayoutError

HEADER_FIELDS = (
    "parentHash", "sha3Uncles", "miner", "stateRoot", "transactionsRoot", "receiptsRoot", "logsBloom", "difficulty",
    "number", "gasLimit", "gasUsed", "timestamp", "extraData", "mixHash", "nonce",
)  # fmt: skip
"""Every block header's fields, in their RLP order (JSON-RPC names); mixHash, the RANDAO value since the merge, is
the 14th, where BlockRandomness.randaoOf reads it."""
OPTIONAL_HEADER_FIELDS = (
    "baseFeePerGas", "withdrawalsRoot", "blobGasUsed", "excessBlobGas", "parentBeaconBlockRoot", "requestsHash",
)  # fmt: skip
"""The fields later forks appended (London, Shanghai, Cancun, Prague), in order; a block has those of its fork."""
_INTEGER_HEADER_FIELDS = frozenset(
    {"difficulty", "number", "gasLimit", "gasUsed", "timestamp", "baseFeePerGas", "blobGasUsed", "excessBlobGas"}
)


def encode_block_header(block: Mapping[str, Any]) -> bytes:
    """The RLP encoding of a block's header from its JSON-RPC fields (as web3 returns them, or as 0x-hex strings):
    HEADER_FIELDS, then whichever OPTIONAL_HEADER_FIELDS the block has. Its keccak256 is the block hash when the layout
    is the one the node's fork uses; `ChainClient.get_block_header_rlp` checks that before a contract is given it.

    Raises UnknownHeaderLayoutError when a required field is missing (a node whose blocks we cannot encode).
    """
    missing = [name for name in HEADER_FIELDS if block.get(name) is None]
    if missing:
        raise UnknownHeaderLayoutError(
            f"block {block.get('number')} has no header field(s) {missing}: the node serves a block layout this client "
            "cannot encode; use an execution client that returns every header field"
        )
    names = [*HEADER_FIELDS, *(name for name in OPTIONAL_HEADER_FIELDS if block.get(name) is not None)]
    return rlp.encode([_header_value(name, block[name]) for name in names])


def _header_value(name: str, value: Any) -> int | bytes:
    """A header field as RLP encodes it: integers by value (big-endian, no leading zeros), the rest as byte strings
    (hashes, the coinbase address, logsBloom, extraData, the 8-byte nonce)."""
    if name in _INTEGER_HEADER_FIELDS:
        return int(value, 16) if isinstance(value, str) else int(value)
    return bytes(HexBytes(value))
