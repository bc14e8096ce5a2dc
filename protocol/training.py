"""The inner loop: the one implementation of a training step, used by every role.

A solver trains H inner AdamW steps from θ_r, checkpointing (parameters *and* optimizer
state) every k steps; a verifier, juror or auditor replays any k-step segment from its start
checkpoint with the very same `run_inner_steps`. Under the pinned execution profile the
replay is bit-identical, so honest work hashes to exactly what the solver committed.

Checkpoint names: "param/<name>" for parameters, "adam/<name>/exp_avg",
"adam/<name>/exp_avg_sq" and "adam/step" for the inner optimizer. Each round starts from a
fresh optimizer (zero moments, step 0), so the start checkpoint c_0 is a pure function of θ_r
that every party can recompute (docs/training.md).

A step's gradient is a canonical fold over the run's `train.micro_batches` micro-batches
(`compute_step_gradient`), so a solver that is a process group, each rank computing its share of
them, ends with the very checkpoints a single process replays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Protocol

import torch
from torch import nn

from protocol.config import RunConfig, TrainConfig
from protocol.data import TokenDataset, get_eval_batch, get_train_batch
from protocol.errors import GradledgerError
from protocol.hashing import Hash32
from protocol.merkle import SegmentLeaf
from protocol.model import build_model
from protocol.sketch import SketchSpec, UpdateSketch, compute_sketch_hash, compute_update_sketch
from protocol.state import compute_state_hash

PARAM = "param/"
ADAM = "adam/"
ADAM_STEP = "adam/step"

State = dict[str, torch.Tensor]


class CheckpointError(GradledgerError):
    """A checkpoint does not fit the run's model (other model, missing or extra tensors)."""


class MicroBatchError(GradledgerError):
    """A process group that cannot split the run's micro-batches evenly (its size does not divide M)."""


class GradientExchanger(Protocol):
    """How the ranks of one solver's process group share their micro-batch gradients (docs/training.md).

    Rank r of `world_size` computes micro-batches r*M/N .. (r+1)*M/N - 1 of every step. `gather(local)` takes this
    rank's rows (one per micro-batch, in index order: the flat gradient followed by the loss) and returns every
    rank's rows stacked in micro-batch index order, bit for bit as each rank computed them. An all-gather, never an
    all-reduce: a reduction's summation order is the library's, the fold over the gathered rows is ours.
    (solver/process_group.py implements it with torch.distributed.)
    """

    @property
    def rank(self) -> int: ...

    @property
    def world_size(self) -> int: ...

    def gather(self, local: torch.Tensor) -> torch.Tensor: ...


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


# ---------------------------------------------------------------------------------------
# Model, optimizer and checkpoints


def build_optimizer(model: nn.Module, train: TrainConfig) -> torch.optim.AdamW:
    """AdamW with decay on matrices only (nanoGPT); foreach/fused off: one pinned kernel path."""
    params = sorted(model.named_parameters())
    decay = [p for _, p in params if p.dim() >= 2]
    no_decay = [p for _, p in params if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": train.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(
        groups,
        lr=train.inner_lr,
        betas=(train.beta1, train.beta2),
        eps=train.adam_eps,
        foreach=False,
        fused=False,
    )


def get_param_state(model: nn.Module) -> State:
    """The parameters as a state: {"param/<name>": tensor} (copies)."""
    return {PARAM + name: p.detach().clone() for name, p in model.named_parameters()}


def get_fresh_optimizer_state(params: Mapping[str, torch.Tensor]) -> State:
    """AdamW state before its first step: zero moments, step 0 (what AdamW itself creates)."""
    state: State = {ADAM_STEP: torch.tensor(0.0)}
    for key, value in params.items():
        name = key.removeprefix(PARAM)
        state[f"{ADAM}{name}/exp_avg"] = torch.zeros_like(value)
        state[f"{ADAM}{name}/exp_avg_sq"] = torch.zeros_like(value)
    return state


