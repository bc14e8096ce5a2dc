"""Replay a segment and judge it: exact under the same profile, tolerances across profiles.

Order of checks for one sampled segment (DESIGN section 3):
1. the served start checkpoint hashes to the leaf's start hash (else the solver served
   something else: a failed segment);
2. the leaf claims the tokens the config implies;
3. same execution profile: the replayed end state hashes to the leaf's end hash and the
   replayed update's sketch hashes to the leaf's sketch hash -- bit-identical or rejected;
4. another profile: the sketch of the replayed update against the committed sketch; beyond
   the thresholds the segment is rejected at once; within them the committed end checkpoint
   is needed and the verdict rests on exact distances between the replayed and committed
   updates -- per tensor (relative error, cosine) and over the whole update (relative
   error) -- because a sketch alone is not binding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import torch

from protocol.config import ReplayThresholds, RunConfig
from protocol.data import TokenDataset
from protocol.hashing import Hash32
from protocol.merkle import SegmentLeaf
from protocol.sketch import UpdateSketch, compute_sketch_distance, compute_sketch_hash, compute_update_sketch
from protocol.state import compute_state_hash
from protocol.training import (
    State,
    compute_param_update,
    compute_segment_sketch,
    get_segment_tokens,
    train_segment,
)

Method = Literal["exact", "sketch", "distance", "precheck"]


@dataclass(frozen=True)
class ReplayVerdict:
    """The outcome of checking one segment, with the evidence behind it."""

    accepted: bool
    method: Method
    reason: str
    needs_end_checkpoint: bool = False
    max_hamming_fraction: float | None = None
    max_log2_norm_diff: float | None = None
    max_relative_error: float | None = None
    min_cosine: float | None = None
    global_relative_error: float | None = None


@dataclass(frozen=True)
class SketchEvidence:
    """The worst per-tensor sketch distances of a cross-profile replay."""

    max_hamming_fraction: float
    max_log2_norm_diff: float


def replay_segment(
    config: RunConfig,
    dataset: TokenDataset,
    round_index: int,
    solver: str,
    segment_index: int,
    start_checkpoint: Mapping[str, torch.Tensor],
    plant_secret: Hash32 | None = None,
) -> State:
    """Re-run segment `segment_index` of `solver`'s round from its start checkpoint (its end checkpoint); with
    the revealed `plant_secret`, as the planted round it was (to check that a claimed plant was planted)."""
    return train_segment(config, dataset, round_index, solver, segment_index, start_checkpoint, plant_secret)[0]


def _precheck(
    config: RunConfig, leaf: SegmentLeaf, start_checkpoint: Mapping[str, torch.Tensor]
) -> ReplayVerdict | None:
    if compute_state_hash(start_checkpoint) != leaf.start_hash:
        return ReplayVerdict(False, "precheck", "served start checkpoint does not hash to the leaf's start hash")
    if leaf.tokens != get_segment_tokens(config):
        return ReplayVerdict(
            False,
            "precheck",
            f"leaf claims {leaf.tokens} tokens, the config implies {get_segment_tokens(config)}",
        )
    return None


def judge_exact(
    config: RunConfig,
    leaf: SegmentLeaf,
    start_checkpoint: Mapping[str, torch.Tensor],
    replayed_end: Mapping[str, torch.Tensor],
) -> ReplayVerdict:
    """Verdict under the run's own execution profile: bit-identical or rejected."""
    failed = _precheck(config, leaf, start_checkpoint)
    if failed:
        return failed
    if compute_state_hash(replayed_end) != leaf.end_hash:
        return ReplayVerdict(False, "exact", "replayed end state differs from the committed end hash")
    sketch = compute_segment_sketch(start_checkpoint, replayed_end, config.get_sketch_spec())
    if compute_sketch_hash(sketch) != leaf.sketch_hash:
        return ReplayVerdict(False, "exact", "end state matches but the committed sketch hash is wrong")
    return ReplayVerdict(True, "exact", "bit-identical replay")


def compute_update_distances(
    replayed_update: Mapping[str, torch.Tensor], committed_update: Mapping[str, torch.Tensor]
) -> tuple[float, float]:
    """(max per-tensor relative error, min per-tensor cosine) between two updates."""
    worst_error, worst_cosine = 0.0, 1.0
    for name, committed in committed_update.items():
        r, c = replayed_update[name].double().flatten(), committed.double().flatten()
        c_norm, r_norm = c.norm().item(), r.norm().item()
        if c_norm == 0.0 and r_norm == 0.0:
            continue
        error = (r - c).norm().item() / max(c_norm, 1e-30)
        cosine = (r @ c).item() / max(c_norm * r_norm, 1e-30)
        worst_error, worst_cosine = max(worst_error, error), min(worst_cosine, cosine)
    return worst_error, worst_cosine


