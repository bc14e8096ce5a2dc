"""A small byte-level GPT, built only from ops that are bit-identical at any thread count.

Reads like nanoGPT. Two deliberate differences, both for exact replay (protocol/profile.py):
LayerNorm is written from elementary ops (the fused `nn.LayerNorm` backward is the one op of
this model whose result depends on the CPU thread count), and attention is spelled out
(matmul, mask, softmax) instead of a fused kernel whose algorithm may vary by build.

Construction is a pure function of (ModelConfig, seed): every parameter is initialised from a
private `torch.Generator`, never the global RNG. Any `torch.nn.Module` with the same calling
convention (`forward(idx, targets) -> loss`) can take the GPT's place through `build_model`; Hugging
Face causal LMs do (protocol/hf_model.py). The profile's norm kernels live in protocol/norms.py, below both models.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from protocol.config import ExecutionProfileConfig, HFModelConfig, ModelConfig
from protocol.errors import ConfigError
from protocol.hashing import Hash32
from protocol.norms import make_layer_norm


class CausalSelfAttention(nn.Module):
    mask: torch.Tensor  # the causal mask, a non-persistent buffer

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        mask = torch.tril(torch.ones(config.block_size, config.block_size, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, config.block_size, config.block_size), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config: ModelConfig, profile: ExecutionProfileConfig) -> None:
        super().__init__()
        self.ln_1 = make_layer_norm(config.n_embd, profile)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = make_layer_norm(config.n_embd, profile)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Token + position embeddings, n_layer blocks, final LayerNorm, tied output head."""

    def __init__(self, config: ModelConfig, profile: ExecutionProfileConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.h = nn.ModuleList(Block(config, profile) for _ in range(config.n_layer))
        self.ln_f = make_layer_norm(config.n_embd, profile)

    def get_logits(self, idx: torch.Tensor) -> torch.Tensor:
        """Next-token logits of shape (B, T, vocab)."""
        _, T = idx.shape
        if self.config.block_size < T:
            raise ConfigError(f"sequence of {T} tokens exceeds the model's block_size {self.config.block_size}")
        pos = torch.arange(T, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        B, T = idx.shape
        logits = self.get_logits(idx)
        return F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))


def init_gpt_(model: GPT, seed: Hash32) -> None:
    """nanoGPT's init from a private generator: N(0, 0.02), residual projections scaled
    by 1/sqrt(2 n_layer), biases zero, LayerNorm weights one."""
    generator = torch.Generator().manual_seed(int.from_bytes(seed[:8], "little"))
    residual_std = 0.02 / math.sqrt(2 * model.config.n_layer)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if name.endswith("c_proj.weight"):
                param.normal_(0.0, residual_std, generator=generator)
            elif name.endswith(".weight") and param.dim() == 2:
                param.normal_(0.0, 0.02, generator=generator)
            elif name.endswith(".bias"):
                param.zero_()
            else:  # LayerNorm weights
                param.fill_(1.0)


def build_model(config: ModelConfig | HFModelConfig, profile: ExecutionProfileConfig, seed: Hash32) -> nn.Module:
    """The run's model at its seeded θ0: a pure function of the config, the profile's kernels and the init seed.

    The built-in GPT, or a transformers causal LM (protocol/hf_model.py, imported only when a run uses one)."""
    if isinstance(config, HFModelConfig):
        from protocol.hf_model import build_hf_model

        return build_hf_model(config, profile, seed)
    if config.architecture != "gpt":
        raise ConfigError(f"unknown model architecture {config.architecture!r}; this build knows 'gpt' and 'hf'")
    model = GPT(config, profile)
    init_gpt_(model, seed)
    return model


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