def make_start_checkpoint(
    params: Mapping[str, torch.Tensor], moments: Mapping[str, torch.Tensor] | None = None
) -> State:
    """c_0 of a round: θ_r's parameters plus a fresh optimizer state, or plus `moments`, the AdamW state a solver
    carries into the round (`train.carry_moments`, `get_moments`; which moments a round may carry is the chain rule
    of node/moments.py). CheckpointError when `moments` does not fit the parameters."""
    if moments is None:
        return {**{k: v.clone() for k, v in params.items()}, **get_fresh_optimizer_state(params)}
    expected = get_fresh_optimizer_state(params)
    if set(moments) != set(expected):
        missing, extra = sorted(set(expected) - set(moments)), sorted(set(moments) - set(expected))
        raise CheckpointError(
            f"carried optimizer moments do not fit θ's parameters: missing {missing[:3]}, unexpected {extra[:3]}"
        )
    for key, value in moments.items():
        if value.dtype != expected[key].dtype or value.shape != expected[key].shape:
            raise CheckpointError(
                f"carried moment {key!r} has shape {tuple(value.shape)} {value.dtype}, θ needs "
                f"{tuple(expected[key].shape)} {expected[key].dtype}"
            )
    return {**{k: v.clone() for k, v in params.items()}, **{k: v.clone() for k, v in moments.items()}}


def get_moments(checkpoint: Mapping[str, torch.Tensor]) -> State:
    """The AdamW part of a checkpoint (both moments of every parameter and the step): what a round carries over."""
    return {k: v for k, v in checkpoint.items() if k.startswith(ADAM)}


def get_checkpoint_state(model: nn.Module, optimizer: torch.optim.AdamW) -> State:
    """Parameters and AdamW state as one flat state (copies), ready to hash or store."""
    state = get_param_state(model)
    steps = set()
    for name, param in model.named_parameters():
        slot = optimizer.state.get(param, {})
        if slot:
            state[f"{ADAM}{name}/exp_avg"] = slot["exp_avg"].detach().clone()
            state[f"{ADAM}{name}/exp_avg_sq"] = slot["exp_avg_sq"].detach().clone()
            steps.add(float(slot["step"]))
        else:
            state[f"{ADAM}{name}/exp_avg"] = torch.zeros_like(param)
            state[f"{ADAM}{name}/exp_avg_sq"] = torch.zeros_like(param)
            steps.add(0.0)
    if len(steps) != 1:
        raise CheckpointError(f"optimizer state is inconsistent: parameters at different steps {sorted(steps)}")
    state[ADAM_STEP] = torch.tensor(steps.pop())
    return state


def load_checkpoint_state(model: nn.Module, optimizer: torch.optim.AdamW, state: Mapping[str, torch.Tensor]) -> None:
    """Load a checkpoint into a model and its optimizer; CheckpointError on any mismatch."""
    expected = get_checkpoint_state(model, optimizer)
    missing, extra = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or extra:
        raise CheckpointError(
            f"checkpoint does not fit this run's model: missing {missing[:3]}, unexpected {extra[:3]} "
            "(is it a checkpoint of another model or config?)"
        )
    for key, value in state.items():
        if not isinstance(value, torch.Tensor):
            raise CheckpointError(f"checkpoint entry {key!r} is not a tensor")
        if value.shape != expected[key].shape or value.dtype != expected[key].dtype:
            raise CheckpointError(
                f"checkpoint entry {key!r} has shape {tuple(value.shape)} {value.dtype}, the run's model "
                f"needs {tuple(expected[key].shape)} {expected[key].dtype}"
            )
    step = state[ADAM_STEP].detach().clone()
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.copy_(state[PARAM + name])
            optimizer.state[param] = {  # the moments live where the parameter does (a model moved to a GPU)
                "step": step.clone(),
                "exp_avg": state[f"{ADAM}{name}/exp_avg"].detach().to(param.device, copy=True),
                "exp_avg_sq": state[f"{ADAM}{name}/exp_avg_sq"].detach().to(param.device, copy=True),
            }


def verify_params_fit_model(config: RunConfig, params: Mapping[str, torch.Tensor]) -> None:
    """Refuse parameters (e.g. a θ0 read from a checkpoint) that are not exactly the run model's: every
    "param/<name>" present, nothing extra, same shapes and dtypes. Raises CheckpointError naming the difference."""
    bad = sorted(k for k, v in params.items() if not k.startswith(PARAM) or not isinstance(v, torch.Tensor))
    if bad:
        raise CheckpointError(f'θ0 entries {bad[:3]} are not parameter tensors ("param/<name>")')
    build_trainer(config, make_start_checkpoint(params))


def get_params(state: Mapping[str, torch.Tensor]) -> State:
    """The "param/..." entries of a checkpoint or global state."""
    return {k: v for k, v in state.items() if k.startswith(PARAM)}


# ---------------------------------------------------------------------------------------
# The training step


