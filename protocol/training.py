"""The round and segment drivers: which inner steps make a solver's round and a replayed segment.

A solver trains H inner steps (the run's optimizer: AdamW or Muon) from θ_r, checkpointing (parameters *and* optimizer
state) every k steps; a verifier, juror or auditor replays any k-step segment from its start
checkpoint with the very same `run_inner_steps` (protocol/inner_step.py). Under the pinned execution profile the
replay is bit-identical, so honest work hashes to exactly what the solver committed.

A solver's round is a pure function of its `RoundInputs`: θ_r, the plant secret if the round plants, the AdamW
moments it carries, the run's config and data. The solver node gathers every one of them before training starts
(solver/node.py), then calls `train_round_inputs` once; nothing here calls back for more.

What a checkpoint holds (parameters and AdamW state, c_0 of a round) is protocol/checkpoints.py's; its names are
re-exported here, where most callers import them from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

from protocol.checkpoints import (
    ADAM_STEP,
    PARAM,
    CheckpointError,
    State,
    build_optimizer,
    build_trainer,
    compute_param_update,
    compute_pseudo_gradient,
    get_checkpoint_state,
    get_moments,
    get_param_state,
    get_params,
    load_checkpoint_state,
    make_start_checkpoint,
    verify_params_fit_model,
)
from protocol.config import RunConfig
from protocol.data import TokenDataset, get_eval_batch
from protocol.hashing import Hash32
from protocol.inner_step import GradientExchanger, run_inner_steps
from protocol.merkle import SegmentLeaf
from protocol.model import build_model
from protocol.sketch import SketchSpec, UpdateSketch, compute_sketch_hash, compute_update_sketch
from protocol.state import compute_state_hash

__all__ = [  # its drivers, and the checkpoint and step names most callers import from here
    "ADAM_STEP",
    "PARAM",
    "CheckpointError",
    "GradientExchanger",
    "RoundInputs",
    "SegmentRecord",
    "State",
    "build_optimizer",
    "build_trainer",
    "compute_param_update",
    "compute_pseudo_gradient",
    "compute_segment_record",
    "compute_segment_sketch",
    "evaluate",
    "evaluate_params",
    "get_checkpoint_state",
    "get_moments",
    "get_param_state",
    "get_params",
    "get_segment_tokens",
    "keep_checkpoints",
    "load_checkpoint_state",
    "make_start_checkpoint",
    "run_inner_steps",
    "train_round",
    "train_round_inputs",
    "train_segment",
    "verify_params_fit_model",
]


@dataclass(frozen=True)
class SegmentRecord:
    """What a solver commits for one segment (the fields of its Merkle leaf)."""

    index: int
    start_hash: Hash32
    end_hash: Hash32
    sketch: UpdateSketch
    sketch_hash: Hash32
    tokens: int
    mean_loss: float

    def to_leaf(self, run_id: int, round_index: int, solver: str) -> SegmentLeaf:
        return SegmentLeaf(
            run_id=run_id,
            round=round_index,
            solver=solver,
            index=self.index,
            start_hash=self.start_hash,
            end_hash=self.end_hash,
            sketch_hash=self.sketch_hash,
            tokens=self.tokens,
        )


@dataclass(frozen=True)
class RoundInputs:
    """Everything one solver's round is a function of, gathered before its training starts.

    INVARIANT: complete before the first step. A solver node reads θ_r from the stores, the plant secret from the
    chain and the carried moments from its accepted previous round (solver/round_training.py `SolverRoundInputs`),
    and only then trains (`train_round_inputs`) and stores the outputs; the training code asks for nothing more. So
    the same inputs give the same checkpoints and hashes, whether the round is trained for the first time, again after
    a crash, or to re-create a corrupt artifact (solver/own_artifacts.py).
    """

    config: RunConfig
    dataset: TokenDataset
    round_index: int
    solver: str
    theta: Mapping[str, torch.Tensor]
    """θ_r's parameters ("param/..." entries)."""
    plant_secret: Hash32 | None = None
    """The plant secret when the plant draw selects this round (protocol/planting.py): trained on planted batches."""
    start_moments: Mapping[str, torch.Tensor] | None = None
    """The AdamW state c_0 carries in a run with `train.carry_moments` (node/moments.py), None for fresh moments."""


