"""Honest replay drift against the standard cheats: the measurements `gradledger calibrate` and
bench/detection.py share.

1. A DiLoCo trajectory (sim/simulate.py) gives realistic θ_r at every stage of training, warm-up
   included.
2. Each job trains one solver's honest round from some θ_r under the run's pinned profile and, for
   every segment:
   - replays it under the pinned profile in another variant this machine can produce (2 threads,
     1 or 2 threads with deterministic algorithms, 4 threads; one variant per segment, in rotation)
     and, for one segment per job, in another process; verdict `judge_exact`: any mismatch is a false
     positive;
   - replays it under each emulated other profile (`get_cross_profiles`: the fused normalisation
     kernel, and for a Hugging Face model also the fused SDPA attention) at 1 and 2 threads; verdict
     `judge_tolerance` against the committed end checkpoint under the run's `ReplayThresholds`;
   - builds every cheat of adversary/behaviours.py on the same segment and judges it both ways (exact
     against the pinned replay; tolerance against every cross-profile replay).
3. The job hands its round's checkpoints to one more worker process per real CPU code path
   (sim/hardware_trials.py `HARDWARE_PATHS`: this CPU's native kernels with the pins off, and the
   libraries' portable paths), each started with that path's environment before torch loads and checked to run it
   (`explain_hardware_path_failure`). It replays every segment with the run config (the pinned
   profile's elementary kernels: only the machine differs) at 1 and 2 threads; verdict
   `judge_tolerance` against the committed end checkpoint ("honest-cross" rows `hw-<path>-<threads>`,
   which record the ATen capability and MKL mode they ran). These are the drift a verifier on other
   hardware brings, where the fused profiles only emulate other kernels.
4. Every cross-profile trial, emulated or hardware, keeps the five distances a tolerance verdict uses
   (`measure`), so the verdict can be recomputed under any other thresholds (sim/threshold_choice.py)
   without training again; the honest floor the thresholds are chosen from covers both kinds.

Training results do not depend on timing or on the number of workers; only seconds do.
"""

from __future__ import annotations

import functools
import math
import multiprocessing
import os
from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import torch

from adversary.behaviours import Behaviour, make_dishonest_segment
from protocol.config import HFModelConfig, ReplayThresholds, RunConfig
from protocol.data import DatasetManifest, TokenDataset, build_token_dataset
from protocol.merkle import SegmentLeaf
from protocol.outer import get_initial_global_state
from protocol.replay import (
    judge_exact,
    judge_tolerance,
)
from protocol.state import decode_state, encode_state
from protocol.training import (
    State,
    compute_param_update,
    get_params,
    keep_checkpoints,
    train_round,
)
from sim.hardware_trials import HARDWARE_PATHS, HardwareJob, run_hardware_job, start_hardware_pool
from sim.simulate import get_simulated_solver, run_simulation
from sim.trials import CROSS_THREADS, RUN_ID, Corpus, Row, make_row, measure, replay_at, with_threads

RUN_SEED = "0x" + "de" * 32
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
    "threads-4": (4, False),
}
MIN_TRIALS = 1000
"""Trials per cheat (and honest cross-profile replays) a full calibration aims for: 99.9% needs >= 1000."""


_WORKER: dict[str, Any] = {}


@dataclass(frozen=True)
class TrialPlan:
    """How much to measure: trajectory length, honest solver rounds per θ_r, worker processes."""

    rounds: int
    jobs_per_round: int
    trajectory_solvers: int = 4
    workers: int = 2

    @property
    def jobs(self) -> int:
        return self.rounds * self.jobs_per_round


def get_cross_profiles(config: RunConfig) -> dict[str, RunConfig]:
    """The emulated "other machines" this one can produce, by name: the run config with fused kernels.

    Every model gets the fused normalisation kernel (nn.LayerNorm / F.rms_norm); a Hugging Face model also
    gets it together with the fused SDPA attention, the profile a stock transformers install would run."""
    variants: dict[str, dict[str, str]] = {"fused": {"layer_norm": "fused"}}
    if isinstance(config.model, HFModelConfig):
        variants["fused-sdpa"] = {"layer_norm": "fused", "attention": "sdpa"}
    return {
        name: config.model_copy(update={"profile": config.profile.model_copy(update=update)})
        for name, update in variants.items()
    }


def get_cross_trials_per_segment(config: RunConfig) -> int:
    return len(get_cross_profiles(config)) * len(CROSS_THREADS)


