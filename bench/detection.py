"""Honest replays against cheating solvers: exact matches, distances, thresholds, detection.

    python bench/detection.py [--quick] [--rounds R] [--jobs-per-round J]

1. A DiLoCo trajectory (sim/simulate.py, M solvers, default preset: H=25, k=5) gives
   realistic θ_r at every stage of training, warmup included.
2. Each job trains one solver's honest round from some θ_r (pinned profile: elementary
   LayerNorm, fp32, 1 thread) and, for every segment:
   - an honest replay under the pinned profile, in rotation at 2 threads, at 1 thread with
     deterministic algorithms on, at 2 threads with them on, and (one segment per job) in
     another process; verdict `judge_exact`, a false positive is any mismatch;
   - honest replays under another profile, emulated by the fused `nn.LayerNorm` at 1 and 2
     threads; verdict `judge_tolerance` with the committed end checkpoint, under the run's
     `ReplayThresholds`; a false positive is any rejection;
   - every cheat of adversary/behaviours.py on the same segment, judged both ways (exact
     against the pinned replay; tolerance against each fused replay).
3. Distances of every cross-profile trial (worst-tensor hamming fraction and |log2 norm
   ratio| of the sketches; worst-tensor relative error and 1 - cosine of the exact updates;
   and the relative error of the whole update) give the honest maxima, the smallest attack
   distances and suggested thresholds.

Training results do not depend on timing, only the reported seconds do (the machine is
shared; 2 cores). The last line of output is one JSON object: `thresholds`, `honest_trials`,
`false_positives`, `attacks` (cross-profile detection rate per cheat), `min_detection_rate`,
`threshold_margin` (threshold / largest honest distance, the smallest over the thresholds),
plus per-profile and per-metric details. A PNG of the distance distributions goes to `--out`.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import platform
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from fractions import Fraction
from pathlib import Path
from typing import Any

import torch

from adversary.behaviours import Behaviour, make_dishonest_segment
from protocol.adapters.corpus import load_corpus_shards
from protocol.config import ReplayThresholds, RunConfig, build_run_config
from protocol.data import DatasetManifest, TokenDataset, build_token_dataset
from protocol.hashing import hash_to_hex
from protocol.merkle import SegmentLeaf
from protocol.replay import (
    compute_global_relative_error,
    compute_update_distances,
    judge_exact,
    judge_tolerance,
    replay_segment,
)
from protocol.sketch import UpdateSketch, compute_sketch_distance, compute_update_sketch
from protocol.state import decode_state, encode_state
from protocol.training import State, compute_param_update, get_params, keep_checkpoints, train_round
from sim.simulate import get_simulated_solver, run_simulation

RUN_SEED = "0x" + "de" * 32
RUN_ID = 1
METRICS = ("hamming", "log2_norm", "relative_error", "one_minus_cosine", "global_relative_error")
THRESHOLD_FIELDS = {
    "hamming": "max_hamming_fraction",
    "log2_norm": "max_log2_norm_diff",
    "relative_error": "max_relative_error",
    "one_minus_cosine": "min_cosine",
    "global_relative_error": "max_global_relative_error",
}
EXACT_VARIANTS = {
    "threads-2": (2, False),
    "threads-1-deterministic": (1, True),
    "threads-2-deterministic": (2, True),
}
CROSS_THREADS = (1, 2)
FULL = {"rounds": 40, "jobs_per_round": 3, "trajectory_solvers": 4}
QUICK = {"rounds": 6, "jobs_per_round": 1, "trajectory_solvers": 2}

_WORKER: dict[str, Any] = {}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a shorter trajectory, fewer jobs (< 4 min)")
    parser.add_argument("--rounds", type=int, help="rounds of the DiLoCo trajectory (full: 40)")
    parser.add_argument("--jobs-per-round", type=int, help="solver rounds replayed per θ_r (full: 3)")
    parser.add_argument("--trajectory-solvers", type=int, help="M of the trajectory (full: 4)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--out", type=Path, default=Path("bench/out"), help="directory for JSON and PNG")
    args = parser.parse_args(argv)
    preset = QUICK if args.quick else FULL
    for key, value in preset.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def make_configs(root: str) -> tuple[RunConfig, RunConfig]:
    """The run (pinned profile) and the emulated other profile (fused LayerNorm)."""
    config = build_run_config(run_seed=RUN_SEED, dataset_root=root)
    fused = config.model_copy(update={"profile": config.profile.model_copy(update={"layer_norm": "fused"})})
    return config, fused


# ---------------------------------------------------------------------------------------
# Distances


def measure(
    config: RunConfig,
    committed_sketch: UpdateSketch,
    start: Mapping[str, torch.Tensor],
    replayed_end: Mapping[str, torch.Tensor],
    committed_end: Mapping[str, torch.Tensor],
) -> dict[str, float]:
    """Every distance a tolerance verdict could use, replayed vs committed update."""
    replayed = compute_param_update(start, replayed_end)
    committed = compute_param_update(start, committed_end)
    sketch = compute_sketch_distance(committed_sketch, compute_update_sketch(replayed, config.get_sketch_spec()))
    error, cosine = compute_update_distances(replayed, committed)
    return {
        "hamming": sketch.max_hamming_fraction,
        "log2_norm": min(sketch.max_log2_norm_diff, 1e9),
        "relative_error": min(error, 1e9),
        "one_minus_cosine": 1.0 - cosine,
        "global_relative_error": min(compute_global_relative_error(replayed, committed), 1e9),
        "worst_hamming_tensor": sketch.worst_hamming_tensor,
    }


# ---------------------------------------------------------------------------------------
# Worker


def _init_worker(config_json: str, fused_json: str, manifest: DatasetManifest, shards: dict[bytes, bytes]) -> None:
    torch.set_num_threads(1)
    _WORKER["config"] = RunConfig.model_validate_json(config_json)
    _WORKER["fused"] = RunConfig.model_validate_json(fused_json)
    _WORKER["dataset"] = build_token_dataset(manifest, shards, _WORKER["config"].data.eval_shards)


def _with(threads: int, deterministic: bool, fn: Callable[[], State]) -> State:
    """Run `fn` with a thread count and the deterministic-algorithms flag, then restore them."""
    previous = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(deterministic)
    try:
        return fn()
    finally:
        torch.set_num_threads(previous[0])
        torch.use_deterministic_algorithms(previous[1])


def _row(kind: str, name: str, accepted: bool, method: str, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "name": name, "accepted": accepted, "method": method, **extra}


def _judge_segment(
    round_index: int,
    solver: str,
    index: int,
    checkpoints: dict[int, State],
    record: Any,
    seed: int,
) -> list[dict[str, Any]]:
    """All honest and adversarial trials of one segment."""
    config: RunConfig = _WORKER["config"]
    fused: RunConfig = _WORKER["fused"]
    dataset: TokenDataset = _WORKER["dataset"]
    start, end = checkpoints[index], checkpoints[index + 1]
    leaf = record.to_leaf(RUN_ID, round_index, solver)
    where = {"round": round_index, "segment": index}
    rows = []
    # One pinned-profile variant per segment, in rotation (each costs a full replay).
    variant = list(EXACT_VARIANTS)[(seed + index) % len(EXACT_VARIANTS)]
    threads, deterministic = EXACT_VARIANTS[variant]
    pinned_replay = _with(
        threads, deterministic, lambda: replay_segment(config, dataset, round_index, solver, index, start)
    )
    verdict = judge_exact(config, leaf, start, pinned_replay)
    rows.append(_row("honest-exact", variant, verdict.accepted, verdict.method, **where))
    cross = {}
    for threads in CROSS_THREADS:
        cross[threads] = _with(
            threads, False, lambda: replay_segment(fused, dataset, round_index, solver, index, start)
        )
        verdict = judge_tolerance(config, leaf, record.sketch, start, cross[threads], end)
        distances = measure(config, record.sketch, start, cross[threads], end)
        rows.append(_row("honest-cross", f"fused-{threads}", verdict.accepted, verdict.method, **where, **distances))
    previous = compute_param_update(checkpoints[index - 1], start) if index else None
    for behaviour in Behaviour:
        if behaviour is Behaviour.REUSED_UPDATE and previous is None:
            continue  # segment 0 has no previous segment in this round
        cheat = make_dishonest_segment(
            behaviour,
            config,
            dataset,
            round_index,
            solver,
            index,
            start,
            seed=seed + index,
            previous_update=previous,
            honest_end=end,
        )
        cheat_leaf = cheat.record.to_leaf(RUN_ID, round_index, solver)
        verdict = judge_exact(config, cheat_leaf, start, pinned_replay)
        rows.append(_row("attack-exact", behaviour.value, verdict.accepted, verdict.method, **where))
        for threads in CROSS_THREADS:
            committed_end = cheat.end_checkpoint
            verdict = judge_tolerance(config, cheat_leaf, cheat.record.sketch, start, cross[threads], committed_end)
            distances = measure(config, cheat.record.sketch, start, cross[threads], committed_end)
            rows.append(_row("attack-cross", behaviour.value, verdict.accepted, verdict.method, **where, **distances))
    return rows


def run_job(theta_bytes: bytes, round_index: int, solver: str, seed: int) -> dict[str, Any]:
    """Train one honest round from θ_r and judge every segment; hand back one start state too."""
    config: RunConfig = _WORKER["config"]
    checkpoints: dict[int, State] = {}
    theta = decode_state(theta_bytes)
    records, _ = train_round(
        config, _WORKER["dataset"], theta, round_index, solver, save_checkpoint=keep_checkpoints(checkpoints)
    )
    rows = []
    for index, record in enumerate(records):
        rows += _judge_segment(round_index, solver, index, checkpoints, record, seed)
    handoff = seed % len(records)
    leaf = records[handoff].to_leaf(RUN_ID, round_index, solver)
    return {"rows": rows, "handoff": (handoff, encode_state(checkpoints[handoff]), leaf)}


def replay_in_this_process(
    config: RunConfig, dataset: TokenDataset, round_index: int, solver: str, handoff: tuple[int, bytes, SegmentLeaf]
) -> dict[str, Any]:
    """The "another process" trial: the coordinator replays a segment a worker trained."""
    index, start_bytes, leaf = handoff
    start = decode_state(start_bytes)
    replayed = _with(1, False, lambda: replay_segment(config, dataset, round_index, solver, index, start))
    verdict = judge_exact(config, leaf, start, replayed)
    return _row("honest-exact", "another-process", verdict.accepted, verdict.method, round=round_index, segment=index)


# ---------------------------------------------------------------------------------------
# Analysis


def _rate(rows: list[dict[str, Any]], detected: bool) -> float:
    return sum((not r["accepted"]) == detected for r in rows) / len(rows) if rows else math.nan


def _group(rows: list[dict[str, Any]], kind: str) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["kind"] == kind:
            groups[row["name"]].append(row)
    return dict(groups)


def _threshold_value(thresholds: ReplayThresholds, metric: str) -> float:
    value = getattr(thresholds, THRESHOLD_FIELDS[metric])
    return 1.0 - value if metric == "one_minus_cosine" else value


def suggest_thresholds(honest: list[dict[str, Any]], attacks: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per metric: largest honest distance, smallest distance of each attack, and the geometric
    midpoint between the honest maximum and the smallest attack distance above it (a threshold
    with the same safety factor on both sides)."""
    out = {}
    for metric in METRICS:
        honest_max = max(r[metric] for r in honest)
        per_attack = {name: min(r[metric] for r in rows) for name, rows in attacks.items()}
        above = [v for v in per_attack.values() if v > honest_max]
        midpoint = math.sqrt(honest_max * min(above)) if above and honest_max > 0 else None
        out[metric] = {
            "honest_max": honest_max,
            "attack_min": per_attack,
            "separated_attacks": sorted(n for n, v in per_attack.items() if v > honest_max),
            "geometric_midpoint": midpoint,
        }
    return out


