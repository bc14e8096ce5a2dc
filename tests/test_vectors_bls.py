"""The committed BLS and constants vectors equal what Python computes now.

forge reads the same files (contracts/test/BLSVectors.t.sol, Constants.t.sol), so py_ecc signatures,
aggregates and proofs of possession are the ones Solidity is shown to verify.
"""

from __future__ import annotations

import json

from protocol import bls
from protocol.hashing import keccak256
from tests.vectors.generate_bls import AGGREGATE_SUBSETS, VECTORS_DIR, render_all


def test_committed_bls_vectors_are_current():
    for name, text in render_all().items():
        path = VECTORS_DIR / name
        assert path.exists(), f"{name} missing; run: python -m tests.vectors.generate_bls"
        assert path.read_text() == text, f"{name} is stale; run: python -m tests.vectors.generate_bls"


def test_vector_aggregate_verifies_in_python():
    data = json.loads((VECTORS_DIR / "bls.json").read_text())
    message = bytes.fromhex(data["verdict"]["message"][2:])
    subset = AGGREGATE_SUBSETS[0]
    signers = [bls.compute_key_pair(keccak256(f"gradledger juror {i}".encode())) for i in subset]
    compressed = bls.compute_aggregate_signature([bls.compute_signature(k, message) for k in signers])
    assert "0x" + bls.compute_eip2537_g2(compressed).hex() == data["aggregates"][0]["signature"]
    assert data["aggregates"][0]["bitmap"] == bls.compute_signer_bitmap(subset, data["keyCount"])
    assert bls.verify_aggregate_signature([k.public_key for k in signers], message, compressed)
