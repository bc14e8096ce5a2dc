"""`gradledger demo`: what the project can do so far, exercised for real.

Until the DiLoCo engine lands this demo exercises the protocol's hashing core on a small
random model update -- state hash, update sketch, segment leaves, Merkle proof, sampling --
prints what it computed and exits 0.
"""

from __future__ import annotations

import torch
from rich.console import Console
from rich.table import Table

from protocol.hashing import hash_to_hex, keccak256
from protocol.merkle import (
    SegmentLeaf,
    build_merkle_tree,
    compute_leaf_hash,
    get_merkle_proof_at,
    verify_merkle_proof,
)
from protocol.sampling import compute_detection_probability, compute_sampled_segments, compute_sampling_seed
from protocol.sketch import SketchSpec, compute_sketch_hash, compute_update, compute_update_sketch
from protocol.state import compute_state_hash

SOLVER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


def run_demo() -> int:
    console = Console()
    generator = torch.Generator().manual_seed(0)
    spec = SketchSpec(seed=keccak256(b"gradledger demo projection"))
    states = [{"w": torch.randn(256, 128, generator=generator), "b": torch.zeros(128)}]
    for _ in range(4):
        prev = states[-1]
        states.append({name: t - 0.01 * torch.randn(t.shape, generator=generator) for name, t in prev.items()})
    hashes = [compute_state_hash(s) for s in states]
    leaves = []
    for i in range(4):
        sketch = compute_update_sketch(compute_update(states[i], states[i + 1]), spec)
        leaves.append(SegmentLeaf(1, 0, SOLVER, i, hashes[i], hashes[i + 1], compute_sketch_hash(sketch), 4096))
    tree = build_merkle_tree([compute_leaf_hash(leaf) for leaf in leaves])
    seed = compute_sampling_seed(keccak256(b"block after commit"), 1, 0, SOLVER)
    samples = compute_sampled_segments(seed, len(leaves), 2)

    table = Table(title="gradledger protocol core (training, contracts and nodes land in later issues)")
    table.add_column("step")
    table.add_column("result")
    table.add_row(
        "state hashes (SHA-256 of canonical bytes)",
        f"{len(hashes)} checkpoints, c0 {hash_to_hex(hashes[0])[:18]}...",
    )
    table.add_row("segment root (keccak sorted-pair tree)", hash_to_hex(tree.root))
    ok = all(verify_merkle_proof(get_merkle_proof_at(tree, i), tree.root, leaf) for i, leaf in enumerate(tree.leaves))
    table.add_row("Merkle proofs verify", str(ok))
    table.add_row("sampled segments", str(list(samples)))
    table.add_row("P(catch 1 of 4 faked, 2 samples)", f"{float(compute_detection_probability(0.25, 2)):.4f}")
    console.print(table)
    return 0 if ok else 1
