"""What every calibration trial is made of, in whichever worker process it runs (sim/calibration.py's pinned job
workers, sim/hardware_trials.py's unpinned ones): a replay at a thread count, the distances a tolerance verdict
uses, and the row a trial becomes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from protocol.config import RunConfig
from protocol.data import DatasetManifest, TokenDataset
from protocol.profile import set_deterministic_algorithms
from protocol.replay import compute_global_relative_error, compute_update_distances, replay_segment
from protocol.sketch import UpdateSketch, compute_sketch_distance, compute_update_sketch
from protocol.training import State, compute_param_update

RUN_ID = 1
CROSS_THREADS = (1, 2)
"""Thread counts every cross-profile replay (emulated or hardware) runs at."""

Row = dict[str, Any]
Corpus = tuple[DatasetManifest, dict[bytes, bytes]]


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


def with_threads(threads: int, deterministic: bool, fn: Callable[[], State]) -> State:
    """Run `fn` with a thread count and the deterministic-algorithms flag, then restore them."""
    previous = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    set_deterministic_algorithms(deterministic)
    try:
        return fn()
    finally:
        torch.set_num_threads(previous[0])
        set_deterministic_algorithms(previous[1])


def make_row(kind: str, name: str, accepted: bool, method: str, **extra: Any) -> Row:
    """One trial: its kind (honest-exact, honest-cross, attack-exact, attack-cross), name, verdict and distances."""
    return {"kind": kind, "name": name, "accepted": accepted, "method": method, **extra}


def replay_at(config: RunConfig, dataset: TokenDataset, where: tuple[int, str, int], start: State) -> State:
    """Replay segment `where` = (round, solver, segment) from `start` with the one training step."""
    return replay_segment(config, dataset, where[0], where[1], where[2], start)
