"""One solver's round in 1 process vs a 2-process gloo group (solver/process_group.py), same checkpoints.

    python bench/process_group.py [--preset default|large] [--micro-batches 2] [--steps 10]

Times `train_round` on the run's own data at `--micro-batches` M, one thread per process: alone (M micro-batches in
sequence) and as a 2-process group on 127.0.0.1 (M/2 each, all_gather, the canonical fold), after one warm-up round
each. Prints one JSON object: seconds per step both ways, the speed-up, and whether the end checkpoints are equal.
"""

from __future__ import annotations

import argparse
import json
import time

from protocol.adapters.execution_env import pin_execution_environment

pin_execution_environment()  # before torch loads: the execution profile's kernels (docs/determinism.md)

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

    def timed(run) -> tuple[float, bytes]:
        run(0)  # warm-up (and, for the group, the first job carries the config and dataset)
        start = time.perf_counter()
        _, end = run(1)
        return (time.perf_counter() - start) / args.steps, compute_state_hash(end)

    alone_s, alone_hash = timed(lambda r: train_round(config, dataset, theta, r, SOLVER))
    group = start_local_group(2, threads=1)
    try:
        group_s, group_hash = timed(lambda r: group.train_round(config, dataset, theta, r, SOLVER))
    finally:
        group.close()
    print(
        json.dumps(
            {
                "preset": args.preset,
                "micro_batches": args.micro_batches,
                "step_s_1_process": round(alone_s, 4),
                "step_s_2_processes": round(group_s, 4),
                "speedup": round(alone_s / group_s, 2),
                "same_checkpoint": alone_hash == group_hash,
            }
        )
    )


if __name__ == "__main__":
    main()
