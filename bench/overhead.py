"""Solver protocol overhead: hashing, sketching, checkpointing and committing vs training.

    python bench/overhead.py [--quick] [--reps N]

train_s is one round of H inner steps as bare training: build the model, load θ_r, run
`run_inner_steps` (what every DiLoCo worker does anyway); median over --reps. protocol_s is
what a solver node adds to that round, in three measured parts:

- critical_path_s: the node's round (`train_round` with a `BackgroundStateWriter`, then the
  sketches, Δ and commitment document stored, exactly as `solver/` does it) minus the time
  inside its inner steps, minus the same set-up time of the bare round run just before it;
  median over --reps. This is everything the training thread waits for or does itself.
- contention_s: the writer hashes, writes and sketches on the other core while training
  runs, and slows it through shared caches and memory bandwidth. Per segment that is a few
  milliseconds, far below this host's noise on a whole round (train_spread_pct), so it is
  measured where it is large (`writer_slowdown`: the fractional slowdown of a segment under a
  writer that works the whole time, x the seconds one job of the writer takes, x segments).
- commit_s: one real `commit` transaction on a fresh anvil.

overhead_pct = 100 x protocol_s / train_s. The bare and node rounds of a repetition run back to
back, in alternating order (bench/interleaved.py's rule: load from other jobs hits both alike),
and each repetition gives one overhead figure; overhead_pct_spread is their min, quartiles and
max (issue 38: a ratio without its spread misleads on a busy machine). paired_difference_s (node
round minus bare round, median) is printed as a cross-check; it carries the host's noise in
full. One warm-up pair is run first and not counted. Models: the demo's default preset and the "large" preset (~10x
parameters), both at the demo's H = 20, k = 5. --quick: the demo model only, fewer repetitions.
Last line: one JSON object with train_s, protocol_s, overhead_pct (demo model) and `models`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from protocol.adapters.execution_env import pin_execution_environment

pin_execution_environment()  # before torch loads: the execution profile's kernels (docs/determinism.md)

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ is not installed: import it as `bench`

from bench.interleaved import compute_spread
from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from devnet.runs import build_run_terms
from protocol import training
from protocol.adapters.artifacts import BackgroundStateWriter, LocalArtifactStore, put_state
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.corpus import load_corpus_shards
from protocol.adapters.keys import get_devnet_account
from protocol.commitment import CommitmentDoc, encode_commitment_doc
from protocol.config import build_run_config, compute_config_hash
from protocol.data import build_token_dataset
from protocol.hashing import hash_to_hex
from protocol.model import build_model
from protocol.outer import get_initial_global_state
from protocol.run_presets import TINY
from protocol.sketch import encode_sketch
from protocol.state import compute_state_hash
from protocol.training import (
    build_optimizer,
    compute_pseudo_gradient,
    compute_segment_sketch,
    get_checkpoint_state,
    get_params,
    load_checkpoint_state,
    make_start_checkpoint,
    run_inner_steps,
    train_round,
)
from protocol.types import ROLE_SOLVER, Commitment

SOLVER = get_devnet_account(1)


@contextmanager
def timing_inner_steps(spent: list[float]) -> Iterator[None]:
    """Record the wall time of every `run_inner_steps` call (`train_round` looks it up at call time)."""
    original = training.run_inner_steps

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - start)

    training.run_inner_steps = timed
    try:
        yield
    finally:
        training.run_inner_steps = original


def bare_training(config, dataset, theta) -> tuple[float, float]:
    """What any DiLoCo worker does each round: build the model, load θ_r, run H inner steps.

    The node round (`train_round`) does the same set-up, so both sides time it. Returns
    (round seconds, seconds inside the inner steps).
    """
    start = time.perf_counter()
    model = build_model(config.model, config.profile, config.seed_bytes)
    optimizer = build_optimizer(model, config.train)
    load_checkpoint_state(model, optimizer, make_start_checkpoint(theta))
    inner_start = time.perf_counter()
    run_inner_steps(model, optimizer, dataset, config, 0, SOLVER.address, 0, config.train.inner_steps)
    end = time.perf_counter()
    return end - start, end - inner_start


def writer_slowdown(config, dataset, theta, pairs: int) -> tuple[float, float]:
    """How much the writer's work slows training while it runs, and how long that work lasts.

    In a node round the writer hashes and writes c_i and sketches segment i while segment i+1
    trains. It runs on the other core but shares caches and memory bandwidth. That effect is a
    few percent of a ~0.1 s job, far below this host's noise on a whole segment, so it is
    measured where it is large: segments are timed in adjacent pairs (same batches, order
    alternating), one with the writer repeating its per-segment job back to back the whole
    time and one with the writer idle. Returns (median fractional slowdown of a segment under a
    busy writer, median seconds of one job under that contention). A node round loses
    slowdown x job seconds per segment.
    """
    model = build_model(config.model, config.profile, config.seed_bytes)
    optimizer = build_optimizer(model, config.train)
    previous = make_start_checkpoint(theta)
    load_checkpoint_state(model, optimizer, previous)
    k, spec = config.train.steps_per_segment, config.get_sketch_spec()
    slowdowns, jobs = [], []
    with tempfile.TemporaryDirectory() as tmp, BackgroundStateWriter(LocalArtifactStore(Path(tmp))) as writer:

        def repeat_job(before, after, stop: threading.Event) -> None:
            while not stop.is_set():
                start = time.perf_counter()
                writer.save(0, after)  # then the sketch, in order on the writer thread, as in a node
                writer.submit(partial(compute_segment_sketch, before, after, spec)).result()
                jobs.append(time.perf_counter() - start)

        for pair in range(pairs):
            seconds = {}
            for busy in (pair % 2 == 0, pair % 2 == 1):
                state = get_checkpoint_state(model, optimizer)  # on the training thread in a node too
                stop = threading.Event()
                driver = threading.Thread(target=repeat_job, args=(previous, state, stop)) if busy else None
                if driver:
                    driver.start()
                start = time.perf_counter()
                run_inner_steps(model, optimizer, dataset, config, 0, SOLVER.address, 0, k)
                seconds[busy] = time.perf_counter() - start
                stop.set()
                if driver:
                    driver.join()
                previous = state
            slowdowns.append(seconds[True] / seconds[False] - 1)
    return statistics.median(slowdowns), statistics.median(jobs)


def node_round(config, dataset, theta, store) -> tuple[float, float, CommitmentDoc]:
    """The solver node's round, as `solver/` runs it. Returns (seconds, seconds inside inner steps, doc)."""
    inner: list[float] = []
    start = time.perf_counter()
    with BackgroundStateWriter(store) as writer, timing_inner_steps(inner):  # what the solver node does
        records, end = train_round(
            config, dataset, theta, 0, SOLVER.address, save_checkpoint=writer.save, in_background=writer.submit
        )
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
    return time.perf_counter() - start, sum(inner), doc