def plan_full_calibration(
    config: RunConfig, jobs_per_round: int = 3, trajectory_solvers: int = 4, workers: int = 2
) -> TrialPlan:
    """The smallest trajectory giving every cheat >= MIN_TRIALS cross-profile trials.

    The scarcest cheat is the reused update: segment 0 of a round has no previous update to reuse, so a job
    gives it (segments - 1) x (cross profiles x thread counts) trials; honest replays get more."""
    per_job = max(1, config.train.num_segments - 1) * get_cross_trials_per_segment(config)
    jobs = math.ceil(MIN_TRIALS / per_job)
    return TrialPlan(max(2, math.ceil(jobs / jobs_per_round)), jobs_per_round, trajectory_solvers, workers)


# ---------------------------------------------------------------------------------------
# Distances and trials


def _init_worker(config_json: str, profiles_json: dict[str, str], manifest: DatasetManifest, shards: dict) -> None:
    torch.set_num_threads(1)
    config = RunConfig.model_validate_json(config_json)
    _WORKER["config"] = config
    _WORKER["profiles"] = {name: RunConfig.model_validate_json(text) for name, text in profiles_json.items()}
    _WORKER["dataset"] = build_token_dataset(manifest, shards, config.data.eval_shards)


def _judge_segment(
    round_index: int, solver: str, index: int, checkpoints: dict[int, State], record: Any, seed: int
) -> list[Row]:
    """All honest and adversarial trials of one segment."""
    config: RunConfig = _WORKER["config"]
    dataset: TokenDataset = _WORKER["dataset"]
    start, end = checkpoints[index], checkpoints[index + 1]
    leaf = record.to_leaf(RUN_ID, round_index, solver)
    at = (round_index, solver, index)
    where = {"round": round_index, "segment": index}
    rows = []
    variant = list(EXACT_VARIANTS)[(seed + index) % len(EXACT_VARIANTS)]  # one per segment: each is a replay
    pinned = with_threads(*EXACT_VARIANTS[variant], lambda: replay_at(config, dataset, at, start))
    verdict = judge_exact(config, leaf, start, pinned)
    rows.append(make_row("honest-exact", variant, verdict.accepted, verdict.method, **where))
    cross: dict[str, State] = {}
    for name, profile_config in _WORKER["profiles"].items():
        for threads in CROSS_THREADS:
            label = f"{name}-{threads}"
            replay = functools.partial(replay_at, profile_config, dataset, at, start)
            cross[label] = with_threads(threads, False, replay)
            verdict = judge_tolerance(config, leaf, record.sketch, start, cross[label], end)
            distances = measure(config, record.sketch, start, cross[label], end)
            rows.append(make_row("honest-cross", label, verdict.accepted, verdict.method, **where, **distances))
    previous = compute_param_update(checkpoints[index - 1], start) if index else None
    for behaviour in Behaviour:
        if behaviour is Behaviour.REUSED_UPDATE and previous is None:
            continue  # segment 0 has no previous segment in this round
        cheat = make_dishonest_segment(
            behaviour, config, dataset, *at, start, seed=seed + index, previous_update=previous, honest_end=end
        )
        cheat_leaf = cheat.record.to_leaf(RUN_ID, round_index, solver)
        verdict = judge_exact(config, cheat_leaf, start, pinned)
        rows.append(make_row("attack-exact", behaviour.value, verdict.accepted, verdict.method, **where))
        for label, replayed in cross.items():
            committed = cheat.end_checkpoint
            verdict = judge_tolerance(config, cheat_leaf, cheat.record.sketch, start, replayed, committed)
            distances = measure(config, cheat.record.sketch, start, replayed, committed)
            extra = {"profile": label, **where, **distances}
            rows.append(make_row("attack-cross", behaviour.value, verdict.accepted, verdict.method, **extra))
    return rows


def run_job(theta_bytes: bytes, round_index: int, solver: str, seed: int) -> dict[str, Any]:
    """Train one honest round from θ_r and judge every segment; hand back one start state for the another-process
    trial, and the round's checkpoints and records for the hardware trials (`run_hardware_job`)."""
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
    # segment i runs from checkpoint i to i + 1: len(records) + 1 states cover every segment's start and end
    states = [encode_state(checkpoints[i]) for i in range(len(records) + 1)]
    handoff_state = states[handoff]
    return {
        "rows": rows,
        "handoff": (handoff, handoff_state, leaf),
        "segments": HardwareJob(round_index, solver, states, records),
    }


