"""Model parameters and optimizer state as flat, hashable checkpoints: the state half of the one training step.

A checkpoint is one flat mapping of tensors: "param/<name>" for parameters, "adam/<name>/exp_avg",
"adam/<name>/exp_avg_sq" and "adam/step" for the inner optimizer (AdamW; a Muon run keeps the same names,
protocol/muon.py). Every party stores, hashes, loads and compares these mappings, so they are built and read here
only: a checkpoint loaded into the run's model and optimizer and read back is the same tensors
(`load_checkpoint_state`, `get_checkpoint_state`), and one that does not fit the run's model is refused by name
(CheckpointError), never half-loaded.

Each round starts from θ_r's parameters plus a fresh optimizer (zero moments, step 0), or the moments it carries
(`make_start_checkpoint`), so c_0 is a pure function of what the round was given (docs/training.md). The steps that
advance a checkpoint are protocol/inner_step.py's; the round and segment drivers are protocol/training.py's.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from protocol.config import RunConfig, TrainConfig
from protocol.errors import GradledgerError
from protocol.model import build_model
from protocol.muon import MuonWithAdamW, get_muon_parameter_names

PARAM = "param/"
ADAM = "adam/"
ADAM_STEP = "adam/step"

State = dict[str, torch.Tensor]


class CheckpointError(GradledgerError):
    """A checkpoint does not fit the run's model (other model, missing or extra tensors)."""


def build_optimizer(model: nn.Module, train: TrainConfig) -> torch.optim.Optimizer:
    """The run's inner optimizer (`train.inner_optimizer`). "adamw": AdamW with decay on matrices only (nanoGPT);
    foreach/fused off: one pinned kernel path. "muon": Muon on the hidden matrices (protocol/muon.py, decay
    `weight_decay`), that same AdamW on every other parameter."""
    muon = set(get_muon_parameter_names(model)) if train.inner_optimizer == "muon" else set()
    params = sorted(model.named_parameters())
    decay = [p for name, p in params if p.dim() >= 2 and name not in muon]
    no_decay = [p for _, p in params if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": train.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    adamw = torch.optim.AdamW(
        groups,
        lr=train.inner_lr,
        betas=(train.beta1, train.beta2),
        eps=train.adam_eps,
        foreach=False,
        fused=False,
    )
    if train.inner_optimizer != "muon":
        return adamw
    return MuonWithAdamW(
        [p for name, p in params if name in muon],
        adamw,
        lr=train.muon_lr,
        momentum=train.muon_momentum,
        nesterov=train.muon_nesterov,
        ns_steps=train.muon_ns_steps,
        weight_decay=train.weight_decay,
    )


def get_param_state(model: nn.Module) -> State:
    """The parameters as a state: {"param/<name>": tensor} (copies)."""
    return {PARAM + name: p.detach().clone() for name, p in model.named_parameters()}


def get_fresh_optimizer_state(params: Mapping[str, torch.Tensor]) -> State:
    """Optimizer state before its first step: zero moments, step 0 (what AdamW itself creates, and Muon: a zero
    momentum as "exp_avg" and zeros as "exp_avg_sq", protocol/muon.py)."""
    state: State = {ADAM_STEP: torch.tensor(0.0)}
    for key, value in params.items():
        name = key.removeprefix(PARAM)
        state[f"{ADAM}{name}/exp_avg"] = torch.zeros_like(value)
        state[f"{ADAM}{name}/exp_avg_sq"] = torch.zeros_like(value)
    return state


def make_start_checkpoint(
    params: Mapping[str, torch.Tensor], moments: Mapping[str, torch.Tensor] | None = None
) -> State:
    """c_0 of a round: θ_r's parameters plus a fresh optimizer state, or plus `moments`, the optimizer state a solver
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
    """The optimizer part of a checkpoint (both moments of every parameter and the step): what a round carries over."""
    return {k: v for k, v in checkpoint.items() if k.startswith(ADAM)}


def get_checkpoint_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> State:
    """Parameters and optimizer state as one flat state (copies), ready to hash or store. A Muon run's state has the
    same entries (its momentum as "exp_avg", protocol/muon.py)."""
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


def load_checkpoint_state(
    model: nn.Module, optimizer: torch.optim.Optimizer, state: Mapping[str, torch.Tensor]
) -> None:
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


def build_trainer(
    config: RunConfig, checkpoint: Mapping[str, torch.Tensor], device: torch.device | str = "cpu"
) -> tuple[nn.Module, torch.optim.Optimizer]:
    """The run's model and inner optimizer, loaded from a checkpoint (parameters and optimizer state). `device` other
    than the CPU is for measuring a GPU profile (bench/profile_check.py); every role trains and replays on the CPU."""
    model = build_model(config.model, config.profile, config.seed_bytes).to(device)
    optimizer = build_optimizer(model, config.train)
    load_checkpoint_state(model, optimizer, checkpoint)
    return model, optimizer


def compute_param_update(before: Mapping[str, torch.Tensor], after: Mapping[str, torch.Tensor]) -> State:
    """after - before over the parameters only (the update a segment sketch describes)."""
    return {k: after[k] - v for k, v in get_params(before).items()}


def compute_pseudo_gradient(
    theta_params: Mapping[str, torch.Tensor], end_checkpoint: Mapping[str, torch.Tensor]
) -> State:
    """Δ = θ_r - c_H over the parameters: what a solver contributes to the outer step."""
    return {k: v - end_checkpoint[k] for k, v in get_params(theta_params).items()}
