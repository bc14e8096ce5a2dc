"""Hardware trials: honest replays on real unpinned CPU code paths, each path in its own worker process.

The emulated profiles of sim/calibration.py swap kernels on the pinned machine; a verifier on other hardware keeps
the run's kernels but computes them with other instructions. Each path of `HARDWARE_PATHS` gets a one-process pool
started with that path's environment (the pins off, every pinned variable removed) before torch loads, checked to
really run it (`explain_hardware_path_failure`: a path that silently ran the pinned kernels would report no drift),
and then replays every segment a pinned job trained (`run_hardware_job`), judged by tolerance against the committed
end: "honest-cross" rows `hw-<path>-<threads>` (docs/calibration.md).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from protocol.adapters.execution_env import get_unpinned_environment, read_execution_environment
from protocol.config import RunConfig
from protocol.data import DatasetManifest, TokenDataset, build_token_dataset
from protocol.errors import GradledgerError
from protocol.execution_pins import PINNED_ATEN_CAPABILITY, PINNED_ENVIRONMENT, PINS_SWITCH, ExecutionEnvironment
from protocol.replay import judge_tolerance
from protocol.state import decode_state
from protocol.training import SegmentRecord
from sim.trials import CROSS_THREADS, RUN_ID, Corpus, Row, make_row, measure, replay_at, with_threads

_WORKER: dict[str, Any] = {}
"""The hardware worker process's run config, dataset and path (set by its initializer)."""

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
    mkl_mode = ExecutionEnvironment(**environment).mkl_mode
    label = {"path": path, "aten_capability": environment["aten_capability"], "mkl_mode": mkl_mode}
    rows = []
    for index, record in enumerate(job.records):
        start, end = decode_state(job.states[index]), decode_state(job.states[index + 1])
        leaf = record.to_leaf(RUN_ID, job.round, job.solver)
        at = (job.round, job.solver, index)
        for threads in CROSS_THREADS:
            replayed = with_threads(threads, False, partial(replay_at, config, dataset, at, start))
            verdict = judge_tolerance(config, leaf, record.sketch, start, replayed, end)
            distances = measure(config, record.sketch, start, replayed, end)
            where = {"round": job.round, "segment": index}
            rows.append(
                make_row("honest-cross", f"hw-{path}-{threads}", verdict.accepted, verdict.method, **where, **label,
                     **distances)
            )  # fmt: skip
    return rows


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
    (with this module) before any initializer runs, and torch's libraries read them once, at load."""
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