def replay_in_this_process(
    config: RunConfig, dataset: TokenDataset, round_index: int, solver: str, handoff: tuple[int, bytes, SegmentLeaf]
) -> Row:
    """The "another process" trial: the coordinator replays a segment a worker trained."""
    index, start_bytes, leaf = handoff
    start = decode_state(start_bytes)
    replayed = with_threads(1, False, lambda: replay_at(config, dataset, (round_index, solver, index), start))
    verdict = judge_exact(config, leaf, start, replayed)
    where = {"round": round_index, "segment": index}
    return make_row("honest-exact", "another-process", verdict.accepted, verdict.method, **where)


def build_trajectory(
    config: RunConfig, corpus: Corpus, plan: TrialPlan, on_round: Callable[[int], None] | None = None
) -> dict[int, bytes]:
    """θ_0 .. θ_(rounds-1) of a DiLoCo run, as canonical parameter bytes."""
    if plan.rounds == 1:
        return {0: encode_state(get_params(get_initial_global_state(config)))}
    states: dict[int, bytes] = {}

    def keep(round_index: int, state: State) -> None:
        if round_index < plan.rounds:
            states[round_index] = encode_state(get_params(state))

    manifest, shards = corpus
    run_simulation(
        config,
        manifest,
        shards,
        plan.trajectory_solvers,
        plan.rounds - 1,
        on_round=(lambda index, _result: on_round(index)) if on_round else None,
        processes=min(plan.workers, plan.trajectory_solvers),
        eval_every=plan.rounds,
        on_state=keep,
    )
    return states


def measure_trials(
    config: RunConfig,
    corpus: Corpus,
    plan: TrialPlan,
    on_job: Callable[[int, int], None] | None = None,
    on_round: Callable[[int], None] | None = None,
    hardware_paths: Mapping[str, Mapping[str, str]] | None = None,
) -> list[Row]:
    """Every trial of the plan (module docstring); `on_round(r)` after each trajectory round and
    `on_job(done, total)` after each job (its hardware trials included) report progress. `hardware_paths`
    defaults to HARDWARE_PATHS ({} measures none)."""
    # Workers sometimes run 2 threads on shared cores: sleeping instead of spinning OpenMP threads keeps
    # oversubscription cheap (no effect on results, only on time).
    paths = HARDWARE_PATHS if hardware_paths is None else hardware_paths
    with ExitStack() as stack:
        if "OMP_WAIT_POLICY" not in os.environ:  # for the workers started inside; restored here after
            os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
            stack.callback(os.environ.pop, "OMP_WAIT_POLICY", None)
        # first: a path that does not take fails here, before minutes of training
        hardware = {name: start_hardware_pool(name, extra, config, corpus, stack)[0] for name, extra in paths.items()}
        thetas = build_trajectory(config, corpus, plan, on_round)
        jobs = [(r, get_simulated_solver(j)) for r in range(plan.rounds) for j in range(plan.jobs_per_round)]
        dataset = build_token_dataset(*corpus, config.data.eval_shards)
        profiles = {name: c.model_dump_json() for name, c in get_cross_profiles(config).items()}
        pool = ProcessPoolExecutor(
            plan.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(config.model_dump_json(), profiles, *corpus),
        )
        stack.callback(pool.shutdown, cancel_futures=True)
        rows = _schedule(config, dataset, jobs, thetas, pool, hardware, plan.workers, on_job)
    return rows


def _schedule(
    config: RunConfig,
    dataset: TokenDataset,
    jobs: list[tuple[int, str]],
    thetas: dict[int, bytes],
    pool: ProcessPoolExecutor,
    hardware: dict[str, ProcessPoolExecutor],
    workers: int,
    on_job: Callable[[int, int], None] | None,
) -> list[Row]:
    """Run the jobs, each job's checkpoints on to every hardware pool; a job is done when all its trials are.

    Memory stays bounded: a job hands over its round's checkpoints (a few MB each), so no new job starts while
    a hardware pool has `workers` or more jobs waiting."""
    rows: list[Row] = []
    in_flight: dict[Future[Any], tuple[str | None, int]] = {}  # (hardware path, or None for a job; job index)
    waiting_trials = [1 + len(hardware)] * len(jobs)  # per job: its own trials, then one per hardware path
    backlog = dict.fromkeys(hardware, 0)
    submitted = done = 0
    while done < len(jobs):
        running = sum(path is None for path, _ in in_flight.values())
        while submitted < len(jobs) and running < workers + 1 and max(backlog.values(), default=0) < workers:
            round_index, solver = jobs[submitted]
            job = pool.submit(run_job, thetas[round_index], round_index, solver, 1000 * submitted)
            in_flight[job] = (None, submitted)
            submitted, running = submitted + 1, running + 1
        finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
        for future in finished:
            path, i = in_flight.pop(future)
            if path is None:
                result = future.result()
                rows += result["rows"]
                rows.append(replay_in_this_process(config, dataset, *jobs[i], result["handoff"]))
                for name, hardware_pool in hardware.items():
                    in_flight[hardware_pool.submit(run_hardware_job, result["segments"])] = (name, i)
                    backlog[name] += 1
            else:
                hardware_rows: list[Row] = future.result()
                rows += hardware_rows
                backlog[path] -= 1
            waiting_trials[i] -= 1
            if waiting_trials[i] == 0:
                done += 1
                if on_job:
                    on_job(done, len(jobs))
    return rows


