"""Honest replays against cheating solvers: exact matches, distances, thresholds, detection.

    python bench/detection.py [--quick] [--rounds R] [--jobs-per-round J] [--model-config FILE]

The measurements are `gradledger calibrate`'s (sim/calibration.py, one implementation):

1. A DiLoCo trajectory (sim/simulate.py, M solvers, default preset: H=25, k=5) gives
   realistic θ_r at every stage of training, warmup included.
2. Each job trains one solver's honest round from some θ_r (the pinned profile: elementary
   norms, eager attention, fp32, 1 thread) and, for every segment:
   - an honest replay under the pinned profile, in rotation at 2 threads, at 1 thread with
     deterministic algorithms on, at 2 threads with them on, at 4 threads, and (one segment per
     job) in another process; verdict `judge_exact`, a false positive is any mismatch;
   - honest replays under another profile, emulated by the fused normalisation kernel (and, for
     a Hugging Face model, also with the fused SDPA attention) at 1 and 2 threads; verdict
     `judge_tolerance` with the committed end checkpoint, under the run's `ReplayThresholds`;
     a false positive is any rejection;
   - honest replays on real unpinned CPU code paths (sim/hardware_trials.py HARDWARE_PATHS, one
     worker process each, started with the path's environment before torch loads and checked to
     run it): "native", this CPU's own kernels with the pins off (AVX-512 ATen on an AVX-512
     CPU, MKL without reproducibility mode, oneDNN's widest ISA), and "portable" (ATen's portable
     kernels, MKL COMPATIBLE, oneDNN SSE4.1); the run config's kernels, at 1 and 2 threads
     (rows `hw-<path>-<threads>`); verdict `judge_tolerance` as above;
   - every cheat of adversary/behaviours.py on the same segment, judged both ways (exact
     against the pinned replay; tolerance against each emulated cross-profile replay).
3. Distances of every cross-profile trial, emulated and hardware (worst-tensor hamming fraction
   and |log2 norm ratio| of the sketches; worst-tensor relative error and 1 - cosine of the exact
   updates; and the relative error of the whole update) give the honest maxima (per profile and
   path in `honest_cross`), the smallest attack distances and suggested thresholds; `calibrated`
   holds the thresholds `gradledger calibrate` would choose from the same trials
   (sim/threshold_choice.py), re-judged.

`--model-config FILE` measures another model (a model section or a transformers config.json,
e.g. examples/llama-tiny.json) with the default preset's training settings.

Training results do not depend on timing, only the reported seconds do (the machine is
shared; 2 cores). The last line of output is one JSON object: `thresholds`, `honest_trials`,
`false_positives`, `attacks` (cross-profile detection rate per cheat), `min_detection_rate`,
`threshold_margin` (threshold / largest honest distance, the smallest over the thresholds),
all judged under the run config's thresholds, plus per-profile and per-metric details and
`calibrated`. A PNG of the distance distributions goes to `--out`.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from protocol.adapters.execution_env import pin_execution_environment

pin_execution_environment()  # before torch loads: the execution profile's kernels (docs/determinism.md)

import torch

from protocol.adapters.corpus import load_corpus_shards
from protocol.config import RunConfig, build_run_config
from protocol.hashing import hash_to_hex
from sim.calibration import (
    RUN_SEED,
    TrialPlan,
    analyse,
    compute_per_round_detection,
    get_cross_profiles,
    measure_trials,
    to_finite,
)
from sim.hardware_trials import HARDWARE_PATHS
from sim.threshold_choice import CalibrationRefused, summarize_calibration, write_plot

FULL = {"rounds": 40, "jobs_per_round": 3, "trajectory_solvers": 4}
QUICK = {"rounds": 6, "jobs_per_round": 1, "trajectory_solvers": 2}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a shorter trajectory, fewer jobs (< 5 min)")
    parser.add_argument("--rounds", type=int, help="rounds of the DiLoCo trajectory (full: 40)")
    parser.add_argument("--jobs-per-round", type=int, help="solver rounds replayed per θ_r (full: 3)")
    parser.add_argument("--trajectory-solvers", type=int, help="M of the trajectory (full: 4)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--out", type=Path, default=Path("bench/out"), help="directory for JSON and PNG")
    parser.add_argument(
        "--model-config", type=Path, help="model section or transformers config.json (default: the built-in GPT)"
    )
    args = parser.parse_args(argv)
    preset = QUICK if args.quick else FULL
    for key, value in preset.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def make_config(root: str, model_config: Path | None) -> RunConfig:
    """The run config (pinned profile) of the default preset, with the model of `--model-config` if given."""
    from gradledger.run_inputs import read_model_config_file

    model = read_model_config_file(model_config) if model_config is not None else None
    return build_run_config(run_seed=RUN_SEED, dataset_root=root, model=model)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def calibrated_summary(rows: list[dict[str, Any]], config: RunConfig) -> dict[str, Any]:
    """What `gradledger calibrate` would write for these trials, or why it would refuse."""
    try:
        choice, summary = summarize_calibration(rows, config)
    except CalibrationRefused as exc:
        return {"refused": str(exc)}
    keys = ("thresholds", "honest_trials", "honest_cross_trials", "false_positives", "attacks", "min_detection_rate")
    return {
        **{key: summary[key] for key in keys},
        "threshold_margin": summary["threshold_margin"],
        "safety_factor": choice.safety_factor,
        "hardest_trial": choice.hardest,
        "holdout": summary["holdout"],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    started = time.perf_counter()
    corpus = load_corpus_shards()
    config = make_config(hash_to_hex(corpus[0].root), args.model_config)
    plan = TrialPlan(args.rounds, args.jobs_per_round, args.trajectory_solvers, args.workers)
    log(f"trajectory: {args.rounds} rounds of DiLoCo, M={args.trajectory_solvers}, H={config.train.inner_steps}")
    log(f"trials: {plan.jobs} honest solver rounds x {config.train.num_segments} segments")
    log(f"cross profiles: {', '.join(get_cross_profiles(config))} at 1 and 2 threads")
    log(f"hardware paths (pins off, own processes): {', '.join(HARDWARE_PATHS)} at 1 and 2 threads")

    def on_job(done: int, total: int) -> None:
        if done % max(1, total // 10) == 0:
            log(f"  {done}/{total} jobs, {time.perf_counter() - started:.0f} s")

    rows = measure_trials(config, corpus, plan, on_job=on_job)
    summary = analyse(rows, config.thresholds)
    summary.update(compute_per_round_detection(config.train.num_segments))
    summary.update(
        {
            "calibrated": calibrated_summary(rows, config),
            "model": config.model.model_dump(mode="json"),
            "trajectory": {"rounds": args.rounds, "solvers": args.trajectory_solvers},
            "jobs": plan.jobs,
            "segments": plan.jobs * config.train.num_segments,
            "train_config": config.train.model_dump(),
            "machine": f"{platform.machine()}, torch {torch.__version__}",
            "seconds": round(time.perf_counter() - started, 1),
        }
    )
    stem = "detection-quick" if args.quick else "detection"
    if args.model_config is not None:
        stem += "-" + args.model_config.stem
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(to_finite({"summary": summary, "rows": rows})) + "\n")
    title = f"{args.model_config.name if args.model_config else 'built-in GPT'}: cross-profile replay vs committed"
    write_plot(rows, config.thresholds, args.out / f"{stem}.png", title + " update, honest and cheating solvers")
    log(f"wrote {args.out / stem}.json and .png")
    print(json.dumps(to_finite(summary)))
    return summary


if __name__ == "__main__":
    main()
