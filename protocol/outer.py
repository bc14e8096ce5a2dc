"""The DiLoCo outer step: Nesterov SGD on the mean of the accepted pseudo-gradients.

The global state of a run is θ_r's parameters ("param/...") and the outer momentum buffer
("outer/momentum/..."); its state hash is the θ hash that goes on-chain. Every honest party
computes θ_(r+1) from θ_r and the accepted Δs with `compute_outer_step` and gets the same
bits: the Δs are summed in a fixed order (sorted solver address) with elementwise float32
ops only.
"""

from __future__ import annotations

from collections.abc import Mapping

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


def compute_mean_pseudo_gradient(deltas: Mapping[str, Mapping[str, torch.Tensor]]) -> State:
    """Mean of the Δs, summed in sorted-solver-address order (bit-identical for everyone)."""
    if not deltas:
        raise OuterStepError("no accepted pseudo-gradients to average")
    ordered = [deltas[s] for s in sorted(deltas, key=_solver_key)]
    names = set(ordered[0])
    for delta in ordered[1:]:
        if set(delta) != names:
            raise OuterStepError("pseudo-gradients cover different tensors; all must come from the run's model")
    mean = {}
    for name in sorted(names):
        total = ordered[0][name].clone()
        for delta in ordered[1:]:
            if delta[name].shape != total.shape:
                raise OuterStepError(f"pseudo-gradient {name!r} has mismatched shapes across solvers")
            total += delta[name]
        mean[name] = total / len(ordered)
    return mean


def compute_outer_step(
    global_state: Mapping[str, torch.Tensor],
    deltas: Mapping[str, Mapping[str, torch.Tensor]],
    train: TrainConfig,
) -> State:
    """θ_(r+1): Nesterov SGD with the mean Δ as gradient. No accepted Δ leaves θ unchanged."""
    if not deltas:
        return {k: v.clone() for k, v in global_state.items()}
    g = compute_mean_pseudo_gradient(deltas)
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
