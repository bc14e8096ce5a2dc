"""Measuring how fast this machine runs a run's model: the clock half of protocol/windows.py.

`gradledger run create` measures before it sends anything, to refuse windows the machine cannot keep; a
solver node measures when it starts, to sit out a round it joined too late to finish. Both time the one
training step every role runs (`protocol.training.run_inner_steps`) on the run's own config and data, so the
pace is the pace of the real work. A few steps after one warm-up step are enough: the step is the same
arithmetic every time; the median shields the estimate from one descheduled step on a shared machine.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Mapping

import torch

from node.logs import log_event
from protocol.adapters.runs import RunContext
from protocol.config import RunConfig
from protocol.data import DatasetManifest, TokenDataset, build_token_dataset
from protocol.outer import get_initial_global_state
from protocol.state import compute_state_hash
from protocol.training import build_trainer, get_checkpoint_state, get_params, make_start_checkpoint, run_inner_steps
from protocol.windows import TrainingPace, WindowNeeds, compute_round_training_ms, compute_window_needs

PACE_STEPS = 5
"""Timed steps after one warm-up step (the first step allocates the optimizer state and warms caches)."""
PACE_SOLVER = "0x" + "00" * 19 + "01"
"""The solver whose batches the measurement trains on: any address gives the same arithmetic per step."""


def _elapsed_ms(start: float) -> int:
    return max(1, round((time.perf_counter() - start) * 1000))


def measure_training_pace(
    config: RunConfig, dataset: TokenDataset, theta_params: Mapping[str, torch.Tensor], steps: int = PACE_STEPS
) -> TrainingPace:
    """Time the run's step, checkpoint and trainer load on this machine (about `steps` + 4 steps of work)."""
    checkpoint = make_start_checkpoint(theta_params)
    build_trainer(config, checkpoint)  # warm-up: the first model built in a process pays one-off set-up
    start = time.perf_counter()
    model, optimizer = build_trainer(config, checkpoint)
    load_ms = _elapsed_ms(start)
    run_inner_steps(model, optimizer, dataset, config, 0, PACE_SOLVER, 0, 1)  # warm-up: not timed
    step_ms = []
    for step in range(1, steps + 1):
        start = time.perf_counter()
        run_inner_steps(model, optimizer, dataset, config, 0, PACE_SOLVER, step, 1)
        step_ms.append(_elapsed_ms(start))
    start = time.perf_counter()
    compute_state_hash(get_checkpoint_state(model, optimizer))
    checkpoint_ms = _elapsed_ms(start)
    return TrainingPace(step_ms=round(statistics.median(step_ms)), checkpoint_ms=checkpoint_ms, load_ms=load_ms)


def measure_window_needs(
    config: RunConfig, manifest: DatasetManifest, shards: Mapping[bytes, bytes], samples: int, threads: int = 1
) -> WindowNeeds:
    """The windows a run of `config` needs on this machine, measured from θ0 with `threads` torch threads (a
    node's default), for `gradledger run create` to check before it sends anything."""
    torch.set_num_threads(threads)
    dataset = build_token_dataset(manifest, dict(shards), config.data.eval_shards)
    pace = measure_training_pace(config, dataset, get_params(get_initial_global_state(config)))
    return compute_window_needs(pace, config.train.inner_steps, config.train.steps_per_segment, samples)


def measure_round_training_ms(ctx: RunContext, log: logging.Logger) -> int:
    """A solver's compute for one round of `ctx`'s run on this machine (from θ0: the pace is the same for every
    θ), logged as `measured pace`."""
    pace = measure_training_pace(ctx.config, ctx.dataset, get_params(get_initial_global_state(ctx.config)))
    train = ctx.config.train
    round_ms = compute_round_training_ms(pace, train.inner_steps, train.steps_per_segment)
    log_event(log, "measured pace", run=ctx.run_id, step_ms=pace.step_ms, round_s=round_ms / 1000)
    return round_ms
