"""Hugging Face `transformers` causal LMs as run models, under the same rules as the built-in GPT.

A run names its model by a transformers config dict (`HFModelConfig.hf_config`, hashed with the run
config), so every party builds the same architecture from the same pinned transformers release
(`ExecutionProfileConfig.transformers_version`). Three things keep that build a pure function of
(config, profile, seed), as `protocol.model.build_model` promises:

- construction never reads a file or the network: `AutoConfig.for_model` + `from_config`, never
  `from_pretrained`, and never remote code (`HFModelConfig` refuses `auto_map`);
- transformers initialises weights from the global RNG, so construction runs inside `fork_rng` (the
  caller's RNG is untouched) and every parameter is then overwritten from a private generator
  (`init_hf_`); θ0 from a real checkpoint is published as an artifact instead (run create --init-from);
- the execution profile picks the kernels: the eager attention path, and every `nn.LayerNorm`
  (GPT-2-style models) swapped for `ElementaryLayerNorm` (protocol/norms.py), whose backward does not depend on
  the thread count. RMSNorm (Llama, Qwen2) is already elementary ops in transformers. The fused choices
  ("sdpa", "fused") exist to emulate another profile in `gradledger calibrate`.

The wrapper registers the transformers model's children under their own names, so the run's state
keys are exactly the transformers state-dict names ("param/model.layers.0.self_attn.q_proj.weight")
and an exported checkpoint is a plain `save_pretrained` directory.
"""

from __future__ import annotations

import difflib
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from protocol.config import ExecutionProfileConfig, HFModelConfig
from protocol.errors import ConfigError
from protocol.hashing import Hash32
from protocol.norms import swap_norms_


def build_hf_config(config: HFModelConfig) -> Any:
    """The transformers config object of `config.hf_config` (no file, no download)."""
    from transformers import AutoConfig

    options = dict(config.hf_config)
    model_type = options.pop("model_type")
    options.pop("transformers_version", None)
    try:
        hf_config = AutoConfig.for_model(model_type, **options)
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"model.hf_config: transformers cannot build a {model_type!r} config ({exc}); use a model_type this "
            "transformers release knows (e.g. 'llama', 'qwen2', 'gpt2') and its config.json keys"
        ) from None
    verify_known_hf_keys(config.hf_config, set(hf_config.to_dict()), AutoConfig.for_model(model_type))
    hf_config.use_cache = False
    return hf_config


def verify_known_hf_keys(given: dict[str, Any], built_keys: set[str], default: Any) -> None:
    """Refuse a key of `hf_config` that the model's config class does not know, naming the nearest known one.

    transformers keeps any unknown keyword as a plain attribute, so a typo builds a different model without a word
    (issue 39: `num_hiden_layers: 3` built Llama's default 32 layers, and the run locked its pool in a model nobody
    could train). A key is unknown when it survives into the built config's dict but is not in the default config's
    dict of that model type; keys the class consumes or renames (a legacy `rope_theta`, gpt2's `hidden_size`) never
    survive, so they pass."""
    known = set(default.to_dict())
    unknown = sorted((built_keys - known) & set(given))
    if not unknown:
        return
    names = sorted(known | set(getattr(type(default), "attribute_map", {})))
    hints = []
    for key in unknown:
        near = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
        hints.append(f"{key!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    raise ConfigError(
        f"model.hf_config: unknown key(s) for a {given['model_type']!r} model: {', '.join(hints)}; transformers would "
        "ignore them and build its default instead. Fix or remove them (the keys are those of the model's config.json)"
    )


class HFCausalLM(nn.Module):
    """A transformers causal LM with the run model's calling convention: `forward(idx, targets) -> loss`.

    The loss is computed here from the logits (inputs and targets are already shifted by the batcher), so it is
    the same cross-entropy the built-in GPT uses, whatever the model's own loss function does.
    """

    def __init__(self, config: HFModelConfig, profile: ExecutionProfileConfig) -> None:
        super().__init__()
        from transformers import AutoModelForCausalLM

        self.config = config
        hf_config = build_hf_config(config)
        with torch.random.fork_rng(devices=[]):  # transformers' own init draws from the global RNG
            try:
                lm = AutoModelForCausalLM.from_config(
                    hf_config, attn_implementation=profile.attention, dtype=torch.float32
                )
            except ValueError as exc:
                raise ConfigError(
                    f"model.hf_config: {hf_config.model_type!r} has no causal-LM class in this transformers "
                    f"release ({exc}); use a decoder model such as 'llama', 'qwen2' or 'gpt2'"
                ) from None
        swap_norms_(lm, profile)
        self.__dict__["lm"] = lm  # not a registered child: its children are, under their own names
        for name, child in lm.named_children():
            self.add_module(name, child)

    @property
    def transformers_model(self) -> Any:
        """The underlying `PreTrainedModel` (sharing this module's parameters), e.g. to `save_pretrained`."""
        return self.__dict__["lm"]

    def train(self, mode: bool = True) -> HFCausalLM:
        super().train(mode)
        self.transformers_model.training = mode
        return self

    def get_logits(self, idx: torch.Tensor) -> torch.Tensor:
        """Next-token logits of shape (B, T, vocab)."""
        if self.config.block_size < idx.shape[1]:
            raise ConfigError(
                f"sequence of {idx.shape[1]} tokens exceeds the model's block_size {self.config.block_size}"
            )
        return self.transformers_model(input_ids=idx, use_cache=False).logits

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        B, T = idx.shape
        logits = self.get_logits(idx)
        return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


def init_hf_(model: HFCausalLM, seed: Hash32) -> None:
    """Seeded init from a private generator, in sorted parameter order: matrices and embeddings
    N(0, initializer_range), biases zero, other vectors (norm gains) one. Tied weights count once."""
    std = float(model.config.hf_config.get("initializer_range", 0.02))
    generator = torch.Generator().manual_seed(int.from_bytes(seed[:8], "little"))
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if param.dim() >= 2:
                param.normal_(0.0, std, generator=generator)
            elif name.endswith(".bias"):
                param.zero_()
            else:
                param.fill_(1.0)


def build_hf_model(config: HFModelConfig, profile: ExecutionProfileConfig, seed: Hash32) -> HFCausalLM:
    """The run's transformers model at its seeded θ0."""
    model = HFCausalLM(config, profile)
    init_hf_(model, seed)
    return model
