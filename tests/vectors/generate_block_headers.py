"""Write tests/vectors/block_headers.json: real anvil block headers that pytest and forge both read.

    python -m tests.vectors.generate_block_headers

Each vector is one block as anvil served it: its JSON-RPC header fields, its RLP-encoded header (what
Verification.drawSeed and Plants take), its hash and its mixHash (the RANDAO value). pytest
(tests/adapters/test_block_headers.py) checks that protocol.adapters.block_headers.encode_block_header rebuilds the RLP
from the fields and that decoding it gives the mixHash; forge (contracts/test/BlockRandomness.t.sol) checks that
BlockRandomness.randaoOf returns the mixHash once blockhash is the vector's hash. Blocks come from several
hardforks (each appends header fields) and carry a transfer and a log, so every kind of field is non-trivial.
anvil mixes a random RANDAO value into each block, so running this again writes other blocks: the file is
committed as generated, and the tests check it against itself and against both languages, not against a rerun.
anvil 1.7.1 has no option to set a block's extraData, so every vector's is empty; the forge fuzz test and the
pytest cover non-empty extraData with headers they build.
"""

from __future__ import annotations

import json
from typing import Any

from hexbytes import HexBytes
from web3 import Web3

from devnet.anvil import AnvilProcess
from protocol.adapters.block_headers import HEADER_FIELDS, OPTIONAL_HEADER_FIELDS, encode_block_header
from protocol.hashing import keccak256
from tests.vectors.generate import VECTORS_DIR

HARDFORKS = ("prague", "cancun", "shanghai", "paris")
"""anvil's default (the newest header, with requestsHash) first, then back to the merge: each drops fields."""
LOG_INIT_CODE = "0x60006000a000"
"""PUSH1 0 PUSH1 0 LOG0 STOP: a creation that emits one empty log, so the block's logsBloom is not all zero."""


def _json_value(value: Any) -> Any:
    """A header field as JSON: integers as numbers, byte strings as 0x-hex, the coinbase as its checksum string."""
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return value
    return "0x" + bytes(HexBytes(value)).hex()


def _vector(name: str, block: Any) -> dict[str, Any]:
    header = encode_block_header(block)
    if keccak256(header) != bytes(block["hash"]):
        raise SystemExit(f"{name}: the encoded header does not hash to block {block['number']}'s hash")
    fields = {k: _json_value(block[k]) for k in (*HEADER_FIELDS, *OPTIONAL_HEADER_FIELDS) if block.get(k) is not None}
    return {
        "name": name,
        "number": int(block["number"]),
        "hash": "0x" + bytes(block["hash"]).hex(),
        "mixHash": "0x" + bytes(block["mixHash"]).hex(),
        "rlp": "0x" + header.hex(),
        "fields": fields,
    }


def _blocks_of(hardfork: str) -> list[dict[str, Any]]:
    """From a fresh anvil on `hardfork`: a block with a transfer and a log-emitting creation, then an empty block
    (and, on the newest fork, the genesis block, whose mixHash is zero)."""
    with AnvilProcess(accounts=2, extra_args=("--hardfork", hardfork)) as anvil:
        w3 = Web3(Web3.HTTPProvider(anvil.rpc_url))
        sender, receiver = w3.eth.accounts[:2]
        w3.provider.make_request("evm_setAutomine", [False])
        w3.eth.send_transaction({"from": sender, "to": receiver, "value": 10**18})
        w3.eth.send_transaction({"from": sender, "data": LOG_INIT_CODE})
        w3.provider.make_request("evm_mine", [])
        w3.provider.make_request("evm_mine", [])
        busy, empty = w3.eth.get_block(1), w3.eth.get_block(2)
        if len(busy["transactions"]) != 2:
            raise SystemExit(f"{hardfork}: expected both transactions in block 1, got {len(busy['transactions'])}")
        vectors = [_vector(f"{hardfork} transfer and log", busy), _vector(f"{hardfork} empty", empty)]
        if hardfork == HARDFORKS[0]:
            vectors.insert(0, _vector(f"{hardfork} genesis", w3.eth.get_block(0)))
        return vectors


def main() -> int:
    vectors = [v for hardfork in HARDFORKS for v in _blocks_of(hardfork)]
    text = json.dumps({"count": len(vectors), "vectors": vectors}, indent=2) + "\n"
    (VECTORS_DIR / "block_headers.json").write_text(text)
    print(f"wrote {len(vectors)} headers to {VECTORS_DIR / 'block_headers.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
