"""DiLoCo against synchronous data-parallel training and a lone solver, at equal tokens.

    python bench/diloco.py [--quick] [--steps N] [--hs 10,25,50] [--codecs int8-b256,...]

Arms, all scored on the same held-out batches (the eval batches of the DiLoCo config):
- sync: fully synchronous data-parallel training. Averaging the M solvers' gradients every
  step is one model trained with batch M x b, so it runs as one model (2 threads); it syncs
  every step and sees M x b sequences per step, like DiLoCo's M solvers together.
- DiLoCo: M solvers (separate one-thread processes, sim/simulate.py) x H inner steps per
  round, one outer step per round; `--steps` inner steps per solver in total.
- lone: one solver on its own data stream with batch b for `--steps` steps (1/M of the tokens).
- compressed: DiLoCo at the main H with pseudo-gradient codecs (protocol/compression.py) and
  error feedback on each solver's upload. `--download peers` (default, the protocol's path):
  every solver downloads the other M - 1 solvers' payloads and rebuilds θ_(r+1) from them;
  `--download mean`: a coordinator re-encodes the mean Δ with the same codec (own error
  feedback) and every solver downloads that one payload.

Bytes: per sync, each solver uploads and downloads one float32 copy of the parameters (sync:
its gradient and the averaged gradient; DiLoCo: its Δ and θ_(r+1)); compressed arms count
the exact payload lengths, both directions (peers: M uploads + M x (M - 1) downloads per
round). `codecs` in the JSON lists each compressed arm's ratio under the three counts of
sim/byte_counts.py -- `ratio_ours` (= `bytes_ratio`: synchronous bytes / its bytes, both
directions), `ratio_per_round_vs_dense` (fp32 Δ / one payload) and `ratio_per_step_vs_dp_upload`
(H data-parallel uploads / one payload) -- with `loss_gap_pct` (vs synchronous) and
`loss_vs_uncompressed_pct` (vs DiLoCo at the same H). Training goes only through
protocol.training.run_inner_steps. `--long` is the long-run setting (300 rounds, LONG).

The machine is shared and has 2 cores; training results do not depend on timing, only the
reported seconds do. `--quick` (500 steps, H=10, b=8 per solver, one codec) runs in under 4
minutes on 2 cores. Last line of output: one JSON object (`H`, `sync_eval_loss`,
`diloco_eval_loss`, `lone_eval_loss`, `loss_gap_pct`, `bytes_sync`, `bytes_diloco`,
`bytes_ratio`, plus per-H and compression results); a PNG plot goes to `--out`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from protocol.adapters.execution_env import pin_execution_environment

pin_execution_environment()  # before torch loads: the execution profile's kernels (docs/determinism.md)

import torch

from protocol.adapters.corpus import load_corpus_shards
from protocol.compression import parse_codec
from protocol.config import RunConfig, build_run_config
from protocol.data import DatasetManifest, build_token_dataset
from protocol.hashing import hash_to_hex
from sim.byte_counts import compute_ratio_counts
from sim.simulate import (
    Compression,
    SimulationResult,
    TrainingCurve,
    get_simulated_solver,
    run_continuous_training,
    run_simulation,
)

RUN_SEED = "0x" + "d1" * 32
SYNC_SOLVER = get_simulated_solver(1000)
LONE_SOLVER = get_simulated_solver(0)
FULL: dict[str, Any] = {
    "steps": 1500,
    "hs": "10,25,50",
    "main_h": 25,
    "batch": 0,
    "codecs": "int2-c4096-k192,int2-c1024-k128",
}
QUICK: dict[str, Any] = {"steps": 500, "hs": "10", "main_h": 10, "batch": 8, "codecs": "int2-c4096-k192"}
LONG: dict[str, Any] = {
    "steps": 3000,
    "hs": "10",
    "main_h": 10,
    "batch": 8,
    "codecs": "int1-c4096-k56-r30",
    "eval_interval": 500,
}
"""The long-run setting (issue 40): 300 rounds of H = 10 at b = 8, so a value a codec keeps once every ~20-60 rounds
is sent 5-15 times and error feedback has rounds to pay off; 834k parameters (a 5-10M model is ~10x the seconds on
these 2 cores)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="500 steps, H=10, b=8, one codec (< 4 min)")
    parser.add_argument("--long", action="store_true", help="the long run: 300 rounds of H=10, b=8 (LONG)")
    parser.add_argument("--steps", type=int, help="inner steps per solver (full: 1500)")
    parser.add_argument("--hs", help="comma-separated H values (full: 10,25,50)")
    parser.add_argument("--main-h", type=int, help="H reported at the top level and compressed (full: 25)")
    parser.add_argument("--solvers", type=int, default=4, help="M")
    parser.add_argument("--batch", type=int, help="b, sequences per solver step (default: the preset's)")
    parser.add_argument("--codecs", help="comma-separated codecs for the compressed arms ('' for none)")
    parser.add_argument("--eval-batches", type=int, default=32, help="held-out batches of b sequences")
    parser.add_argument("--eval-interval", type=int, help="steps between evaluations (default 50; --long: 500)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="run-config override, e.g. train.outer_lr=0.8, or run_seed=0x<64 hex> for another init and data order",
    )
    parser.add_argument("--download", choices=["peers", "mean"], default="peers", help="what compressed arms download")
    parser.add_argument("--skip-baselines", action="store_true", help="only DiLoCo arms (for tuning sweeps)")
    parser.add_argument(
        "--skip-uncompressed", action="store_true", help="only the compressed arms (needs --diloco-eval-loss)"
    )
    parser.add_argument(
        "--sync-eval-loss", type=float, help="sync loss of an earlier identical run, used with --skip-baselines"
    )
    parser.add_argument(
        "--diloco-eval-loss",
        type=float,
        help="main-H DiLoCo loss of an earlier identical run (--skip-uncompressed; without it no gap to DiLoCo)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench/out"), help="directory for JSON and PNG")
    parser.add_argument("--tag", default="", help="suffix of the output file names")
    args = parser.parse_args(argv)
    if args.quick and args.long:
        parser.error("--quick and --long are two settings; pick one")
    preset = QUICK if args.quick else LONG if args.long else FULL
    args.eval_interval = args.eval_interval or preset.get("eval_interval", 50)
    args.steps = args.steps or preset["steps"]
    args.hs = [int(h) for h in (args.hs or preset["hs"]).split(",") if h]
    args.main_h = args.main_h or preset["main_h"]
    codecs = preset["codecs"] if args.codecs is None else args.codecs
    args.codecs = [parse_codec(c) for c in codecs.split(",") if c]
    if args.skip_uncompressed:
        if not args.codecs:
            parser.error("--skip-uncompressed needs at least one codec")
        args.hs = [args.main_h]
    elif args.main_h not in args.hs:
        args.hs.append(args.main_h)
    args.batch = args.batch or preset["batch"] or None
    for h in args.hs:
        if args.steps % h:
            parser.error(f"--steps ({args.steps}) must be a multiple of every H ({h})")
    return args


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """`train.outer_lr=0.5` -> {"train": {"outer_lr": 0.5}} (values parsed as JSON when possible)."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, _, raw = item.partition("=")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        node = overrides
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return overrides


def make_config(root: str, h: int, batch: int | None, eval_batches: int, overrides: dict[str, Any]) -> RunConfig:
    """The default preset with H (one segment per round: segments do not matter here)."""
    train: dict[str, Any] = {"inner_steps": h, "steps_per_segment": h}
    if batch:
        train["batch_size"] = batch
    merged = {"train": {**train, **overrides.get("train", {})}, "data": {"eval_batches": eval_batches}}
    merged.update({k: v for k, v in overrides.items() if k not in ("train", "data")})
    return build_run_config(run_seed=RUN_SEED, dataset_root=root, overrides=merged)


# ---------------------------------------------------------------------------------------
# Baselines in their own processes (thread count set per process)


def _baseline_job(
    config_json: str,
    eval_json: str,
    manifest: DatasetManifest,
    shards: dict[bytes, bytes],
    steps: int,
    solver: str,
    eval_every: int,
    label: str,
    threads: int,
) -> TrainingCurve:
    torch.set_num_threads(threads)
    config = RunConfig.model_validate_json(config_json)
    dataset = build_token_dataset(manifest, shards, config.data.eval_shards)
    eval_config = RunConfig.model_validate_json(eval_json)
    return run_continuous_training(config, dataset, steps, solver, eval_config, eval_every, label)


def start_baseline(
    pool: ProcessPoolExecutor,
    config: RunConfig,
    eval_config: RunConfig,
    corpus: tuple[DatasetManifest, dict[bytes, bytes]],
    args: argparse.Namespace,
    solver: str,
    label: str,
    threads: int,
) -> Future[TrainingCurve]:
    manifest, shards = corpus
    return pool.submit(
        _baseline_job,
        config.model_dump_json(),
        eval_config.model_dump_json(),
        manifest,
        shards,
        args.steps,
        solver,
        args.eval_interval,
        label,
        threads,
    )


# ---------------------------------------------------------------------------------------
# DiLoCo arms


def run_diloco(
    config: RunConfig,
    corpus: tuple[DatasetManifest, dict[bytes, bytes]],
    args: argparse.Namespace,
    compression: Compression | None = None,
) -> SimulationResult:
    h = config.train.inner_steps
    manifest, shards = corpus
    return run_simulation(
        config,
        manifest,
        shards,
        args.solvers,
        args.steps // h,
        eval_every=max(1, args.eval_interval // h),
        compression=compression,
        on_round=_log_progress,
    )


def _log_progress(round_index: int, result: SimulationResult) -> None:
    """One stderr line whenever a round was evaluated (long arms on a loaded machine show progress)."""
    if result.eval_rounds[-1] == round_index + 1:
        log(f"  round {round_index + 1}/{result.rounds}: eval loss {result.eval_loss[-1]:.4f}, {result.seconds:.0f} s")


def summarize_codec(name: str, result: SimulationResult, bytes_sync: int, sync_loss: float | None) -> dict[str, Any]:
    """One entry of `codecs`: bytes both directions against sync (`bytes_ratio`, our count), the field's two other
    counts (sim/byte_counts.py), loss gap, bytes per solver per round."""
    per_round = result.solvers * result.syncs
    counts = compute_ratio_counts(result.parameters, result.inner_steps, result.solvers, result.bytes_up / per_round)
    return {
        "name": name,
        "bytes_ratio": round(bytes_sync / result.bytes_communicated, 1),
        "ratio_ours": round(bytes_sync / result.bytes_communicated, 1),
        "ratio_per_round_vs_dense": round(counts.per_round_vs_dense, 1),
        "ratio_per_step_vs_dp_upload": round(counts.per_step_vs_dp_upload, 1),
        "bits_per_parameter": round(counts.bits_per_parameter, 4),
        "loss_gap_pct": get_gap_pct(result.eval_loss[-1], sync_loss),
        "eval_loss": round(result.eval_loss[-1], 5),
        "bytes_per_solver_round_up": result.bytes_up // per_round,
        "bytes_per_solver_round_down": result.bytes_down // per_round,
        "download": result.compression,
    }


def get_gap_pct(loss: float | None, reference: float | None) -> float | None:
    """How far `loss` is above `reference`, in percent (None when either is unknown)."""
    return round(100 * (loss - reference) / reference, 3) if loss is not None and reference else None


def summarize_diloco(result: SimulationResult, bytes_sync: int, sync_loss: float | None) -> dict[str, Any]:
    loss = result.eval_loss[-1]
    summary: dict[str, Any] = {
        "eval_loss": round(loss, 5),
        "syncs": result.syncs,
        "bytes": result.bytes_communicated,
        "bytes_up": result.bytes_up,
        "bytes_down": result.bytes_down,
        "bytes_ratio_vs_sync": round(bytes_sync / result.bytes_communicated, 2),
        "seconds": round(result.seconds, 1),
    }
    if sync_loss is not None:
        summary["loss_gap_pct"] = get_gap_pct(loss, sync_loss)
    return summary


def write_plot(curves: dict[str, tuple[list[int], list[float]]], points: list[dict[str, Any]], path: Path) -> None:
    """Left: held-out loss against inner steps per solver. Right: final loss against bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, (steps, losses) in curves.items():
        left.plot(steps, losses, label=label)
    left.set_xlabel("inner steps per solver (sync: steps of the M x b model)")
    left.set_ylabel("held-out loss (nats/byte)")
    left.set_title("held-out loss during training")
    lows = [min(v[1][1:]) for v in curves.values() if len(v[1]) > 1]
    if lows:
        left.set_ylim(min(lows) - 0.05, max(lows) + 0.6)
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    for point in points:
        right.scatter(point["bytes"], point["eval_loss"])
        right.annotate(point["label"], (point["bytes"], point["eval_loss"]), fontsize=7)
    right.set_xscale("log")
    right.set_xlabel("bytes communicated (all solvers, both directions)")
    right.set_ylabel("final held-out loss")
    right.set_title("loss against communication")
    right.grid(alpha=0.3)
    figure.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    figure.savefig(tmp, dpi=110)
    plt.close(figure)
    tmp.replace(path)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    started = time.perf_counter()
    overrides = parse_overrides(args.set)
    corpus = load_corpus_shards()
    root = hash_to_hex(corpus[0].root)
    configs = {h: make_config(root, h, args.batch, args.eval_batches, overrides) for h in args.hs}
    eval_config = configs[args.main_h]
    b = eval_config.train.batch_size
    sync_config = make_config(root, args.steps, b * args.solvers, args.eval_batches, overrides)
    lone_config = make_config(root, args.steps, b, args.eval_batches, overrides)
    n_params = None
    curves: dict[str, tuple[list[int], list[float]]] = {}
    context = multiprocessing.get_context("spawn")
    sync = lone = None
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        if not args.skip_baselines:
            log(f"sync: {args.steps} steps of batch {b * args.solvers} (2 threads)")
            sync = start_baseline(pool, sync_config, eval_config, corpus, args, SYNC_SOLVER, "sync", 2).result()
            curves["sync (every step)"] = (sync.steps, sync.eval_loss)
            log(f"sync: eval loss {sync.eval_loss[-1]:.4f} in {sync.seconds:.0f} s")
            # The lone solver soaks up the cores the DiLoCo coordinator leaves idle.
            lone_future = start_baseline(pool, lone_config, eval_config, corpus, args, LONE_SOLVER, "lone", 1)
        sync_loss = sync.eval_loss[-1] if sync else args.sync_eval_loss
        results: dict[int, SimulationResult] = {}
        for h in [] if args.skip_uncompressed else sorted(args.hs):
            log(f"DiLoCo: M={args.solvers}, H={h}, {args.steps // h} rounds")
            results[h] = run_diloco(configs[h], corpus, args)
            n_params = results[h].parameters
            rounds = results[h].eval_rounds
            curves[f"DiLoCo H={h}"] = ([r * h for r in rounds], results[h].eval_loss)
            log(f"DiLoCo H={h}: eval loss {results[h].eval_loss[-1]:.4f} in {results[h].seconds:.0f} s")
        compressed: dict[str, SimulationResult] = {}
        for codec in args.codecs:
            peers = args.download == "peers"
            setup = Compression(upload=codec, download=None if peers else codec, peer_payloads=peers)
            log(f"DiLoCo H={args.main_h} compressed: {setup.name}")
            compressed[codec.name] = run_diloco(eval_config, corpus, args, setup)
            rounds = compressed[codec.name].eval_rounds
            curves[f"DiLoCo H={args.main_h} {codec.name}"] = (
                [r * args.main_h for r in rounds],
                compressed[codec.name].eval_loss,
            )
            n_params = compressed[codec.name].parameters
            log(
                f"  eval loss {compressed[codec.name].eval_loss[-1]:.4f}, {compressed[codec.name].bytes_communicated} B"
            )
        if not args.skip_baselines:
            lone = lone_future.result()
            curves["lone solver (1/M tokens)"] = (lone.steps, lone.eval_loss)

    assert n_params is not None
    bytes_sync = 2 * 4 * n_params * args.solvers * args.steps
    per_h = {str(h): summarize_diloco(r, bytes_sync, sync_loss) for h, r in sorted(results.items())}
    main_loss: float | None
    if args.skip_uncompressed:  # the main-H arm from an earlier identical run: its loss, its exact bytes
        main_loss, main_bytes = args.diloco_eval_loss, 2 * 4 * n_params * args.solvers * (args.steps // args.main_h)
    else:
        main_loss, main_bytes = results[args.main_h].eval_loss[-1], results[args.main_h].bytes_communicated
    compression_summary = {}
    for name, result in compressed.items():
        summary = summarize_diloco(result, bytes_sync, sync_loss)
        summary["loss_vs_uncompressed_pct"] = get_gap_pct(result.eval_loss[-1], main_loss)
        compression_summary[name] = summary
    codecs = [summarize_codec(name, result, bytes_sync, sync_loss) for name, result in compressed.items()]
    for entry in codecs:
        entry["loss_vs_uncompressed_pct"] = compression_summary[entry["name"]]["loss_vs_uncompressed_pct"]
    output: dict[str, Any] = {
        "H": args.main_h,
        "solvers": args.solvers,
        "steps_per_solver": args.steps,
        "batch_per_solver": b,
        "parameters": n_params,
        "sync_eval_loss": round(sync_loss, 5) if sync_loss is not None else None,
        "diloco_eval_loss": round(main_loss, 5) if main_loss is not None else None,
        "lone_eval_loss": round(lone.eval_loss[-1], 5) if lone else None,
        "loss_gap_pct": get_gap_pct(main_loss, sync_loss),
        "bytes_sync": bytes_sync,
        "bytes_diloco": main_bytes,
        "bytes_ratio": round(bytes_sync / main_bytes, 2),
        "syncs_sync": args.steps,
        "syncs_diloco": args.steps // args.main_h,
        "diloco_beats_lone": bool(lone and all(r.eval_loss[-1] < lone.eval_loss[-1] for r in results.values())),
        "per_h": per_h,
        "compression": compression_summary,
        "codecs": codecs,
        "download": args.download,
        "baselines_reused": {"sync": args.skip_baselines and sync_loss is not None, "diloco": args.skip_uncompressed},
        "train_config": eval_config.train.model_dump(),
        "eval_tokens": args.eval_batches * b * eval_config.model.block_size,
        "machine": f"{platform.machine()}, {torch.get_num_threads()} threads available, torch {torch.__version__}",
        "seconds": round(time.perf_counter() - started, 1),
    }
    if sync is not None and lone is not None:
        output["baseline_seconds"] = {"sync": round(sync.seconds, 1), "lone": round(lone.seconds, 1)}
    stem = f"diloco{'-quick' if args.quick else '-long' if args.long else ''}{args.tag}"
    args.out.mkdir(parents=True, exist_ok=True)
    detail = {
        "summary": output,
        "curves": {k: {"steps": v[0], "eval_loss": v[1]} for k, v in curves.items()},
        "diloco": {str(h): asdict(r) for h, r in results.items()},
        "compressed": {k: asdict(r) for k, r in compressed.items()},
    }
    (args.out / f"{stem}.json").write_text(json.dumps(detail, indent=1) + "\n")
    points = [{"label": f"DiLoCo H={h}", **s} for h, s in per_h.items()]
    points += [{"label": name, **s} for name, s in compression_summary.items()]
    if sync_loss is not None:
        points.append({"label": "sync", "bytes": bytes_sync, "eval_loss": sync_loss})
    write_plot(curves, points, args.out / f"{stem}.png")
    log(f"wrote {args.out / stem}.json and .png")
    print(json.dumps(output))
    return output


if __name__ == "__main__":
    main()