def analyse(rows: list[dict[str, Any]], thresholds: ReplayThresholds) -> dict[str, Any]:
    honest_exact = [r for r in rows if r["kind"] == "honest-exact"]
    honest_cross = [r for r in rows if r["kind"] == "honest-cross"]
    attacks_cross = _group(rows, "attack-cross")
    attacks_exact = _group(rows, "attack-exact")
    honest_max = {m: max(r[m] for r in honest_cross) for m in METRICS}
    # A metric whose honest maximum is 0 (e.g. the quantized norm) has no finite margin: null.
    margins = {
        m: _threshold_value(thresholds, m) / honest_max[m] if honest_max[m] > 0 else None for m in THRESHOLD_FIELDS
    }
    attack_rates = {name: _rate(group, detected=True) for name, group in attacks_cross.items()}
    false_positives = sum(not r["accepted"] for r in honest_exact + honest_cross)
    return {
        "thresholds": thresholds.model_dump(),
        "honest_trials": len(honest_exact) + len(honest_cross),
        "false_positives": false_positives,
        "attacks": attack_rates,
        "min_detection_rate": min(attack_rates.values()),
        "threshold_margin": min(v for v in margins.values() if v is not None),
        "threshold_margins": margins,
        "honest_exact": {
            name: {"trials": len(g), "exact_match_rate": 1 - _rate(g, detected=True)}
            for name, g in _group(rows, "honest-exact").items()
        },
        "honest_cross": {
            name: {"trials": len(g), "false_positives": sum(not r["accepted"] for r in g)}
            for name, g in _group(rows, "honest-cross").items()
        },
        "attack_trials": {name: len(g) for name, g in attacks_cross.items()},
        "attacks_exact": {name: _rate(g, detected=True) for name, g in attacks_exact.items()},
        "attacks_exact_trials": {name: len(g) for name, g in attacks_exact.items()},
        "attacks_rejected_by_sketch": {
            name: sum(r["method"] == "sketch" and not r["accepted"] for r in g) / len(g)
            for name, g in attacks_cross.items()
        },
        "honest_max": honest_max,
        "honest_worst_hamming_tensors": sorted({r["worst_hamming_tensor"] for r in honest_cross if r["hamming"] > 0}),
        "distances": suggest_thresholds(honest_cross, attacks_cross),
    }