def commit_seconds(config, doc: CommitmentDoc, out_dir: Path) -> float:
    """One real commit transaction (the run created on a fresh anvil just for it)."""
    with AnvilProcess() as anvil:
        chain = ChainClient(anvil.rpc_url)
        protocol = ProtocolClient(ChainClient(anvil.rpc_url, deploy_protocol(chain, get_devnet_account(0), out_dir)))
        rules = TINY.with_run(max_rounds=1, commit_window=3600)
        terms = build_run_terms(
            compute_config_hash(config), bytes.fromhex(config.data.dataset_root[2:]), doc.theta_hash, config, rules.run
        )
        run_id, _ = protocol.create_run(get_devnet_account(0), terms, 10**18)
        protocol.deposit_stake(SOLVER, ROLE_SOLVER, rules.run.solver_min_stake)
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
    bare, node, critical = [], [], []
    doc = None
    for rep in range(reps + 1):  # rep 0 warms up allocator and kernels; it is not counted
        if rep % 2:  # bare first on odd repetitions, node first on even ones
            bare_s, bare_inner_s = bare_training(config, dataset, theta)
        with tempfile.TemporaryDirectory() as tmp:
            node_s, node_inner_s, doc = node_round(config, dataset, theta, LocalArtifactStore(Path(tmp)))
        if not rep % 2:
            bare_s, bare_inner_s = bare_training(config, dataset, theta)
        if rep:
            bare.append(bare_s)
            node.append(node_s)
            # Time the node spends outside the inner steps, beyond the set-up bare training has too.
            critical.append((node_s - node_inner_s) - (bare_s - bare_inner_s))
    if doc is None:  # reps + 1 >= 1 rounds ran
        raise RuntimeError("no round ran: nothing to commit")
    commit = commit_seconds(config, doc, out_dir)
    slowdown, job_s = writer_slowdown(config, dataset, theta, pairs=2 * reps)
    contention = max(0.0, slowdown) * job_s * config.train.num_segments
    train_s = statistics.median(bare)
    protocol_s = statistics.median(critical) + contention + commit
    per_rep = compute_spread([100 * (c + contention + commit) / b for c, b in zip(critical, bare, strict=True)])
    return {
        "preset": preset,
        "parameters": sum(v.numel() for v in theta.values()),
        "inner_steps": inner_steps,
        "segments": config.train.num_segments,
        "train_s": round(train_s, 4),
        "train_spread_pct": round(100 * (max(bare) - min(bare)) / train_s, 1),
        "node_round_s": round(statistics.median(node), 4),
        "critical_path_s": round(statistics.median(critical), 4),
        "writer_slowdown_pct": round(100 * slowdown, 1),
        "writer_job_s": round(job_s, 4),
        "contention_s": round(contention, 4),
        "paired_difference_s": round(statistics.median(n - b for n, b in zip(node, bare, strict=True)), 4),
        "commit_s": round(commit, 4),
        "protocol_s": round(protocol_s, 4),
        "overhead_pct": round(100 * protocol_s / train_s, 2),
        "overhead_pct_spread": per_rep.as_json(2),
        "threads": torch.get_num_threads(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="demo model only, fewer repetitions")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per model (median)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (a solver node uses 1 by default)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    reps = args.reps or (3 if args.quick else 5)
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
