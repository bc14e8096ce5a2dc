"""The normalisation kernels an execution profile picks, shared by every run model.

Both model builders need them: the built-in GPT (protocol/model.py) makes its LayerNorms here, and the transformers
wrapper (protocol/hf_model.py) swaps a loaded model's norms for these. They live below both so neither model module
imports the other (the acyclic-siblings contract in .importlinter).

# INVARIANT: under the "elementary" profile every LayerNorm is `ElementaryLayerNorm`, whose backward is the same at any
CPU thread count (the fused `nn.LayerNorm` backward is not); the fused kernels exist only to emulate another profile
in benchmarks and `gradledger calibrate`, and a parameter keeps its name whichever kernel holds it.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from protocol.config import ExecutionProfileConfig
from protocol.errors import ConfigError


class ElementaryLayerNorm(nn.Module):
    """LayerNorm from mean/var/rsqrt: its backward is thread-count invariant."""

    def __init__(self, width: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.bias = nn.Parameter(torch.zeros(width))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        centered = x - mean
        var = (centered * centered).mean(dim=-1, keepdim=True)
        return centered * torch.rsqrt(var + self.eps) * self.weight + self.bias


class FusedRMSNorm(nn.Module):
    """RMSNorm through the fused `F.rms_norm` kernel: only for emulating another profile."""

    def __init__(self, weight: nn.Parameter, eps: float) -> None:
        super().__init__()
        self.weight = weight
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


def make_layer_norm(width: int, profile: ExecutionProfileConfig) -> nn.Module:
    """A fresh LayerNorm over `width` features with the profile's kernel (the built-in GPT's norms)."""
    if profile.layer_norm == "elementary":
        return ElementaryLayerNorm(width)
    return nn.LayerNorm(width)  # only for emulating another profile in benchmarks


def swap_norms_(module: nn.Module, profile: ExecutionProfileConfig) -> None:
    """Put the profile's normalisation kernels in place in a built model, keeping every parameter's name.

    Under "elementary", each `nn.LayerNorm` (GPT-2-style models) becomes an `ElementaryLayerNorm` sharing its
    parameters; RMSNorm (Llama, Qwen2) is already elementary ops in transformers and stays. Under "fused", each RMSNorm
    becomes a `FusedRMSNorm`."""
    for name, child in list(module.named_children()):
        if type(child) is nn.LayerNorm and profile.layer_norm == "elementary":
            if len(child.normalized_shape) != 1 or child.weight is None or child.bias is None:
                raise ConfigError(f"{name}: only LayerNorms over the last dimension with weight and bias are supported")
            swapped = ElementaryLayerNorm(child.normalized_shape[0], child.eps)
            swapped.weight, swapped.bias = child.weight, child.bias
            setattr(module, name, swapped)
        elif (
            profile.layer_norm == "fused"
            and type(child).__name__.endswith("RMSNorm")
            and isinstance(getattr(child, "weight", None), nn.Parameter)
        ):
            eps = getattr(child, "variance_epsilon", getattr(child, "eps", 1e-6))
            setattr(module, name, FusedRMSNorm(child.get_parameter("weight"), float(eps)))
        else:
            swap_norms_(child, profile)