def train_segment(
    config: RunConfig,
    dataset: TokenDataset,
    round_index: int,
    solver: str,
    segment_index: int,
    start_checkpoint: Mapping[str, torch.Tensor],
    plant_secret: Hash32 | None = None,
) -> tuple[State, list[float]]:
    """Segment `segment_index` of `solver`'s round from its start checkpoint: (end checkpoint, losses).

    A fresh model and optimizer loaded from the checkpoint, then k steps of `run_inner_steps`: what a
    verifier, juror or auditor replays, and what a cheater's honest baseline is. (`train_round` keeps
    one model across a whole round instead; it runs the very same steps.)
    """
    model, optimizer = build_trainer(config, start_checkpoint)
    k = config.train.steps_per_segment
    losses = run_inner_steps(model, optimizer, dataset, config, round_index, solver, segment_index * k, k, plant_secret)
    return get_checkpoint_state(model, optimizer), losses


def compute_segment_record(
    config: RunConfig,
    index: int,
    start: Mapping[str, torch.Tensor],
    end: Mapping[str, torch.Tensor],
    losses: list[float],
) -> SegmentRecord:
    """The leaf fields of segment `index` from its two checkpoints: hashes, update sketch, the config's tokens.

    (`train_round` assembles the same fields from hashes and sketches it computed on the writer thread.)
    """
    sketch = compute_segment_sketch(start, end, config.get_sketch_spec())
    return SegmentRecord(
        index=index,
        start_hash=compute_state_hash(start),
        end_hash=compute_state_hash(end),
        sketch=sketch,
        sketch_hash=compute_sketch_hash(sketch),
        tokens=get_segment_tokens(config),
        mean_loss=sum(losses) / len(losses) if losses else float("nan"),
    )


def get_segment_tokens(config: RunConfig) -> int:
    """Tokens one segment trains on: k steps x batch x context (the leaf's `tokens`)."""
    return config.train.steps_per_segment * config.train.batch_size * config.model.block_size


def train_round(
    config: RunConfig,
    dataset: TokenDataset,
    theta_params: Mapping[str, torch.Tensor],
    round_index: int,
    solver: str,
    save_checkpoint: Callable[[int, State], Hash32 | Future[Hash32]] | None = None,
    on_step: Callable[[int], None] | None = None,
    in_background: Callable[[Callable[[], UpdateSketch]], Future[UpdateSketch]] | None = None,
    plant_secret: Hash32 | None = None,
    exchanger: GradientExchanger | None = None,
    start_moments: Mapping[str, torch.Tensor] | None = None,
) -> tuple[list[SegmentRecord], State]:
    """`train_round_inputs` for a caller holding the inputs one by one (tests, benchmarks, the simulator)."""
    inputs = RoundInputs(config, dataset, round_index, solver, theta_params, plant_secret, start_moments)
    return train_round_inputs(inputs, save_checkpoint, on_step, in_background, exchanger)


