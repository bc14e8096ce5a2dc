"""The inner step: the one implementation of a training step, used by every role.

A solver trains H inner steps (AdamW, or Muon: protocol/muon.py) from θ_r; a verifier, juror or auditor replays any
k-step segment from its start checkpoint with the very same `run_inner_steps`. Under the pinned execution profile the
replay is bit-identical, so honest work hashes to exactly what the solver committed.

A step's gradient is a canonical fold over the run's `train.micro_batches` micro-batches (`compute_step_gradient`),
so a solver that is a process group, each rank computing its share of them, ends with the very checkpoints a single
process replays. What a checkpoint holds is protocol/checkpoints.py's; which steps make a round or a segment is
protocol/training.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch
from torch import nn

from protocol.config import RunConfig, TrainConfig
from protocol.data import TokenDataset, get_train_batch
from protocol.errors import GradledgerError
from protocol.hashing import Hash32


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


def get_inner_lr(train: TrainConfig, global_step: int, round_step: int = 0, base_lr: float | None = None) -> float:
    """Linear warmup over the first `warmup_steps` global inner steps, then constant; times a
    linear warmup over the first `round_warmup_steps` steps of every round. Of `base_lr`, by default
    `train.inner_lr` (a Muon group's is `train.muon_lr`: the same schedule scales both).

    Why the per-round factor: a round that starts from a fresh AdamW state (`carry_moments` off)
    takes first bias-corrected steps of about sign(g) * lr on every coordinate -- several times a
    settled step, and mostly noise. Ramping the rate over the round's first steps damps that kick
    (bench/diloco.py: the fresh-state gap to synchronous training drops by more than half); with
    carried moments (the default) the ramp only costs, so it defaults to 0 steps.
    """
    base = train.inner_lr if base_lr is None else base_lr
    lr = base
    if train.warmup_steps and global_step < train.warmup_steps:
        lr = base * (global_step + 1) / train.warmup_steps
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
    optimizer: torch.optim.Optimizer,
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
        global_step = round_index * train.inner_steps + step
        for group in optimizer.param_groups:  # a group's "base_lr" (Muon's) or inner_lr, under one schedule
            group["lr"] = get_inner_lr(train, global_step, step, group.get("base_lr"))
        losses.append(compute_step_gradient(model, x, y, train.micro_batches, exchanger))
        optimizer.step()
    return losses