def write_plot(rows: list[dict[str, Any]], thresholds: ReplayThresholds, path: Path) -> None:
    """One panel per metric: honest cross-profile distances against each attack's, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(1, len(METRICS), figsize=(4.2 * len(METRICS), 5.5))
    attacks = _group(rows, "attack-cross")
    labels = ["honest", *attacks]
    floor = 1e-9
    for axis, metric in zip(axes, METRICS, strict=True):
        groups = [[r[metric] for r in rows if r["kind"] == "honest-cross"]]
        groups += [[r[metric] for r in attacks[name]] for name in attacks]
        for i, values in enumerate(groups):
            jitter = random.Random(i)
            ys = [max(v, floor) for v in values]
            xs = [i + jitter.uniform(-0.3, 0.3) for _ in ys]
            axis.scatter(xs, ys, s=4, alpha=0.5, color="tab:green" if i == 0 else "tab:red")
        if metric in THRESHOLD_FIELDS:
            axis.axhline(_threshold_value(thresholds, metric), color="black", linestyle="--", label="threshold")
            axis.legend(fontsize=7)
        axis.set_yscale("log")
        axis.set_xticks(range(len(labels)))
        axis.set_xticklabels(labels, rotation=70, fontsize=7)
        axis.set_title(metric.replace("_", " "), fontsize=9)
        axis.grid(alpha=0.3, axis="y")
    figure.suptitle("cross-profile replay (fused LayerNorm) vs committed update: honest and cheating solvers")
    figure.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    figure.savefig(tmp, dpi=100)
    plt.close(figure)
    tmp.replace(path)


# ---------------------------------------------------------------------------------------
# Main


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_trajectory(config: RunConfig, corpus: tuple[DatasetManifest, dict[bytes, bytes]], args) -> dict[int, bytes]:
    """θ_0 .. θ_(rounds-1) of a DiLoCo run, as canonical parameter bytes."""
    states: dict[int, bytes] = {}

    def keep(round_index: int, state: State) -> None:
        if round_index < args.rounds:
            states[round_index] = encode_state(get_params(state))

    manifest, shards = corpus
    run_simulation(
        config, manifest, shards, args.trajectory_solvers, args.rounds - 1, eval_every=args.rounds, on_state=keep
    )
    return states


def compute_per_round_detection(num_segments: int) -> dict[str, Any]:
    """P(a commitment with one faked segment is sampled by at least one seat), under the default run rules
    (devnet/runs.py RunRules: samples per seat, seats per commitment); every seat draws its own samples."""
    from devnet.runs import RunRules
    from protocol.sampling import compute_detection_probability

    rules, f = RunRules(), Fraction(1, num_segments)
    probability = compute_detection_probability(f, rules.samples_per_commitment, rules.verifiers_per_commitment)
    return {
        "per_round_detection": float(probability),
        "per_round_detection_rules": {
            "segments": num_segments,
            "faked_segments": 1,
            "samples_per_seat": rules.samples_per_commitment,
            "seats": rules.verifiers_per_commitment,
        },
        "per_round_detection_by_seats": {
            str(k): float(compute_detection_probability(f, rules.samples_per_commitment, k)) for k in (1, 2, 3, 4, 8)
        },
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    # Worker processes sometimes run 2 threads on 2 shared cores: sleeping instead of spinning
    # OpenMP threads keeps oversubscription cheap (no effect on results, only on time).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    started = time.perf_counter()
    corpus = load_corpus_shards()
    config, fused = make_configs(hash_to_hex(corpus[0].root))
    log(f"trajectory: {args.rounds} rounds of DiLoCo, M={args.trajectory_solvers}, H={config.train.inner_steps}")
    thetas = build_trajectory(config, corpus, args) if args.rounds > 1 else {}
    if args.rounds == 1:
        from protocol.outer import get_initial_global_state

        thetas = {0: encode_state(get_params(get_initial_global_state(config)))}
    jobs = [(r, get_simulated_solver(j)) for r in range(args.rounds) for j in range(args.jobs_per_round)]
    log(f"trials: {len(jobs)} honest solver rounds x {config.train.num_segments} segments")
    dataset = build_token_dataset(*corpus, config.data.eval_shards)
    rows: list[dict[str, Any]] = []
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        args.workers,
        mp_context=context,
        initializer=_init_worker,
        initargs=(config.model_dump_json(), fused.model_dump_json(), *corpus),
    ) as pool:
        futures = {
            pool.submit(run_job, thetas[r], r, solver, 1000 * i): (r, solver) for i, (r, solver) in enumerate(jobs)
        }
        for done, future in enumerate(as_completed(futures), 1):
            round_index, solver = futures[future]
            result = future.result()
            rows += result["rows"]
            rows.append(replay_in_this_process(config, dataset, round_index, solver, result["handoff"]))
            if done % max(1, len(jobs) // 10) == 0:
                log(f"  {done}/{len(jobs)} jobs, {time.perf_counter() - started:.0f} s")
    summary = analyse(rows, config.thresholds)
    summary.update(compute_per_round_detection(config.train.num_segments))
    summary.update(
        {
            "trajectory": {"rounds": args.rounds, "solvers": args.trajectory_solvers},
            "jobs": len(jobs),
            "segments": len(jobs) * config.train.num_segments,
            "train_config": config.train.model_dump(),
            "machine": f"{platform.machine()}, torch {torch.__version__}",
            "seconds": round(time.perf_counter() - started, 1),
        }
    )
    stem = "detection-quick" if args.quick else "detection"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(_finite({"summary": summary, "rows": rows})) + "\n")
    write_plot(rows, config.thresholds, args.out / f"{stem}.png")
    log(f"wrote {args.out / stem}.json and .png")
    print(json.dumps(_finite(summary)))
    return summary


def _finite(value: Any) -> Any:
    """Strict JSON: infinities and NaN become null (json.dumps would write Infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


if __name__ == "__main__":
    main()
