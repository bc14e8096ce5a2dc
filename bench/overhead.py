"""Solver protocol overhead: hashing, sketching, checkpointing and committing vs training.

    python bench/overhead.py [--quick]

For a model, one round of H inner steps is run twice from the same θ: once as bare training
(`run_inner_steps` only: the arithmetic every honest solver must do anyway), once as the solver
node does it (`train_round` with every checkpoint written to an artifact store, the update
sketches, the pseudo-gradient, the commitment document), plus one `commit` transaction on a
fresh anvil. overhead_pct = 100 x (protocol_s / train_s), protocol_s = node round + commit -
bare training. Medians over --reps repetitions. Models: the demo's default preset and the
"large" preset (~10x parameters). --quick: the demo model only, fewer repetitions.
Last line: one JSON object with train_s, protocol_s, overhead_pct (demo model) and `models`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from devnet.runs import RunRules, build_run_terms
from protocol.adapters.artifacts import BackgroundStateWriter, LocalArtifactStore, put_state
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ROLE_SOLVER, Commitment, ProtocolClient
from protocol.adapters.corpus import load_corpus_shards
from protocol.adapters.keys import get_devnet_account
from protocol.commitment import CommitmentDoc, encode_commitment_doc
from protocol.config import build_run_config, compute_config_hash
from protocol.data import build_token_dataset
from protocol.hashing import hash_to_hex
from protocol.model import build_model
from protocol.outer import get_initial_global_state
from protocol.sketch import encode_sketch
from protocol.state import compute_state_hash
from protocol.training import (
    build_optimizer,
    compute_pseudo_gradient,
    get_params,
    load_checkpoint_state,
    make_start_checkpoint,
    run_inner_steps,
    train_round,
)

SOLVER = get_devnet_account(1)


def bare_training(config, dataset, theta) -> float:
    model = build_model(config.model, config.profile, config.seed_bytes)
    optimizer = build_optimizer(model, config.train)
    load_checkpoint_state(model, optimizer, make_start_checkpoint(theta))
    start = time.perf_counter()
    run_inner_steps(model, optimizer, dataset, config, 0, SOLVER.address, 0, config.train.inner_steps)
    return time.perf_counter() - start


def node_round(config, dataset, theta, store) -> tuple[float, CommitmentDoc]:
    start = time.perf_counter()
    with BackgroundStateWriter(store) as writer:  # exactly what the solver node does
        records, end = train_round(config, dataset, theta, 0, SOLVER.address, save_checkpoint=writer.save)
        for record in records:
            store.put(encode_sketch(record.sketch))
        delta_hash = put_state(store, compute_pseudo_gradient(theta, end))
    doc = CommitmentDoc(
        1,
        0,
        SOLVER.address,
        compute_state_hash(theta),
        delta_hash,
        tuple(r.to_leaf(1, 0, SOLVER.address) for r in records),
    )
    store.put(encode_commitment_doc(doc))
    return time.perf_counter() - start, doc


def commit_seconds(config, doc: CommitmentDoc, out_dir: Path) -> float:
    """One real commit transaction (the run created on a fresh anvil just for it)."""
    with AnvilProcess() as anvil:
        chain = ChainClient(anvil.rpc_url)
        protocol = ProtocolClient(ChainClient(anvil.rpc_url, deploy_protocol(chain, get_devnet_account(0), out_dir)))
        rules = RunRules(rounds=1, commit_window_s=3600)
        terms = build_run_terms(
            compute_config_hash(config), bytes.fromhex(config.data.dataset_root[2:]), doc.theta_hash, config, rules
        )
        run_id, _ = protocol.create_run(get_devnet_account(0), terms, 10**18)
        protocol.deposit_stake(SOLVER, ROLE_SOLVER, rules.solver_min_stake_wei)
        protocol.join_run(SOLVER, run_id)
        start = time.perf_counter()
        protocol.commit(SOLVER, run_id, 0, Commitment(doc.root, doc.delta_hash, doc.tokens))
        return time.perf_counter() - start


def measure(preset: str, inner_steps: int, reps: int, manifest, shards, out_dir: Path) -> dict:
    config = build_run_config(
        preset=preset, run_seed="0x" + "07" * 32, dataset_root=hash_to_hex(manifest.root),
        overrides={"train": {"inner_steps": inner_steps, "steps_per_segment": 5}},
    )  # fmt: skip
    dataset = build_token_dataset(manifest, shards, config.data.eval_shards)
    theta = get_params(get_initial_global_state(config))
    bare, node = [], []
    doc = None
    for _ in range(reps):
        bare.append(bare_training(config, dataset, theta))
        with tempfile.TemporaryDirectory() as tmp:
            seconds, doc = node_round(config, dataset, theta, LocalArtifactStore(Path(tmp)))
            node.append(seconds)
    commit = commit_seconds(config, doc, out_dir)
    train_s, node_s = statistics.median(bare), statistics.median(node)
    protocol_s = max(0.0, node_s - train_s) + commit
    return {
        "preset": preset,
        "parameters": sum(v.numel() for v in theta.values()),
        "inner_steps": inner_steps,
        "segments": config.train.num_segments,
        "train_s": round(train_s, 4),
        "node_round_s": round(node_s, 4),
        "commit_s": round(commit, 4),
        "protocol_s": round(protocol_s, 4),
        "overhead_pct": round(100 * protocol_s / train_s, 2),
        "threads": torch.get_num_threads(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="demo model only, fewer repetitions")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per model (median)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (a solver node uses 1 by default)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    reps = args.reps or (2 if args.quick else 3)
    manifest, shards = load_corpus_shards()
    out_dir = build_contracts()
    results = [measure("default", 20, reps, manifest, shards, out_dir)]
    if not args.quick:
        results.append(measure("large", 20, reps, manifest, shards, out_dir))
    for row in results:
        print(f"{row['preset']:>8} ({row['parameters']:,} params): train {row['train_s']:.3f} s, protocol "
              f"{row['protocol_s']:.3f} s -> {row['overhead_pct']:.2f}%", file=sys.stderr)  # fmt: skip
    demo = results[0]
    print(
        json.dumps(
            {
                "train_s": demo["train_s"],
                "protocol_s": demo["protocol_s"],
                "overhead_pct": demo["overhead_pct"],
                "models": results,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
