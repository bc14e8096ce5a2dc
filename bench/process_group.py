"""One solver's round in 1 process vs a 2-process gloo group (solver/process_group.py), same checkpoints.

    python bench/process_group.py [--preset default|large] [--micro-batches 2] [--steps 10] [--reps 3]

Times `train_round` on the run's own data at `--micro-batches` M, one thread per process: alone (M micro-batches in
sequence) and as a 2-process group on 127.0.0.1 (M/2 each, all_gather, the canonical fold), after one warm-up round
each, then `--reps` timed rounds of each in turns (alone, group, then group, alone, ...: bench/interleaved.py), so
load from other jobs hits both alike. Prints one JSON object: median seconds per step both ways, the speed-up (the
median of the per-pair speed-ups) with its spread (`speedup_spread`: min, quartiles, max), and whether every end
checkpoint is equal.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from functools import partial
from pathlib import Path

from protocol.adapters.execution_env import pin_execution_environment

pin_execution_environment()  # before torch loads: the execution profile's kernels (docs/determinism.md)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ is not installed: import it as `bench`

from bench.interleaved import compute_paired_ratios, compute_spread, time_interleaved
from protocol.adapters.corpus import load_corpus_shards
from protocol.config import build_run_config
from protocol.data import build_token_dataset
from protocol.hashing import hash_to_hex
from protocol.outer import get_initial_global_state
from protocol.profile import apply_execution_profile
from protocol.state import compute_state_hash
from protocol.training import get_params, train_round
from solver.process_group import start_local_group

SOLVER = "0x" + "00" * 19 + "01"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="default", help="run config preset (protocol/config.py)")
    parser.add_argument("--micro-batches", type=int, default=2, help="M (the group has 2 processes)")
    parser.add_argument("--steps", type=int, default=10, help="inner steps per timed round")
    parser.add_argument("--reps", type=int, default=3, help="timed rounds of each, in turns")
    args = parser.parse_args()
    manifest, shards = load_corpus_shards()
    train = {"micro_batches": args.micro_batches, "inner_steps": args.steps, "steps_per_segment": args.steps}
    config = build_run_config(
        preset=args.preset, run_seed="0x" + "5e" * 32, dataset_root=hash_to_hex(manifest.root),
        overrides={"train": train},
    )  # fmt: skip
    apply_execution_profile(config.profile, 1)
    dataset = build_token_dataset(manifest, shards, config.data.eval_shards)
    theta = get_params(get_initial_global_state(config))

    hashes: dict[str, set[bytes]] = {"alone": set(), "group": set()}
    group = start_local_group(2, threads=1)
    try:
        runs = {
            "alone": lambda r: train_round(config, dataset, theta, r, SOLVER),
            "group": lambda r: group.train_round(config, dataset, theta, r, SOLVER),
        }
        for run in runs.values():
            run(0)  # warm-up (and, for the group, the first job carries the config and dataset)

        def timed_round(name: str) -> None:
            _, end = runs[name](1)
            hashes[name].add(compute_state_hash(end))

        seconds = time_interleaved({name: partial(timed_round, name) for name in runs}, args.reps, warmup=0)
    finally:
        group.close()
    alone_s = statistics.median(seconds["alone"]) / args.steps
    group_s = statistics.median(seconds["group"]) / args.steps
    speedup = compute_spread(compute_paired_ratios(seconds["alone"], seconds["group"]))
    print(
        json.dumps(
            {
                "preset": args.preset,
                "micro_batches": args.micro_batches,
                "step_s_1_process": round(alone_s, 4),
                "step_s_2_processes": round(group_s, 4),
                "speedup": round(speedup.median, 2),
                "speedup_spread": speedup.as_json(3),
                "reps": args.reps,
                "same_checkpoint": len(hashes["alone"] | hashes["group"]) == 1,
            }
        )
    )


if __name__ == "__main__":
    main()
