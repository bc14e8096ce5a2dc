"""The committed cross-language vectors equal what the Python protocol computes now.

forge reads the same files (contracts/test/CrossLanguage.t.sol), so Solidity and Python
agree on leaves, roots, proofs, seeds and samples.
"""

from __future__ import annotations

import json

from protocol.merkle import compute_root_from_proof
from tests.vectors.generate import VECTORS_DIR, render_all


def test_committed_vectors_are_current():
    for name, text in render_all().items():
        path = VECTORS_DIR / name
        assert path.exists(), f"{name} missing; run: python -m tests.vectors.generate"
        assert path.read_text() == text, f"{name} is stale; run: python -m tests.vectors.generate"


def test_vector_proofs_fold_to_their_roots():
    data = json.loads((VECTORS_DIR / "merkle.json").read_text())
    for tree in data["trees"]:
        for leaf, proof in zip(tree["leafHashes"], tree["proofs"], strict=True):
            root = compute_root_from_proof([bytes.fromhex(p[2:]) for p in proof], bytes.fromhex(leaf[2:]))
            assert "0x" + root.hex() == tree["root"]