# ---------------------------------------------------------------------------------------
# Analysis


def group_rows(rows: list[Row], kind: str) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        if row["kind"] == kind:
            groups[row["name"]].append(row)
    return dict(groups)


def _rate(rows: list[Row], detected: bool) -> float:
    return sum((not r["accepted"]) == detected for r in rows) / len(rows) if rows else math.nan


def get_threshold_value(thresholds: ReplayThresholds, metric: str) -> float:
    """A threshold as the distance it bounds (min_cosine as a bound on 1 - cosine)."""
    value = getattr(thresholds, THRESHOLD_FIELDS[metric])
    return 1.0 - value if metric == "one_minus_cosine" else value


def suggest_thresholds(honest: list[Row], attacks: dict[str, list[Row]]) -> dict[str, Any]:
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


def analyse(rows: list[Row], thresholds: ReplayThresholds) -> dict[str, Any]:
    """The benchmark summary of trials whose `accepted` was judged under `thresholds`."""
    honest_exact = [r for r in rows if r["kind"] == "honest-exact"]
    honest_cross = [r for r in rows if r["kind"] == "honest-cross"]
    attacks_cross = group_rows(rows, "attack-cross")
    attacks_exact = group_rows(rows, "attack-exact")
    honest_max = {m: max(r[m] for r in honest_cross) for m in METRICS}
    # A metric whose honest maximum is 0 (e.g. the quantized norm) has no finite margin: null.
    margins = {
        m: get_threshold_value(thresholds, m) / honest_max[m] if honest_max[m] > 0 else None for m in THRESHOLD_FIELDS
    }
    attack_rates = {name: _rate(group, detected=True) for name, group in attacks_cross.items()}
    finite_margins = [v for v in margins.values() if v is not None]
    return {
        "thresholds": thresholds.model_dump(),
        "honest_trials": len(honest_exact) + len(honest_cross),
        "honest_cross_trials": len(honest_cross),
        "false_positives": sum(not r["accepted"] for r in honest_exact + honest_cross),
        "attacks": attack_rates,
        "min_detection_rate": min(attack_rates.values()),
        "threshold_margin": min(finite_margins) if finite_margins else None,
        "threshold_margins": margins,
        "honest_exact": {
            name: {"trials": len(g), "exact_match_rate": 1 - _rate(g, detected=True)}
            for name, g in group_rows(rows, "honest-exact").items()
        },
        "honest_cross": {
            name: {
                "trials": len(g),
                "false_positives": sum(not r["accepted"] for r in g),
                "honest_max": {m: max(r[m] for r in g) for m in METRICS},
            }
            for name, g in group_rows(rows, "honest-cross").items()
        },
        "hardware_paths": {
            r["path"]: {"aten_capability": r["aten_capability"], "mkl_mode": r["mkl_mode"]}
            for r in honest_cross
            if "path" in r
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


def compute_per_round_detection(num_segments: int) -> dict[str, Any]:
    """P(a commitment with one faked segment is sampled by at least one seat), under the default run rules
    (protocol/run_presets.py TINY: samples per seat, seats per commitment); every seat draws its own samples."""
    from protocol.run_presets import TINY
    from protocol.sampling import compute_detection_probability

    rules, f = TINY.run, Fraction(1, num_segments)
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


def to_finite(value: Any) -> Any:
    """Strict JSON: infinities and NaN become null (json.dumps would write Infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: to_finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_finite(v) for v in value]
    return value
