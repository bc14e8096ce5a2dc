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
   (`HARDWARE_PATHS`: this CPU's native kernels with the pins off, and the libraries' portable paths),
   each started with that path's environment before torch loads and checked to run it
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

import math
import multiprocessing
import os
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import Any

import torch

from adversary.behaviours import Behaviour, make_dishonest_segment
from protocol.adapters.execution_env import get_unpinned_environment, read_execution_environment
from protocol.config import HFModelConfig, ReplayThresholds, RunConfig
from protocol.data import DatasetManifest, TokenDataset, build_token_dataset
from protocol.errors import GradledgerError
from protocol.execution_pins import PINNED_ATEN_CAPABILITY, PINNED_ENVIRONMENT, PINS_SWITCH
from protocol.merkle import SegmentLeaf
from protocol.outer import get_initial_global_state
from protocol.replay import (
    compute_global_relative_error,
    compute_update_distances,
    judge_exact,
    judge_tolerance,
    replay_segment,
)
from protocol.sketch import UpdateSketch, compute_sketch_distance, compute_update_sketch
from protocol.state import decode_state, encode_state
from protocol.training import (
    SegmentRecord,
    State,
    compute_param_update,
    get_params,
    keep_checkpoints,
    train_round,
)
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
    "threads-4": (4, False),
}
CROSS_THREADS = (1, 2)
HARDWARE_PATHS: dict[str, dict[str, str]] = {
    "native": {},
    "portable": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}
"""Real CPU code paths the honest replays also run on (the unpinned hardware trials), by name: the environment a
worker process starts with, on top of the pins switched off and every pinned variable removed
(`get_unpinned_environment`). "native" is what this CPU runs without the pins (ATen's widest instruction set, e.g.
AVX-512; MKL's default branch without STRICT; oneDNN's widest ISA): a verifier on a newer or older CPU that did not
pin. "portable" is the most generic path each library has (ATen's portable kernels, MKL's COMPATIBLE branch, oneDNN
limited to SSE4.1): what a machine sharing none of the pinned SIMD kernels computes. Two paths, not one per library,
because each costs a worker replaying every segment twice (1 and 2 threads) on the same cores."""
MIN_TRIALS = 1000
"""Trials per cheat (and honest cross-profile replays) a full calibration aims for: 99.9% needs >= 1000."""

Corpus = tuple[DatasetManifest, dict[bytes, bytes]]
Row = dict[str, Any]

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


def measure(
    config: RunConfig,
    committed_sketch: UpdateSketch,
    start: Mapping[str, torch.Tensor],
    replayed_end: Mapping[str, torch.Tensor],
    committed_end: Mapping[str, torch.Tensor],
) -> dict[str, Any]:
    """Every distance a tolerance verdict uses, replayed vs committed update (as `judge_tolerance` computes
    them; `cosine` is kept as well so a re-judgement compares exactly what the verdict compares)."""
    replayed = compute_param_update(start, replayed_end)
    committed = compute_param_update(start, committed_end)
    sketch = compute_sketch_distance(committed_sketch, compute_update_sketch(replayed, config.get_sketch_spec()))
    error, cosine = compute_update_distances(replayed, committed)
    return {
        "hamming": sketch.max_hamming_fraction,
        "log2_norm": min(sketch.max_log2_norm_diff, 1e9),
        "relative_error": min(error, 1e9),
        "one_minus_cosine": 1.0 - cosine,
        "cosine": cosine,
        "global_relative_error": min(compute_global_relative_error(replayed, committed), 1e9),
        "worst_hamming_tensor": sketch.worst_hamming_tensor,
    }


def _init_worker(config_json: str, profiles_json: dict[str, str], manifest: DatasetManifest, shards: dict) -> None:
    torch.set_num_threads(1)
    config = RunConfig.model_validate_json(config_json)
    _WORKER["config"] = config
    _WORKER["profiles"] = {name: RunConfig.model_validate_json(text) for name, text in profiles_json.items()}
    _WORKER["dataset"] = build_token_dataset(manifest, shards, config.data.eval_shards)


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


def _row(kind: str, name: str, accepted: bool, method: str, **extra: Any) -> Row:
    return {"kind": kind, "name": name, "accepted": accepted, "method": method, **extra}


