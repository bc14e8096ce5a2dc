"""Muon inner steps (`train.inner_optimizer = "muon"`): Muon on the hidden matrices, AdamW on everything else.

Why: a DiLoCo solver ships what its inner steps moved (Δ = θ_r - c_H). Muon's steps are orthogonalised matrices,
every singular value about equal, so their sum is flat in spectrum rather than in magnitude, and per MuLoCo such
pseudo-gradients compress to 2 bits almost for free where AdamW's do not (issue 40).

What: Keller Jordan's Muon, in float32. Per hidden matrix W (rows x cols) with gradient G:

    m <- lerp(m, G, 1 - β)                       the momentum, an EMA like AdamW's first moment
    U <- lerp(G, m, β)  (Nesterov; else U = m)
    O <- NS(U)                                   Newton-Schulz: X <- aX + (bA + cA²)X with A = XXᵀ, from
                                                 X = U / (‖U‖_F + 1e-7), (a, b, c) = (3.4445, -4.7750, 2.0315),
                                                 on the orientation with rows <= cols
    W <- W (1 - lr wd) - lr max(1, rows/cols)^½ O

Which parameters (`get_muon_parameter_names`): every 2-D parameter except embeddings (`nn.Embedding` weights, the
built-in GPT's tied output head among them) and an untied output head (`get_output_embeddings()`, a transformers
lm_head). Every other parameter -- embeddings, the head, biases, norm gains -- trains by the very AdamW that
`build_optimizer` builds for an AdamW run (same groups, same decay rule, same kernels).

Checkpoint layout, unchanged so every role, the moments chain, sketches and storage read a Muon run as they read any
run: a Muon matrix's momentum m is "adam/<name>/exp_avg"; its "adam/<name>/exp_avg_sq" is zeros that Muon never reads
or writes (a loaded value is carried through as it is); "adam/step" is the one step count every parameter shares.
One state mapping holds the Muon and AdamW slots alike, so `get_checkpoint_state` and `load_checkpoint_state` read and
write it as they do AdamW's.

# INVARIANT: a Muon step is a pure function of the loaded checkpoint and the step's gradient, the same bits at any
thread count under the pinned execution profile: float32 throughout, elementwise ops (lerp, mul, add) and torch
matmul, as in the forward pass (even ‖U‖_F is a matmul, never a full reduction, whose split follows the thread
count), no foreach or fused kernels, parameters in sorted-name order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, overload

import torch
from torch import nn

NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
"""The quintic Newton-Schulz coefficients of Keller Jordan's Muon (fast to a spectrum of about 0.7..1.2, not to 1)."""
NS_EPS = 1e-7
"""Added to ‖U‖_F before dividing, so a zero gradient gives a zero update."""


def get_output_head(model: nn.Module) -> torch.Tensor | None:
    """The weight of the model's output head when the model names one (transformers' `get_output_embeddings`, on the
    model or on the transformers model it wraps), else None (the built-in GPT's head is its token embedding)."""
    for owner in (model, getattr(model, "transformers_model", None)):
        get_head = getattr(owner, "get_output_embeddings", None)
        head = get_head() if callable(get_head) else None
        weight = getattr(head, "weight", None)
        if isinstance(weight, torch.Tensor):
            return weight
    return None


def get_muon_parameter_names(model: nn.Module) -> list[str]:
    """The hidden matrices Muon trains, sorted: 2-D parameters that are neither an embedding nor the output head."""
    excluded = {id(module.weight) for module in model.modules() if isinstance(module, nn.Embedding)}
    head = get_output_head(model)
    if head is not None:
        excluded.add(id(head))
    return sorted(name for name, p in model.named_parameters() if p.dim() == 2 and id(p) not in excluded)


def _frobenius_norm(x: torch.Tensor) -> torch.Tensor:
    """‖x‖_F as a (1, 1) tensor, by one matrix product (a full `.norm()` would split its sum by thread count)."""
    flat = x.reshape(1, -1)
    return (flat @ flat.mT).sqrt()


