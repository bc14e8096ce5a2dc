"""`gradledger calibrate`: measure honest replay drift and cheat distances for a run config; write thresholds.

    gradledger calibrate --model-config examples/llama-tiny.json --out runs/calibration

Builds the run config (preset + model), measures (sim/calibration.py: honest replays under the pinned profile
at 1, 2 and 4 threads with deterministic algorithms on and off, which must be bit-identical; honest replays
under the emulated other profiles, fused kernels at 1 and 2 threads; honest replays on real unpinned CPU code
paths, this CPU's native kernels and the libraries' portable ones, each in its own process, at 1 and 2 threads;
every cheat of the standard set),
chooses `ReplayThresholds` from the measurements (sim/threshold_choice.py), re-judges every trial under them
and writes `<out>/thresholds.json` and `<out>/calibration.png`. When a cheat sits inside the honest range on
every metric it refuses: exit 1, a message naming the cheat and metric, and no thresholds.json.
`run create --thresholds <out>/thresholds.json` reads the file back (`gradledger.run_inputs.load_thresholds_file`).
docs/calibration.md explains the method. torch, sim/ and the run inputs are imported inside the command, when it runs,
so `gradledger --help` does not load them (issue 38).
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

THRESHOLDS_FILE = "thresholds.json"
PLOT_FILE = "calibration.png"
CALIBRATION_SEED = "0x" + "de" * 32
"""The run seed calibration trains under: thresholds are statistics of the model and training settings,
not of one seed, so every calibration of a config measures the same trials."""
QUICK = {"rounds": 6, "jobs_per_round": 1, "trajectory_solvers": 2}


def _canonical_hash(value: Any) -> str:
    from protocol.hashing import compute_content_hash, hash_to_hex

    return hash_to_hex(compute_content_hash(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()))


def _plan(config: Any, quick: bool, rounds: int | None, jobs_per_round: int | None, workers: int) -> Any:
    from sim.calibration import TrialPlan, plan_full_calibration

    if quick:
        plan = TrialPlan(QUICK["rounds"], QUICK["jobs_per_round"], QUICK["trajectory_solvers"], workers)
    else:
        plan = plan_full_calibration(config, jobs_per_round=jobs_per_round or 3, workers=workers)
    return TrialPlan(
        rounds if rounds is not None else plan.rounds,
        jobs_per_round if jobs_per_round is not None else plan.jobs_per_round,
        plan.trajectory_solvers,
        workers,
    )


def _measure(config: Any, corpus: Any, plan: Any, console: Console, logger: Any) -> list[dict[str, Any]]:
    """The trials, with a progress bar on stderr (and a log line per tenth of the jobs, for logs without a tty)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from node.logs import log_event
    from sim.calibration import measure_trials

    with Progress(
        TextColumn("[bold]calibrate {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console,
    ) as progress:  # fmt: skip
        trajectory = progress.add_task("trajectory", total=max(plan.rounds - 1, 0))
        jobs = progress.add_task("trials", total=plan.jobs)

        def on_job(done: int, total: int) -> None:
            progress.update(jobs, completed=done)
            if done % max(1, total // 10) == 0:
                log_event(logger, "calibrate_progress", jobs_done=done, jobs=total)

        return measure_trials(
            config,
            corpus,
            plan,
            on_job=on_job,
            on_round=lambda _index: progress.advance(trajectory),
        )


def calibrate_command(
    model_config: Path | None = typer.Option(
        None, "--model-config", help="model section or transformers config.json (default: the preset's built-in GPT)"
    ),
    preset: str = typer.Option("default", "--preset", help="training settings preset: default or tiny"),
    data: Path | None = typer.Option(
        None, "--data", help="directory of text files, byte-level (default: the Python stdlib sources)"
    ),
    rounds: int | None = typer.Option(
        None, "--rounds", min=1, help="θ_r of the DiLoCo trajectory (default: enough for >= 1,000 trials per cheat)"
    ),
    jobs_per_round: int | None = typer.Option(
        None, "--jobs-per-round", min=1, help="honest solver rounds replayed per θ_r (default 3; --quick 1)"
    ),
    quick: bool = typer.Option(False, "--quick", help="6 rounds x 1 job: a smoke test, too few trials to trust"),
    workers: int = typer.Option(2, "--workers", min=1, help="worker processes (results do not depend on it)"),
    out: Path = typer.Option(..., "--out", help="directory for thresholds.json and calibration.png"),
    json_output: bool = typer.Option(False, "--json", help="print the summary as JSON on stdout"),
) -> None:
    """Measure honest replay drift and cheat distances for a run config; write ReplayThresholds (JSON + PNG)."""
    import torch

    from gradledger.run_inputs import read_model_config_file
    from node.logs import configure_logging, get_logger, log_event
    from protocol.adapters.corpus import describe_corpus, load_corpus_shards
    from protocol.config import build_run_config
    from protocol.data import verify_dataset_fits_config
    from protocol.hashing import hash_to_hex
    from sim.calibration import compute_per_round_detection, get_cross_profiles, to_finite
    from sim.threshold_choice import CalibrationRefused, summarize_calibration, write_plot

    configure_logging()
    logger = get_logger("calibrate")
    console = Console(stderr=True)
    started = time.perf_counter()
    model = read_model_config_file(model_config) if model_config is not None else None
    corpus = load_corpus_shards(data)
    config = build_run_config(
        preset=preset, run_seed=CALIBRATION_SEED, dataset_root=hash_to_hex(corpus[0].root), model=model
    )
    verify_dataset_fits_config(corpus[0], config, where=describe_corpus(data))
    plan = _plan(config, quick, rounds, jobs_per_round, workers)
    log_event(logger, "calibrate_plan", rounds=plan.rounds, jobs=plan.jobs, workers=plan.workers)
    rows = _measure(config, corpus, plan, console, logger)
    out.mkdir(parents=True, exist_ok=True)
    model_name = model_config.name if model_config is not None else f"built-in GPT ({preset})"
    try:
        choice, summary = summarize_calibration(rows, config)
    except CalibrationRefused as exc:
        write_plot(rows, None, out / PLOT_FILE, f"{model_name}: calibration refused (no thresholds)")
        raise CalibrationRefused(f"{exc} (distances plotted in {out / PLOT_FILE})") from None
    model_section = config.model.model_dump(mode="json")
    summary.update(compute_per_round_detection(config.train.num_segments))
    summary.update(
        {
            "model": model_section,
            "model_config_hash": _canonical_hash(model_section),
            "train": config.train.model_dump(),
            "sketch": config.sketch.model_dump(),
            "profile": config.profile.model_dump(),
            "cross_profiles": {
                name: c.profile.model_dump(include={"layer_norm", "attention"})
                for name, c in get_cross_profiles(config).items()
            },
            "dataset_root": config.data.dataset_root,
            "plan": {"rounds": plan.rounds, "jobs": plan.jobs, "trajectory_solvers": plan.trajectory_solvers},
            "machine": f"{platform.machine()}, torch {torch.__version__}",
            "seconds": round(time.perf_counter() - started, 1),
        }
    )
    summary = to_finite(summary)
    document = {key: value for key, value in summary.items() if key != "distances"}
    tmp = out / (THRESHOLDS_FILE + ".tmp")
    tmp.write_text(json.dumps(document, indent=2) + "\n")
    tmp.replace(out / THRESHOLDS_FILE)
    write_plot(rows, choice.thresholds, out / PLOT_FILE, f"{model_name}: honest cross-profile replays vs cheats")
    log_event(
        logger, "calibrated", out=str(out / THRESHOLDS_FILE), honest_trials=summary["honest_trials"],
        false_positives=summary["false_positives"], min_detection_rate=summary["min_detection_rate"],
        safety_factor=round(choice.safety_factor, 2),
    )  # fmt: skip
    if "warning" in summary:
        console.print(f"[yellow]warning:[/] {summary['warning']}", highlight=False)
    if json_output:
        typer.echo(json.dumps(summary))
        return
    typer.echo(f"wrote {out / THRESHOLDS_FILE} and {out / PLOT_FILE}")
    typer.echo(f"thresholds: {choice.thresholds.model_dump()}")
    typer.echo(
        f"honest trials {summary['honest_trials']:,}, false positives {summary['false_positives']}; "
        f"min detection rate {summary['min_detection_rate']:.4f} over >= {min(summary['attack_trials'].values()):,} "
        f"trials per cheat; safety factor {choice.safety_factor:.1f}x (hardest: {choice.hardest['cheat']} on "
        f"{choice.hardest['metric']}); {summary['seconds']:.0f} s"
    )