def get_inner_lr(train: TrainConfig, global_step: int, round_step: int = 0) -> float:
    """Linear warmup over the first `warmup_steps` global inner steps, then constant; times a
    linear warmup over the first `round_warmup_steps` steps of every round.

    Why the per-round factor: a round that starts from a fresh AdamW state (`carry_moments` off)
    takes first bias-corrected steps of about sign(g) * lr on every coordinate -- several times a
    settled step, and mostly noise. Ramping the rate over the round's first steps damps that kick
    (bench/diloco.py: the fresh-state gap to synchronous training drops by more than half); with
    carried moments (the default) the ramp only costs, so it defaults to 0 steps.
    """
    lr = train.inner_lr
    if train.warmup_steps and global_step < train.warmup_steps:
        lr = train.inner_lr * (global_step + 1) / train.warmup_steps
    if train.round_warmup_steps and round_step < train.round_warmup_steps:
        lr = lr * (round_step + 1) / train.round_warmup_steps
    return lr


def get_local_micro_batches(micro_batches: int, exchanger: GradientExchanger | None) -> range:
    """The micro-batch indices this process computes: all M alone, rank r's contiguous M/N share in a group."""
    if exchanger is None:
        return range(micro_batches)
    rank, size = exchanger.rank, exchanger.world_size
    if size < 1 or micro_batches % size or not 0 <= rank < size:
        raise MicroBatchError(
            f"a process group of {size} ranks (this is rank {rank}) cannot share the run's {micro_batches} "
            "micro-batches per step evenly: run with a number of processes that divides train.micro_batches"
        )
    share = micro_batches // size
    return range(rank * share, (rank + 1) * share)


def _flatten_gradient(params: Sequence[nn.Parameter], loss: torch.Tensor) -> torch.Tensor:
    """One micro-batch's row: every parameter's gradient (float32, model order), then its loss."""
    parts = [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params]
    return torch.cat([*parts, loss.detach().reshape(1).to(parts[0].dtype)])


def _set_gradient(params: Sequence[nn.Parameter], flat: torch.Tensor) -> None:
    offset = 0
    for p in params:
        p.grad = flat[offset : offset + p.numel()].view_as(p)
        offset += p.numel()


def compute_step_gradient(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    micro_batches: int,
    exchanger: GradientExchanger | None = None,
) -> float:
    """Leave the step's gradient in every parameter's `.grad`; return the step's loss.

    The batch is cut into M contiguous micro-batches of equal size; each gets its own forward and backward
    (gradient g_j), and the step's gradient is defined as ((g_0 + g_1) + ... + g_(M-1)) / M: a left fold in index
    order in float32, then one division. In a process group each rank computes its share of the g_j and the
    exchanger gathers all rows; every rank folds the same rows in the same order, so every rank -- and a single
    process computing all M in sequence -- ends with the same bits. M = 1 alone is the plain step (one backward).
    The loss is the mean of the micro-batch losses (exact for M = 1).
    """
    if micro_batches == 1 and exchanger is None:
        loss = model(x, y)
        model.zero_grad(set_to_none=True)
        loss.backward()
        return loss.item()
    params = list(model.parameters())
    size = x.shape[0] // micro_batches
    local = (
        _compute_micro_gradient(model, params, x[j * size : (j + 1) * size], y[j * size : (j + 1) * size])
        for j in get_local_micro_batches(micro_batches, exchanger)
    )  # alone: folded as computed, one row in memory at a time
    rows = local if exchanger is None else exchanger.gather(torch.stack(list(local))).unbind(0)
    folded: torch.Tensor | None = None
    losses = []
    for row in rows:  # INVARIANT: index order, one row at a time: the canonical fold
        losses.append(float(row[-1]))
        folded = row.clone() if folded is None else folded.add_(row)
    if folded is None or len(losses) != micro_batches:
        raise MicroBatchError(f"the step gathered {len(losses)} micro-batch gradients, the run needs {micro_batches}")
    folded.div_(micro_batches)
    model.zero_grad(set_to_none=True)
    _set_gradient(params, folded)
    return sum(losses) / micro_batches