def orthogonalize(update: torch.Tensor, steps: int) -> torch.Tensor:
    """Newton-Schulz's approximation of U V^T for update = U S V^T (every singular value pushed to about 1)."""
    if update.dim() != 2:
        raise ValueError(f"Muon orthogonalises matrices, got a tensor of shape {tuple(update.shape)}")
    a, b, c = NS_COEFFICIENTS
    tall = update.shape[0] > update.shape[1]
    x = update.mT if tall else update  # rows <= cols: the Gram matrix A is the smaller square
    x = x / (_frobenius_norm(x) + NS_EPS)
    for _ in range(steps):
        gram = x @ x.mT
        poly = b * gram + (c * gram) @ gram  # grouped as the reference writes `c * A @ A`
        x = a * x + poly @ x
    return x.mT if tall else x


def compute_muon_update(
    grad: torch.Tensor, momentum: torch.Tensor, beta: float, nesterov: bool, ns_steps: int
) -> torch.Tensor:
    """Advance `momentum` in place by `grad`; return the step's direction, orthogonalised and shape-scaled."""
    momentum.lerp_(grad, 1 - beta)
    direction = grad.lerp(momentum, beta) if nesterov else momentum
    rows, cols = grad.shape
    return orthogonalize(direction, ns_steps).mul_(max(1.0, rows / cols) ** 0.5)


class MuonWithAdamW(torch.optim.Optimizer):
    """Muon on `muon_params`, and `adamw` (already built over every other parameter) stepped with it.

    `param_groups` is the Muon group followed by AdamW's own group dicts, so the inner step's learning-rate schedule
    (protocol/inner_step.py) sets every group's "lr", from the group's "base_lr" (`muon_lr` here); `state` is one
    mapping shared with `adamw` (see the module docstring for the slots)."""

    def __init__(
        self,
        muon_params: Sequence[nn.Parameter],
        adamw: torch.optim.AdamW,
        *,
        lr: float,
        momentum: float,
        nesterov: bool,
        ns_steps: int,
        weight_decay: float,
    ) -> None:
        defaults: dict[str, Any] = {
            "lr": lr,
            "base_lr": lr,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_steps": ns_steps,
            "weight_decay": weight_decay,
            "muon": True,
        }
        super().__init__([{"params": list(muon_params)}], defaults)
        overlap = {id(p) for p in muon_params} & {id(p) for g in adamw.param_groups for p in g["params"]}
        if overlap:
            raise ValueError(f"{len(overlap)} parameter(s) given to both Muon and AdamW")
        self.adamw = adamw
        adamw.state = self.state  # one mapping: a checkpoint reads and loads every parameter's slot here
        self.param_groups.extend(adamw.param_groups)  # the same dicts: setting "lr" here sets AdamW's

    @overload
    def step(self, closure: None = None) -> None: ...

    @overload
    def step(self, closure: Callable[[], float]) -> float: ...

    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """One step of every parameter: AdamW's groups by AdamW, then the Muon group, in sorted-name order."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self.adamw.step()
        with torch.no_grad():
            for group in self.param_groups:
                if group.get("muon"):
                    self._step_muon_group(group)
        return loss

    def _step_muon_group(self, group: dict[str, Any]) -> None:
        lr, decay = group["lr"], group["weight_decay"]
        for param in group["params"]:
            if param.grad is None:  # as AdamW: a parameter without a gradient is not stepped
                continue
            slot = self.state[param]
            if not slot:  # what `get_fresh_optimizer_state` holds: step 0, zero moments
                slot.update(
                    step=torch.tensor(0.0),
                    exp_avg=torch.zeros_like(param, memory_format=torch.preserve_format),
                    exp_avg_sq=torch.zeros_like(param, memory_format=torch.preserve_format),
                )
            slot["step"] += 1
            update = compute_muon_update(
                param.grad, slot["exp_avg"], group["momentum"], group["nesterov"], group["ns_steps"]
            )
            param.mul_(1 - lr * decay)  # decoupled weight decay, as AdamW applies it
            param.add_(update, alpha=-lr)
