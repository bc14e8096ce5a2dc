"""Write the BLS vectors that pytest and forge both read.

    python -m tests.vectors.generate_bls          # rewrite tests/vectors/bls.json (`make vectors` runs it)
    python -m tests.vectors.generate_bls --check  # exit 1 if the file is stale

bls.json holds py_ecc keys (EIP-2537 encodings), proofs of possession, hash-to-G2 outputs, a single
signature and aggregate signatures over a verdict message; contracts/test/BLSVectors.t.sol checks that
Solidity verifies them and rejects a wrong bitmap, message, key or a point at infinity.
Everything is derived from fixed seeds, so the file is reproducible; py_ecc needs no pairing to
produce it, which keeps generation to a few seconds. (constants.json is generated from Constants.sol
itself: tests/vectors/generate_constants.py.)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys

from py_ecc.bls.hash_to_curve import hash_to_G2
from py_ecc.optimized_bls12_381 import normalize

from protocol import bls
from protocol.constants import BLS_POP_DST, BLS_SIG_DST
from protocol.hashing import hash_to_hex, keccak256
from tests.vectors.generate import VECTORS_DIR

KEY_COUNT = 5
POP_ACCOUNT = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
DISPUTES = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
CHAIN_ID = 31337
HASH_MESSAGES = (b"", b"abc", b"gradledger verdict")
AGGREGATE_SUBSETS = ((0, 1, 2), (1, 3), (0, 1, 2, 3, 4))


def _hex(data: bytes) -> str:
    """0x-prefixed lowercase hex, the JSON form forge parses with parseJsonBytes."""
    return "0x" + bytes(data).hex()


def _hash_to_g2_encoding(message: bytes, dst: bytes) -> bytes:
    """py_ecc's RFC 9380 hash_to_G2, in EIP-2537 encoding (Fp2 coefficients c0 then c1)."""
    x, y = normalize(hash_to_G2(message, dst, hashlib.sha256))
    return b"".join(int(c).to_bytes(64, "big") for c in (*x.coeffs, *y.coeffs))


def build_bls_vectors() -> dict:
    """Keys, PoPs, hash_to_G2 outputs and aggregates from fixed seeds (no pairing needed)."""
    keys = [bls.compute_key_pair(keccak256(f"gradledger juror {i}".encode())) for i in range(KEY_COUNT)]
    dispute_id = keccak256(b"vector dispute")
    message = bls.compute_verdict_message(DISPUTES, CHAIN_ID, dispute_id, True)
    signatures = [bls.compute_signature(key, message) for key in keys]
    aggregates = []
    for subset in AGGREGATE_SUBSETS:
        aggregates.append(
            {
                "bitmap": bls.compute_signer_bitmap(subset, KEY_COUNT),
                "signature": _hex(
                    bls.compute_eip2537_g2(bls.compute_aggregate_signature([signatures[i] for i in subset]))
                ),
                "publicKey": _hex(
                    bls.compute_eip2537_g1(bls.compute_aggregate_public_key([keys[i].public_key for i in subset]))
                ),
            }
        )
    return {
        "sigDst": _hex(BLS_SIG_DST),
        "popDst": _hex(BLS_POP_DST),
        "popAccount": POP_ACCOUNT,
        "keyCount": KEY_COUNT,
        "keys": [
            {
                "compressed": _hex(key.public_key),
                "publicKey": _hex(bls.compute_eip2537_g1(key.public_key)),
                "pop": _hex(bls.compute_eip2537_g2(bls.compute_proof_of_possession(key, POP_ACCOUNT))),
            }
            for key in keys
        ],
        "hashToG2": [{"message": _hex(m), "point": _hex(_hash_to_g2_encoding(m, BLS_SIG_DST))} for m in HASH_MESSAGES],
        "verdict": {
            "disputes": DISPUTES,
            "chainId": CHAIN_ID,
            "disputeId": hash_to_hex(dispute_id),
            "challengerWins": True,
            "message": _hex(message),
            "signature0": _hex(bls.compute_eip2537_g2(signatures[0])),
        },
        "aggregateCount": len(aggregates),
        "aggregates": aggregates,
    }


def render_all() -> dict[str, str]:
    """File name -> exact JSON text."""
    return {
        "bls.json": json.dumps(build_bls_vectors(), indent=1) + "\n",
    }


def main() -> int:
    """Write the files, or with --check report stale ones and exit 1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the files are current")
    args = parser.parse_args()
    stale = []
    for name, text in render_all().items():
        path = VECTORS_DIR / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"stale vectors: {', '.join(stale)}; run: python -m tests.vectors.generate_bls", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