def _replay(config: RunConfig, dataset: TokenDataset, where: tuple[int, str, int], start: State) -> State:
    return replay_segment(config, dataset, where[0], where[1], where[2], start)


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
    pinned = _with(*EXACT_VARIANTS[variant], lambda: _replay(config, dataset, at, start))
    verdict = judge_exact(config, leaf, start, pinned)
    rows.append(_row("honest-exact", variant, verdict.accepted, verdict.method, **where))
    cross: dict[str, State] = {}
    for name, profile_config in _WORKER["profiles"].items():
        for threads in CROSS_THREADS:
            label = f"{name}-{threads}"
            cross[label] = _with(threads, False, lambda c=profile_config: _replay(c, dataset, at, start))
            verdict = judge_tolerance(config, leaf, record.sketch, start, cross[label], end)
            distances = measure(config, record.sketch, start, cross[label], end)
            rows.append(_row("honest-cross", label, verdict.accepted, verdict.method, **where, **distances))
    previous = compute_param_update(checkpoints[index - 1], start) if index else None
    for behaviour in Behaviour:
        if behaviour is Behaviour.REUSED_UPDATE and previous is None:
            continue  # segment 0 has no previous segment in this round
        cheat = make_dishonest_segment(
            behaviour, config, dataset, *at, start, seed=seed + index, previous_update=previous, honest_end=end
        )
        cheat_leaf = cheat.record.to_leaf(RUN_ID, round_index, solver)
        verdict = judge_exact(config, cheat_leaf, start, pinned)
        rows.append(_row("attack-exact", behaviour.value, verdict.accepted, verdict.method, **where))
        for label, replayed in cross.items():
            committed = cheat.end_checkpoint
            verdict = judge_tolerance(config, cheat_leaf, cheat.record.sketch, start, replayed, committed)
            distances = measure(config, cheat.record.sketch, start, replayed, committed)
            extra = {"profile": label, **where, **distances}
            rows.append(_row("attack-cross", behaviour.value, verdict.accepted, verdict.method, **extra))
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
    replayed = _with(1, False, lambda: _replay(config, dataset, (round_index, solver, index), start))
    verdict = judge_exact(config, leaf, start, replayed)
    return _row("honest-exact", "another-process", verdict.accepted, verdict.method, round=round_index, segment=index)


# ---------------------------------------------------------------------------------------
# Hardware trials: honest replays on real unpinned CPU code paths, each in its own process


class HardwarePathError(GradledgerError):
    """A hardware worker does not run the code path it was started for: its rows would be pinned drift (none)
    reported as hardware drift, so the calibration stops instead."""


@dataclass(frozen=True)
class HardwareJob:
    """What a hardware worker needs to replay a job's segments: the checkpoints the pinned worker trained
    (`states[i]` starts segment i, `states[i + 1]` is its committed end) and the committed records."""

    round: int
    solver: str
    states: list[bytes]
    records: list[SegmentRecord]


def _init_hardware_worker(
    path: str, requested: dict[str, str], config_json: str, manifest: DatasetManifest, shards: dict
) -> None:
    torch.set_num_threads(1)
    config = RunConfig.model_validate_json(config_json)
    _WORKER.update(path=path, requested=requested, config=config)
    _WORKER["dataset"] = build_token_dataset(manifest, shards, config.data.eval_shards)


def explain_hardware_path_failure(
    requested: Mapping[str, str], environment: Mapping[str, Any], process_env: Mapping[str, str]
) -> str | None:
    """Why a hardware worker does not run the code path it was started for, or None when it does.

    `environment` is `read_execution_environment().as_dict()` in the worker, `process_env` its os.environ. A path
    that silently ran the pinned kernels would report the pinned drift (none) as hardware drift."""
    if environment["pinned"]:
        return f"the pins are on ({PINS_SWITCH} is not off): the worker runs the pinned kernels"
    pinned_names = {name for pins in PINNED_ENVIRONMENT.values() for name in pins}
    leaked = {k: v for k, v in process_env.items() if k in pinned_names and requested.get(k) != v}
    if leaked:
        return f"pinned variables leaked into the worker's environment: {leaked}"
    capability = environment["aten_capability"]
    if "ATEN_CPU_CAPABILITY" in requested:
        if capability != requested["ATEN_CPU_CAPABILITY"].upper():
            return f"torch dispatches {capability} kernels, the path asked for {requested['ATEN_CPU_CAPABILITY']}"
    elif environment["avx512f"] and capability in set(PINNED_ATEN_CAPABILITY.values()):
        return f"torch dispatches the pinned {capability} kernels on an AVX-512 CPU: the unpinned path did not take"
    if environment["mkl_branch"] is not None:
        mode = requested.get("MKL_CBWR")
        if mode is not None and environment["mkl_branch"] != mode.split(",")[0].upper():
            return f"MKL runs {environment['mkl_branch']}, the path asked for MKL_CBWR={mode}"
        if environment["mkl_strict"] and "STRICT" not in (mode or ""):
            return "MKL runs with STRICT reproducibility: the pinned MKL_CBWR took effect"
    return None