def _compute_micro_gradient(
    model: nn.Module, params: Sequence[nn.Parameter], x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """Forward and backward of one micro-batch from zeroed gradients: its row (flat gradient, then loss)."""
    model.zero_grad(set_to_none=True)
    loss = model(x, y)
    loss.backward()
    return _flatten_gradient(params, loss)


def run_inner_steps(
    model: nn.Module,
    optimizer: torch.optim.AdamW,
    dataset: TokenDataset,
    config: RunConfig,
    round_index: int,
    solver: str,
    first_step: int,
    num_steps: int,
    plant_secret: Hash32 | None = None,
    exchanger: GradientExchanger | None = None,
) -> list[float]:
    """Steps [first_step, first_step + num_steps) of `solver`'s round; returns their losses. With
    `plant_secret`, the steps of a planted round (protocol/data.get_train_batch). With `exchanger`, this
    process is one rank of a solver's process group and computes only its share of each step's
    micro-batches (`compute_step_gradient`); the parameters it ends with are the same bits either way.

    INVARIANT: this is the only code that advances training. Solvers, verifiers, jurors and
    auditors all call it, so an honest replay repeats the solver's arithmetic exactly.
    """
    train = config.train
    get_local_micro_batches(train.micro_batches, exchanger)  # refuse a group that cannot split M before any step
    losses = []
    model.train()
    device = next(model.parameters()).device
    for step in range(first_step, first_step + num_steps):
        x, y = get_train_batch(
            dataset,
            config.seed_bytes,
            round_index,
            solver,
            step,
            train.batch_size,
            config.model.block_size,
            plant_secret,
        )
        x, y = x.to(device), y.to(device)  # no copy on the CPU
        lr = get_inner_lr(train, round_index * train.inner_steps + step, step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        losses.append(compute_step_gradient(model, x, y, train.micro_batches, exchanger))
        optimizer.step()
    return losses


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


def build_trainer(
    config: RunConfig, checkpoint: Mapping[str, torch.Tensor], device: torch.device | str = "cpu"
) -> tuple[nn.Module, torch.optim.AdamW]:
    """The run's model and inner optimizer, loaded from a checkpoint (parameters and AdamW state). `device` other
    than the CPU is for measuring a GPU profile (bench/profile_check.py); every role trains and replays on the CPU."""
    model = build_model(config.model, config.profile, config.seed_bytes).to(device)
    optimizer = build_optimizer(model, config.train)
    load_checkpoint_state(model, optimizer, checkpoint)
    return model, optimizer


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
    """Train one round from θ_r; return the segment records and the final checkpoint c_H.

    `save_checkpoint(i, c_i)` receives every checkpoint c_0 .. c_(H/k) as it is made and returns
    its state hash, or a future of it: a solver stores each checkpoint by content hash in a
    background writer (hashing and writing overlap the next segment's training), so each
    checkpoint is hashed once. Without it the hash is computed here. `in_background(work)`
    (a solver passes its writer's `submit`) runs segment sketches off the training thread too,
    all but the last: that one is computed here while the writer hashes c_H. The sketch is a
    pure function of two checkpoint copies, so where it runs cannot change it. `on_step(n)`
    reports progress. The records are assembled once every hash and sketch is known. With
    `plant_secret` the round is a planted one: the same steps on the planted batches. With `exchanger` this process
    is one rank of a solver's process group (solver/process_group.py): every rank calls `train_round` with the same
    arguments in lockstep and ends with the same checkpoints a single process would. `start_moments` (a run with
    `train.carry_moments`) is the AdamW state c_0 carries instead of a fresh one (`make_start_checkpoint`).
    """
    save = save_checkpoint or (lambda _index, state: compute_state_hash(state))
    model = build_model(config.model, config.profile, config.seed_bytes)
    optimizer = build_optimizer(model, config.train)
    checkpoint = make_start_checkpoint(theta_params, start_moments)
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


def compute_param_update(before: Mapping[str, torch.Tensor], after: Mapping[str, torch.Tensor]) -> State:
    """after - before over the parameters only (the update a segment sketch describes)."""
    return {k: after[k] - v for k, v in get_params(before).items()}


def compute_segment_sketch(
    start: Mapping[str, torch.Tensor], end: Mapping[str, torch.Tensor], spec: SketchSpec
) -> UpdateSketch:
    """The sketch a segment leaf commits to: of the parameter update from c_(i-1) to c_i."""
    return compute_update_sketch(compute_param_update(start, end), spec)


def compute_pseudo_gradient(
    theta_params: Mapping[str, torch.Tensor], end_checkpoint: Mapping[str, torch.Tensor]
) -> State:
    """Δ = θ_r - c_H over the parameters: what a solver contributes to the outer step."""
    return {k: v - end_checkpoint[k] for k, v in get_params(theta_params).items()}


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
