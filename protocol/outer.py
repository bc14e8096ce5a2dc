"""The DiLoCo outer step: Nesterov SGD on the aggregate of the accepted pseudo-gradients.

The global state of a run is θ_r's parameters ("param/...") and the outer momentum buffer
("outer/momentum/..."); its state hash is the θ hash that goes on-chain. Every honest party
computes θ_(r+1) from θ_r and the accepted Δs with `compute_outer_step` and gets the same
bits: the Δs are summed in a fixed order (sorted solver address) with elementwise float32
ops only.

Two run-config options change the aggregate (both off by default; SparseLoCo's recipe, issue 40):
- `train.clip_to_median_norm`: each Δ is scaled down to the median L2 norm of the round's Δs. The norm is
  exact on every machine: the squares of float32 values are exact in float64 and `math.fsum` rounds their
  sum once, so no summation order or SIMD width can change it; the median is a picked norm (the lower
  middle), and the scale is one correctly rounded float64 division cast to float32.
- `train.aggregate = "senders"`: each value is averaged over the solvers whose Δ is non-zero there (a sparse
  codec's kept values), not over all M, so a value one solver kept moves as far as a value all kept. The
  count per value is an exact small integer in float32.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import torch
from eth_utils import is_address, to_canonical_address

from protocol.config import RunConfig, TrainConfig
from protocol.errors import GradledgerError
from protocol.model import build_model
from protocol.training import PARAM, State, get_param_state, get_params

MOMENTUM = "outer/momentum/"


class OuterStepError(GradledgerError):
    """The outer step's inputs do not fit together (shapes, names, solvers)."""


def make_global_state(params: Mapping[str, torch.Tensor]) -> State:
    """A global state from parameters ("param/..."): the parameters with a zero outer momentum buffer."""
    return {**params, **{MOMENTUM + k.removeprefix(PARAM): torch.zeros_like(v) for k, v in params.items()}}


def get_initial_global_state(config: RunConfig) -> State:
    """θ0 of a seeded run (the model built from the config) with a zero outer momentum buffer."""
    return make_global_state(get_param_state(build_model(config.model, config.profile, config.seed_bytes)))


def _solver_key(solver: str) -> bytes:
    if not isinstance(solver, str) or not is_address(solver):
        raise OuterStepError(f"pseudo-gradients must be keyed by solver address, got {solver!r}")
    return to_canonical_address(solver)


def _get_ordered_deltas(deltas: Mapping[str, Mapping[str, torch.Tensor]]) -> list[Mapping[str, torch.Tensor]]:
    """The Δs in sorted-solver-address order, refused unless they cover the same tensors with the same shapes."""
    if not deltas:
        raise OuterStepError("no accepted pseudo-gradients to average")
    ordered = [deltas[s] for s in sorted(deltas, key=_solver_key)]
    names = set(ordered[0])
    for delta in ordered[1:]:
        if set(delta) != names:
            raise OuterStepError("pseudo-gradients cover different tensors; all must come from the run's model")
        for name in names:
            if delta[name].shape != ordered[0][name].shape:
                raise OuterStepError(f"pseudo-gradient {name!r} has mismatched shapes across solvers")
    return ordered


def compute_exact_norm(delta: Mapping[str, torch.Tensor]) -> float:
    """The L2 norm of a Δ over all its tensors, the same float on every machine (module docstring)."""
    squares = []
    for name in sorted(delta):
        values = delta[name].detach().to("cpu", torch.float32).reshape(-1).numpy().astype(np.float64)
        squares.append(values * values)  # INVARIANT: exact, a float32 square has at most 48 significant bits
    return math.sqrt(math.fsum(np.concatenate(squares).tolist())) if squares else 0.0


def get_median_clip_scales(ordered: list[Mapping[str, torch.Tensor]]) -> list[float]:
    """Per Δ (in order), the float32 factor min(1, median norm / its norm): the lower middle of the sorted norms."""
    norms = [compute_exact_norm(delta) for delta in ordered]
    median = sorted(norms)[(len(norms) - 1) // 2]
    return [float(np.float32(median / norm)) if norm > median else 1.0 for norm in norms]


def compute_mean_pseudo_gradient(
    deltas: Mapping[str, Mapping[str, torch.Tensor]], train: TrainConfig | None = None
) -> State:
    """The aggregate Δ: the mean (or, `train.aggregate == "senders"`, the mean over the solvers that sent each value)
    of the Δs, each first clipped to the median norm when `train.clip_to_median_norm`; summed in sorted-solver-address
    order (bit-identical for everyone). Without `train`: the plain mean."""
    ordered = _get_ordered_deltas(deltas)
    if train is not None and train.clip_to_median_norm and len(ordered) > 1:
        scales = get_median_clip_scales(ordered)
        ordered = [
            delta if scale == 1.0 else {k: v * torch.tensor(scale, dtype=torch.float32) for k, v in delta.items()}
            for delta, scale in zip(ordered, scales, strict=True)
        ]
    over_senders = train is not None and train.aggregate == "senders"
    mean = {}
    for name in sorted(ordered[0]):
        total = ordered[0][name].clone()
        for delta in ordered[1:]:
            total += delta[name]
        if over_senders:
            senders = torch.zeros_like(total)
            for delta in ordered:
                senders += (delta[name] != 0).to(total.dtype)
            mean[name] = total / senders.clamp_(min=1.0)
        else:
            mean[name] = total / len(ordered)
    return mean


def compute_outer_step(
    global_state: Mapping[str, torch.Tensor],
    deltas: Mapping[str, Mapping[str, torch.Tensor]],
    train: TrainConfig,
) -> State:
    """θ_(r+1): Nesterov SGD with the aggregate Δ (`compute_mean_pseudo_gradient`) as gradient. No accepted Δ leaves
    θ unchanged."""
    if not deltas:
        return {k: v.clone() for k, v in global_state.items()}
    g = compute_mean_pseudo_gradient(deltas, train)
    params = get_params(global_state)
    if set(g) != set(params):
        raise OuterStepError("pseudo-gradients do not match the global state's parameters")
    lr, mu = train.outer_lr, train.outer_momentum
    new_state: State = {}
    for name, theta in params.items():
        momentum = mu * global_state[MOMENTUM + name.removeprefix(PARAM)] + g[name]
        new_state[name] = theta - lr * (g[name] + mu * momentum)
        new_state[MOMENTUM + name.removeprefix(PARAM)] = momentum
    return new_state