def compute_global_relative_error(
    replayed_update: Mapping[str, torch.Tensor], committed_update: Mapping[str, torch.Tensor]
) -> float:
    """||replayed - committed|| / ||committed|| over the whole update (all tensors as one vector).

    Why next to the per-tensor maxima: a tensor whose true gradient is zero (the attention key
    bias: softmax ignores a shift shared by all keys) moves only by rounding noise that AdamW
    normalizes to full-size steps, so its honest cross-profile error is large and dominates the
    per-tensor maximum. Tampering spread over the whole model (e.g. noise at 1% of the update)
    hides under that maximum but not under the whole-update error (bench/detection.py).
    """
    diff = norm = 0.0
    for name, committed in committed_update.items():
        c = committed.double()
        diff += float(((replayed_update[name].double() - c) ** 2).sum())
        norm += float((c * c).sum())
    if norm == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return math.sqrt(diff / norm)


def judge_tolerance(
    config: RunConfig,
    leaf: SegmentLeaf,
    committed_sketch: UpdateSketch,
    start_checkpoint: Mapping[str, torch.Tensor],
    replayed_end: Mapping[str, torch.Tensor],
    committed_end: Mapping[str, torch.Tensor] | None = None,
    thresholds: ReplayThresholds | None = None,
) -> ReplayVerdict:
    """Verdict for a replay under another execution profile (see the module docstring)."""
    limits = thresholds or config.thresholds
    failed = _precheck(config, leaf, start_checkpoint)
    if failed:
        return failed
    if compute_sketch_hash(committed_sketch) != leaf.sketch_hash:
        return ReplayVerdict(False, "precheck", "published sketch does not hash to the leaf's sketch hash")
    replayed_update = compute_param_update(start_checkpoint, replayed_end)
    distance = compute_sketch_distance(
        committed_sketch, compute_update_sketch(replayed_update, config.get_sketch_spec())
    )
    evidence = SketchEvidence(distance.max_hamming_fraction, distance.max_log2_norm_diff)
    if (
        distance.max_hamming_fraction > limits.max_hamming_fraction
        or distance.max_log2_norm_diff > limits.max_log2_norm_diff
    ):
        return ReplayVerdict(
            False,
            "sketch",
            f"sketch distance beyond tolerance (worst tensor {distance.worst_hamming_tensor})",
            max_hamming_fraction=evidence.max_hamming_fraction,
            max_log2_norm_diff=evidence.max_log2_norm_diff,
        )
    if committed_end is None:
        return ReplayVerdict(
            False,
            "sketch",
            "sketch within tolerance; committed end checkpoint needed",
            needs_end_checkpoint=True,
            max_hamming_fraction=evidence.max_hamming_fraction,
            max_log2_norm_diff=evidence.max_log2_norm_diff,
        )
    if compute_state_hash(committed_end) != leaf.end_hash:
        return ReplayVerdict(
            False,
            "distance",
            "served end checkpoint does not hash to the leaf's end hash",
            max_hamming_fraction=evidence.max_hamming_fraction,
            max_log2_norm_diff=evidence.max_log2_norm_diff,
        )
    committed_update = compute_param_update(start_checkpoint, committed_end)
    if compute_sketch_hash(compute_update_sketch(committed_update, config.get_sketch_spec())) != leaf.sketch_hash:
        return ReplayVerdict(
            False,
            "distance",
            "committed sketch is not the sketch of the committed update",
            max_hamming_fraction=evidence.max_hamming_fraction,
            max_log2_norm_diff=evidence.max_log2_norm_diff,
        )
    error, cosine = compute_update_distances(replayed_update, committed_update)
    global_error = compute_global_relative_error(replayed_update, committed_update)
    accepted = (
        error <= limits.max_relative_error
        and cosine >= limits.min_cosine
        and global_error <= limits.max_global_relative_error
    )
    reason = "within exact-distance tolerance" if accepted else "exact distances beyond tolerance"
    return ReplayVerdict(
        accepted,
        "distance",
        reason,
        max_relative_error=error,
        min_cosine=cosine,
        global_relative_error=global_error,
        max_hamming_fraction=evidence.max_hamming_fraction,
        max_log2_norm_diff=evidence.max_log2_norm_diff,
    )


def verify_leaf_chain(
    leaves: list[SegmentLeaf],
    run_id: int,
    round_index: int,
    solver: str,
    start_hash: Hash32,
    num_segments: int,
) -> str | None:
    """Check a published trajectory before any replay; return a reason it fails, or None.

    Leaves must be segments 0..n-1 of this (run, round, solver), start at c_0 of θ_r and chain:
    each starts where the previous ended. A spoofed trajectory fails here at no replay cost.
    """
    if len(leaves) != num_segments:
        return f"{len(leaves)} leaves published, the config implies {num_segments} segments"
    for i, leaf in enumerate(leaves):
        if (leaf.run_id, leaf.round, leaf.solver.lower(), leaf.index) != (
            run_id,
            round_index,
            solver.lower(),
            i,
        ):
            return f"leaf {i} belongs to another run, round, solver or position"
        expected_start = start_hash if i == 0 else leaves[i - 1].end_hash
        if leaf.start_hash != expected_start:
            return f"leaf {i} does not start where " + (
                "θ_r's start checkpoint is" if i == 0 else f"leaf {i - 1} ended"
            )
    return None