def check_hardware_worker() -> dict[str, Any]:
    """The code path this hardware worker computes with; raises HardwarePathError when it is not the one asked for."""
    environment = read_execution_environment().as_dict()
    problem = explain_hardware_path_failure(_WORKER["requested"], environment, os.environ)
    if problem is not None:
        raise HardwarePathError(f"hardware path {_WORKER['path']!r}: {problem}")
    _WORKER["environment"] = environment
    return environment


def run_hardware_job(job: HardwareJob) -> list[Row]:
    """Replay every segment of a job at 1 and 2 threads on this worker's code path, with the run config (the pinned
    profile's elementary kernels: only the machine differs), judged by tolerance against the committed end."""
    config: RunConfig = _WORKER["config"]
    dataset: TokenDataset = _WORKER["dataset"]
    path, environment = _WORKER["path"], _WORKER["environment"]
    label = {"path": path, "aten_capability": environment["aten_capability"], "mkl_mode": _mkl_mode(environment)}
    rows = []
    for index, record in enumerate(job.records):
        start, end = decode_state(job.states[index]), decode_state(job.states[index + 1])
        leaf = record.to_leaf(RUN_ID, job.round, job.solver)
        at = (job.round, job.solver, index)
        for threads in CROSS_THREADS:
            replayed = _with(threads, False, partial(_replay, config, dataset, at, start))
            verdict = judge_tolerance(config, leaf, record.sketch, start, replayed, end)
            distances = measure(config, record.sketch, start, replayed, end)
            where = {"round": job.round, "segment": index}
            rows.append(
                _row("honest-cross", f"hw-{path}-{threads}", verdict.accepted, verdict.method, **where, **label,
                     **distances)
            )  # fmt: skip
    return rows


def _mkl_mode(environment: Mapping[str, Any]) -> str:
    branch = environment["mkl_branch"]
    return "no MKL" if branch is None else branch + (",STRICT" if environment["mkl_strict"] else "")


@contextmanager
def _process_environment(environment: Mapping[str, str]) -> Iterator[None]:
    """os.environ is `environment` inside (what a process started here inherits), restored after."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environment)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def start_hardware_pool(
    path: str, requested: Mapping[str, str], config: RunConfig, corpus: Corpus, stack: ExitStack
) -> tuple[ProcessPoolExecutor, dict[str, Any]]:
    """A one-process pool on `path` (HARDWARE_PATHS), its worker started and checked; (pool, its environment).

    The variables must be in the environment when the worker process starts: the spawned process imports torch
    (with sim/calibration.py) before any initializer runs, and torch's libraries read them once, at load."""
    context = multiprocessing.get_context("spawn")
    with _process_environment(get_unpinned_environment(os.environ, **requested)):
        pool = ProcessPoolExecutor(
            1,
            mp_context=context,
            initializer=_init_hardware_worker,
            initargs=(path, dict(requested), config.model_dump_json(), *corpus),
        )
        stack.callback(pool.shutdown, cancel_futures=True)  # on an error, queued work is dropped, not run
        environment = pool.submit(check_hardware_worker).result()  # starts the worker under this environment
    return pool, environment


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
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    paths = HARDWARE_PATHS if hardware_paths is None else hardware_paths
    with ExitStack() as stack:
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


def to_finite(value: Any) -> Any:
    """Strict JSON: infinities and NaN become null (json.dumps would write Infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: to_finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_finite(v) for v in value]
    return value