def train_round_inputs(
    inputs: RoundInputs,
    save_checkpoint: Callable[[int, State], Hash32 | Future[Hash32]] | None = None,
    on_step: Callable[[int], None] | None = None,
    in_background: Callable[[Callable[[], UpdateSketch]], Future[UpdateSketch]] | None = None,
    exchanger: GradientExchanger | None = None,
) -> tuple[list[SegmentRecord], State]:
    """Train one round from θ_r; return the segment records and the final checkpoint c_H.

    `save_checkpoint(i, c_i)` receives every checkpoint c_0 .. c_(H/k) as it is made and returns
    its state hash, or a future of it: a solver stores each checkpoint by content hash in a
    background writer (hashing and writing overlap the next segment's training), so each
    checkpoint is hashed once. Without it the hash is computed here. `in_background(work)`
    (a solver passes its writer's `submit`) runs segment sketches off the training thread too,
    all but the last: that one is computed here while the writer hashes c_H. The sketch is a
    pure function of two checkpoint copies, so where it runs cannot change it. `on_step(n)`
    reports progress. The records are assembled once every hash and sketch is known. These are where the outputs go;
    what the round is trained from is `inputs` alone. With `inputs.plant_secret` the round is a planted one: the same
    steps on the planted batches. With `exchanger` this process is one rank of a solver's process group
    (solver/process_group.py): every rank trains the same inputs in lockstep and ends with the same checkpoints a
    single process would. `inputs.start_moments` (a run with `train.carry_moments`) is the AdamW state c_0 carries
    instead of a fresh one (`make_start_checkpoint`).
    """
    config, dataset, round_index, solver = inputs.config, inputs.dataset, inputs.round_index, inputs.solver
    plant_secret = inputs.plant_secret
    save = save_checkpoint or (lambda _index, state: compute_state_hash(state))
    model = build_model(config.model, config.profile, config.seed_bytes)
    optimizer = build_optimizer(model, config.train)
    checkpoint = make_start_checkpoint(inputs.theta, inputs.start_moments)
    load_checkpoint_state(model, optimizer, checkpoint)
    hashes = [save(0, checkpoint)]
    spec = config.get_sketch_spec()
    k = config.train.steps_per_segment
    pending: list[UpdateSketch | Future[UpdateSketch]] = []
    losses = []
    for index in range(config.train.num_segments):
        before = checkpoint
        losses.append(
            run_inner_steps(
                model, optimizer, dataset, config, round_index, solver, index * k, k, plant_secret, exchanger
            )
        )
        checkpoint = get_checkpoint_state(model, optimizer)  # INVARIANT: fresh copies, never mutated later
        hashes.append(save(index + 1, checkpoint))
        if in_background and index + 1 < config.train.num_segments:
            pending.append(in_background(partial(compute_segment_sketch, before, checkpoint, spec)))
        else:
            pending.append(compute_segment_sketch(before, checkpoint, spec))
        if on_step:
            on_step((index + 1) * k)
    resolved = [h.result() if isinstance(h, Future) else h for h in hashes]
    sketches = [s.result() if isinstance(s, Future) else s for s in pending]
    records = [
        SegmentRecord(
            index=index,
            start_hash=resolved[index],
            end_hash=resolved[index + 1],
            sketch=sketch,
            sketch_hash=compute_sketch_hash(sketch),
            tokens=get_segment_tokens(config),
            mean_loss=sum(segment_losses) / len(segment_losses),
        )
        for index, (sketch, segment_losses) in enumerate(zip(sketches, losses, strict=True))
    ]
    return records, checkpoint


def keep_checkpoints(into: dict[int, State]) -> Callable[[int, State], Hash32]:
    """A `save_checkpoint` for `train_round` that keeps every checkpoint in memory (tests, benchmarks)."""

    def save(index: int, state: State) -> Hash32:
        into[index] = state
        return compute_state_hash(state)

    return save


def compute_segment_sketch(
    start: Mapping[str, torch.Tensor], end: Mapping[str, torch.Tensor], spec: SketchSpec
) -> UpdateSketch:
    """The sketch a segment leaf commits to: of the parameter update from c_(i-1) to c_i."""
    return compute_update_sketch(compute_param_update(start, end), spec)


@torch.no_grad()
def evaluate(model: nn.Module, dataset: TokenDataset, config: RunConfig) -> float:
    """Mean loss over the run's held-out batches (the same batches for every party)."""
    model.eval()
    total = 0.0
    for i in range(config.data.eval_batches):
        x, y = get_eval_batch(dataset, config.seed_bytes, i, config.train.batch_size, config.model.block_size)
        total += model(x, y).item()
    return total / config.data.eval_batches


def evaluate_params(params: Mapping[str, torch.Tensor], dataset: TokenDataset, config: RunConfig) -> float:
    """Held-out loss of a parameter state (e.g. θ_r)."""
    model = build_model(config.model, config.profile, config.seed_bytes)
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.copy_(params[PARAM + name])
    return evaluate(model, dataset, config)
