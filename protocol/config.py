"""The run configuration: everything a verifier must agree on to replay a solver's work.

Layers, lowest precedence first: constants (field defaults here) < presets (`PRESETS`, with a
tiny one for tests) < a deployment's own overrides (loaded by protocol/adapters). A run's
config is frozen and hashed (`compute_config_hash`, SHA-256 of canonical JSON) and that hash
goes on-chain at run creation, so every party trains and replays under the same settings.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from protocol.errors import ConfigError
from protocol.execution_pins import CURRENT_PROFILE, ProfileName
from protocol.hashing import Hash32, compute_content_hash, hash_to_hex, keccak256, to_hash32
from protocol.sketch import SketchSpec
from protocol.types import RunTerms


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelConfig(_Frozen):
    """The built-in byte-level GPT (protocol/model.py); construction from this config is deterministic."""

    architecture: Literal["gpt"] = "gpt"
    vocab_size: int = Field(256, ge=2, le=65536, description="byte-level: 256")
    block_size: int = Field(64, ge=2, le=4096, description="context length in tokens")
    n_layer: int = Field(4, ge=1, le=64)
    n_head: int = Field(4, ge=1, le=64)
    n_embd: int = Field(128, ge=8, le=8192)

    @model_validator(mode="after")
    def _heads_divide_width(self) -> ModelConfig:
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")
        return self


# Keys of a transformers config that would make construction depend on something outside the run config:
# remote code, a checkpoint path, or a dtype / attention kernel other than the execution profile's.
_HF_FORBIDDEN_KEYS = frozenset(
    {
        "auto_map",
        "trust_remote_code",
        "_name_or_path",
        "torch_dtype",
        "dtype",
        "attn_implementation",
        "quantization_config",
    }
)


class HFModelConfig(_Frozen):
    """A Hugging Face `transformers` causal LM, pinned by its config dict (protocol/hf_model.py).

    The dict is what `AutoConfig.for_model(**hf_config)` takes (`model_type` plus sizes, e.g. a Llama-, Qwen2- or
    GPT-2-style config.json); it is part of the hashed run config, so the architecture is pinned on-chain. The
    attention kernel and dtype are not the dict's to choose: they belong to the execution profile.
    """

    architecture: Literal["hf"] = "hf"
    block_size: int = Field(64, ge=2, le=1 << 20, description="context length in tokens the run trains at")
    hf_config: dict[str, Any] = Field(description="transformers config dict: model_type, vocab_size, sizes, ...")

    @field_validator("hf_config")
    @classmethod
    def _pinned_config(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("model_type"), str) or not value["model_type"]:
            raise ValueError("needs 'model_type' (e.g. 'llama', 'qwen2', 'gpt2'), as in a config.json")
        vocab = value.get("vocab_size")
        if not isinstance(vocab, int) or isinstance(vocab, bool) or not 2 <= vocab <= 1 << 20:
            raise ValueError(f"needs an integer 'vocab_size' between 2 and {1 << 20}, got {vocab!r}")
        forbidden = sorted(_HF_FORBIDDEN_KEYS & set(value))
        if forbidden:
            raise ValueError(
                f"must not set {forbidden}: remote code and checkpoint paths are never loaded, and dtype and the "
                "attention kernel come from the run's execution profile; remove them"
            )
        return value

    @property
    def vocab_size(self) -> int:
        return int(self.hf_config["vocab_size"])

    @model_validator(mode="after")
    def _context_fits(self) -> HFModelConfig:
        for key in ("max_position_embeddings", "n_positions"):
            limit = self.hf_config.get(key)
            if isinstance(limit, int) and limit < self.block_size:
                raise ValueError(f"block_size {self.block_size} exceeds the model's {key} ({limit})")
        return self


def _architecture_of(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("architecture", "gpt"))
    return str(getattr(value, "architecture", "gpt"))


AnyModelConfig = Annotated[
    Annotated[ModelConfig, Tag("gpt")] | Annotated[HFModelConfig, Tag("hf")], Discriminator(_architecture_of)
]


_MUON_KEYS = ("muon_lr", "muon_momentum", "muon_nesterov", "muon_ns_steps")


class TrainConfig(_Frozen):
    """Inner steps (AdamW, or Muon on the hidden matrices) and the DiLoCo outer step."""

    batch_size: int = Field(16, ge=1, le=4096, description="sequences per inner step")
    micro_batches: int = Field(
        1, ge=1, le=4096, description="M: each step's batch as M canonical micro-batches (docs/training.md)"
    )
    inner_steps: int = Field(25, ge=1, le=100_000, description="H: inner steps per round")
    steps_per_segment: int = Field(5, ge=1, description="k: inner steps between checkpoints")
    inner_lr: float = Field(1e-3, gt=0, le=1, description="bench/diloco.py: 1e-3 beat 3e-3 for DiLoCo")
    warmup_steps: int = Field(50, ge=0, description="linear inner-lr warmup over global steps")
    round_warmup_steps: int = Field(
        0, ge=0, description="linear inner-lr ramp over each round's first steps (5 helps fresh-moment rounds)"
    )
    weight_decay: float = Field(0.1, ge=0, le=1)
    beta1: float = Field(0.9, ge=0, lt=1)
    beta2: float = Field(0.95, ge=0, lt=1)
    adam_eps: float = Field(1e-8, gt=0)
    inner_optimizer: Literal["adamw", "muon"] = Field(
        "adamw",
        description="'adamw': every parameter; 'muon': Muon (momentum, Newton-Schulz orthogonalised) on the "
        "transformer blocks' 2-D weight matrices, AdamW on embeddings, the output head and vectors "
        "(protocol/muon.py, docs/training.md 'Muon inner steps')",
    )
    muon_lr: float = Field(0.02, gt=0, le=1, description="Muon's learning rate, under inner_lr's warmups")
    muon_momentum: float = Field(0.95, ge=0, lt=1, description="Muon's momentum (an EMA, stored as exp_avg)")
    muon_nesterov: bool = Field(True, description="Muon orthogonalises the Nesterov look-ahead of the momentum")
    muon_ns_steps: int = Field(5, ge=1, le=20, description="Newton-Schulz iterations of the quintic orthogonaliser")
    carry_moments: bool = Field(
        True,
        description="each solver starts a round from the AdamW moments its previous accepted round ended with, not "
        "fresh ones (docs/training.md: 2.24% -> 0.08% above synchronous at M=4, H=25 with round_warmup_steps=0; "
        "the default since 2026-11-26)",
    )
    outer_lr: float = Field(0.7, gt=0, le=10)
    outer_momentum: float = Field(0.8, ge=0, lt=1, description="paper: 0.9; 0.8 measured better at M=4")
    aggregate: Literal["mean", "senders"] = Field(
        "mean",
        description="outer step's average of each value: over all accepted solvers ('mean') or over the solvers whose "
        "Δ is non-zero there ('senders': a sparse codec's kept values move as far as dense ones; protocol/outer.py)",
    )
    clip_to_median_norm: bool = Field(
        False, description="scale each accepted Δ down to the round's median L2 norm before the average (exact norms)"
    )
    codec: str = Field(
        "none",
        description="pseudo-gradient codec (protocol/compression.py label, e.g. 'int8-b256-top50%') with verified "
        "error feedback (protocol/payload.py, docs/compression.md); 'none' exchanges float32 Δ states",
    )

    @field_validator("codec")
    @classmethod
    def _known_codec(cls, value: str) -> str:
        if value == "none":
            return value
        from protocol.compression import CompressionError, parse_codec  # torch-heavy: only when a run names one

        try:
            parse_codec(value)
        except CompressionError as exc:
            raise ValueError(f"{exc}; or 'none' for no codec") from None
        return value

    @model_validator(mode="after")
    def _muon_settings_need_muon(self) -> TrainConfig:
        changed = [key for key in _MUON_KEYS if getattr(self, key) != type(self).model_fields[key].default]
        if self.inner_optimizer != "muon" and changed:
            raise ValueError(
                f"{', '.join(changed)} set, but inner_optimizer is {self.inner_optimizer!r}: set "
                "inner_optimizer to 'muon' or leave the Muon settings at their defaults"
            )
        return self

    @model_validator(mode="after")
    def _segments_tile_the_round(self) -> TrainConfig:
        if self.inner_steps % self.steps_per_segment:
            raise ValueError(
                f"inner_steps H ({self.inner_steps}) must be a multiple of steps_per_segment k "
                f"({self.steps_per_segment}) so the segments tile the round"
            )
        if self.batch_size % self.micro_batches:
            raise ValueError(
                f"batch_size ({self.batch_size}) must be a multiple of micro_batches M ({self.micro_batches}) so "
                "every micro-batch holds the same number of sequences"
            )
        return self

    @property
    def num_segments(self) -> int:
        return self.inner_steps // self.steps_per_segment


class SketchConfig(_Frozen):
    """Sizes of the update sketch; its projection seed derives from the run seed."""

    buckets: int = 4096
    bits: int = 1024
    fold: int = 16
    row_batches: int = 4
    norm_scale: int = 256


class ExecutionProfileConfig(_Frozen):
    """The pinned execution profile honest replays are bit-identical under (protocol/profile.py, docs/determinism.md).

    Every node checks it before it trains or replays (`protocol.profile.explain_profile_mismatch`). The kernel
    switches (`layer_norm`, `attention`) exist so benchmarks and `gradledger calibrate` can emulate another
    profile; a run pins the thread-invariant choices ("elementary", "eager")."""

    name: ProfileName = Field(
        CURRENT_PROFILE,
        description="which pins and golden hashes (protocol/execution_pins.py, protocol/goldens.py); runs created "
        "before the pins keep cpu-fp32-elementary-v1, which no node judges exactly",
    )
    torch_version: str = "2.13.0"
    transformers_version: str | None = Field(
        None, description="pinned for Hugging Face models (set by build_run_config), None for the built-in GPT"
    )
    dtype: Literal["float32"] = "float32"
    layer_norm: Literal["elementary", "fused"] = Field(
        "elementary", description="LayerNorm/RMSNorm from elementary ops (thread-invariant) or the fused kernel"
    )
    attention: Literal["eager", "sdpa"] = Field(
        "eager", description="attention spelled out (matmul, mask, softmax) or the fused SDPA kernel"
    )
    deterministic_algorithms: bool = Field(True, description="torch.use_deterministic_algorithms while training")


class ReplayThresholds(_Frozen):
    """Tolerances for replays under another profile: `gradledger calibrate` measures and chooses them for a model
    (docs/calibration.md); `run create --thresholds FILE` puts its choice in the run config."""

    max_hamming_fraction: float = Field(0.15, ge=0, le=1, description="worst tensor, sketch")
    max_log2_norm_diff: float = Field(0.25, ge=0, description="worst tensor, sketch")
    max_relative_error: float = Field(0.3, ge=0, description="worst tensor, exact updates")
    min_cosine: float = Field(0.95, ge=-1, le=1, description="worst tensor, exact updates")
    max_global_relative_error: float = Field(0.003, ge=0, description="whole update, exact updates")


class DataConfig(_Frozen):
    """Which content-addressed dataset the run trains on, and its held-out split."""

    dataset_root: str = Field(description="0x-hex SHA-256 root of the shard list (protocol/data.py)")
    eval_shards: int = Field(1, ge=1, description="the last N shards are held out for evaluation")
    eval_batches: int = Field(8, ge=1, le=10_000)

    @field_validator("dataset_root")
    @classmethod
    def _hex32(cls, value: str) -> str:
        return hash_to_hex(to_hash32(value, "dataset_root"))


class RunConfig(_Frozen):
    """Everything that defines a run; hashed into the on-chain config hash."""

    version: Literal[1] = 1
    run_seed: str = Field(description="0x-hex 32-byte seed: init, batches, sketch projection")
    model: AnyModelConfig = ModelConfig()
    train: TrainConfig = TrainConfig()
    sketch: SketchConfig = SketchConfig()
    profile: ExecutionProfileConfig = ExecutionProfileConfig()
    thresholds: ReplayThresholds = ReplayThresholds()
    data: DataConfig

    @field_validator("run_seed")
    @classmethod
    def _seed_hex32(cls, value: str) -> str:
        return hash_to_hex(to_hash32(value, "run_seed"))

    @model_validator(mode="after")
    def _hf_pins_transformers(self) -> RunConfig:
        if isinstance(self.model, HFModelConfig) and not self.profile.transformers_version:
            raise ValueError(
                "a Hugging Face model needs profile.transformers_version: the transformers release whose code "
                "builds it is part of the execution profile (build_run_config fills in the installed one)"
            )
        return self

    @property
    def seed_bytes(self) -> Hash32:
        return to_hash32(self.run_seed, "run_seed")

    def get_sketch_spec(self) -> SketchSpec:
        """The sketch spec, with a projection seed domain-separated from the run seed."""
        return SketchSpec(
            seed=keccak256(b"gradledger/sketch-projection" + self.seed_bytes),
            buckets=self.sketch.buckets,
            bits=self.sketch.bits,
            fold=self.sketch.fold,
            row_batches=self.sketch.row_batches,
            norm_scale=self.sketch.norm_scale,
        )


TRAIN_KEYS_LEFT_OUT_AT_DEFAULT: dict[str, Any] = {
    key: TrainConfig.model_fields[key].default
    for key in ("codec", "aggregate", "clip_to_median_norm", "inner_optimizer", *_MUON_KEYS)
}
"""Train options added after runs existed: left out of the canonical bytes at the default (as before they existed)."""


def encode_config(config: RunConfig) -> bytes:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 (the bytes that are hashed).

    # INVARIANT: a train option of TRAIN_KEYS_LEFT_OUT_AT_DEFAULT at its "as before" value is left out, so runs
    created earlier keep verifying against their on-chain config hash."""
    body = config.model_dump(mode="json")
    for key, default in TRAIN_KEYS_LEFT_OUT_AT_DEFAULT.items():
        if key in body["train"] and body["train"][key] == default:
            del body["train"][key]
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def compute_config_hash(config: RunConfig) -> Hash32:
    """SHA-256 of the canonical config JSON; posted on-chain when the run is created."""
    return compute_content_hash(encode_config(config))


PRESETS: dict[str, dict[str, Any]] = {
    # Seconds per test: 2 layers, width 32, context 32 (~30k parameters).
    "tiny": {
        "model": {"block_size": 32, "n_layer": 2, "n_head": 2, "n_embd": 32},
        "train": {"batch_size": 4, "inner_steps": 6, "steps_per_segment": 2, "warmup_steps": 0},
        "data": {"eval_batches": 2},
    },
    # The default task: ~0.8M parameters, a 25-step round in seconds on one CPU thread.
    "default": {},
    # ~10x the default, for overhead measurements.
    "large": {"model": {"n_layer": 6, "n_head": 8, "n_embd": 336}},
}


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = (
            _merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
        )
    return merged


def build_run_config(
    *,
    preset: str = "default",
    run_seed: str,
    dataset_root: str,
    overrides: dict[str, Any] | None = None,
    model: dict[str, Any] | None = None,
) -> RunConfig:
    """constants < preset < overrides, validated; a clear ConfigError on anything wrong.

    `model` (e.g. read from `--model-config FILE`, see `parse_model_config`) replaces the preset's model section
    as a whole; a Hugging Face model gets the installed transformers release pinned in its profile."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
    layered = _merge(PRESETS[preset], {"run_seed": run_seed, "data": {"dataset_root": dataset_root}})
    if model is not None:
        layered["model"] = model
        if _architecture_of(model) == "hf":
            import transformers  # the release that builds the model is part of the profile

            layered = _merge(layered, {"profile": {"transformers_version": transformers.__version__}})
    layered = _merge(layered, overrides or {})
    return parse_run_config(layered)


def parse_model_config(data: dict[str, Any], where: str = "the model config") -> dict[str, Any]:
    """A `--model-config` file's content as the run config's model section.

    Accepted: a model section (`{"architecture": "gpt", ...}` or `{"architecture": "hf", "block_size": 64,
    "hf_config": {...}}`), or a bare transformers config.json (it has `model_type`), which becomes an "hf" section
    training at min(128, max_position_embeddings) tokens of context. Validated here, so a bad file is named
    before anything else happens."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a JSON object, got {type(data).__name__}")
    if "architecture" not in data and "model_type" in data:
        limit = data.get("max_position_embeddings") or data.get("n_positions") or 128
        data = {"architecture": "hf", "block_size": min(128, int(limit)), "hf_config": data}
    try:
        if _architecture_of(data) == "hf":
            HFModelConfig.model_validate(data)
        else:
            ModelConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'model'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid model config in {where}: {problems}") from None
    return data


def parse_run_config(data: dict[str, Any] | str | bytes) -> RunConfig:
    """Validate a config given as a dict or JSON text; errors name the offending field, and an unknown key the
    nearest valid name at its place."""
    try:
        if isinstance(data, (str, bytes)):
            return RunConfig.model_validate_json(data)
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_describe_error(err) for err in exc.errors())
        raise ConfigError(f"invalid run config: {problems}") from None


_MODEL_TAGS: dict[str, type[BaseModel]] = {"gpt": ModelConfig, "hf": HFModelConfig}
"""The tags pydantic puts in an error's location under `model` (the discriminated union's member)."""


def get_config_field_names(path: tuple[str | int, ...]) -> list[str]:
    """The valid keys of the config section at `path` (e.g. ("train",), ("model", "gpt")); [] when it is not one."""
    cls: type[BaseModel] | None = RunConfig
    for part in path:
        if cls is None and part in _MODEL_TAGS:
            cls = _MODEL_TAGS[str(part)]
            continue
        field = cls.model_fields.get(str(part)) if cls is not None else None
        if field is None:
            return []
        annotation = field.annotation
        cls = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return list(cls.model_fields) if cls is not None else []


def _describe_error(err: Any) -> str:
    where = ".".join(str(p) for p in err["loc"]) or "config"
    if err["type"] != "extra_forbidden":
        return f"{where}: {err['msg']}"
    names = get_config_field_names(err["loc"][:-1])
    near = difflib.get_close_matches(str(err["loc"][-1]), names, n=1, cutoff=0.6)
    if near:
        return f"{where}: unknown key (did you mean {near[0]!r}?)"
    return f"{where}: unknown key" + (f" (valid keys here: {', '.join(names)})" if names else "")


def parse_config_assignments(assignments: Sequence[str]) -> dict[str, Any]:
    """`--set SECTION.KEY=VALUE` options as nested config overrides (e.g. train.lr=3e-4 -> {"train": {"lr": 0.0003}}).

    VALUE is read as JSON when it parses (numbers, true/false, lists, quoted strings), else taken as a string. The
    result is checked where every config is: `build_run_config`, which refuses unknown keys naming the nearest."""
    out: dict[str, Any] = {}
    for text in assignments:
        key, sep, raw = text.partition("=")
        path = key.strip().split(".")
        if not sep or not all(path):
            raise ConfigError(f"--set {text!r}: write it as SECTION.KEY=VALUE, e.g. --set train.lr=0.0003")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        node = out
        for depth, part in enumerate(path[:-1]):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {text!r}: {'.'.join(path[: depth + 1])} was already set to a value")
        if isinstance(node.get(path[-1]), dict) or path[-1] in node:
            raise ConfigError(f"--set {text!r}: {key.strip()} is set twice (or also as a section)")
        node[path[-1]] = value
    return out


def verify_run_terms(config: RunConfig, terms: RunTerms) -> str | None:
    """Why the published config does not fit the run's on-chain terms, or None when it does.

    The chain mirrors four things of the config: its hash, the dataset root, H and k. A node that
    trained under a config whose H or k differ from the terms would commit a number of segments the
    contracts reject (or sample segments that do not exist), so every node and the auditor check all
    four before anything else (protocol.adapters.runs.load_run_context, auditor/audit.py).
    """
    if compute_config_hash(config) != terms.config_hash:
        return "the config artifact does not hash to the on-chain config hash"
    if to_hash32(config.data.dataset_root, "dataset_root") != terms.dataset_root:
        return f"the config names dataset {config.data.dataset_root}, the chain has {hash_to_hex(terms.dataset_root)}"
    train = config.train
    if (train.inner_steps, train.steps_per_segment) != (terms.inner_steps, terms.steps_per_segment):
        return (
            f"the config trains H={train.inner_steps}, k={train.steps_per_segment}; the run was created with "
            f"H={terms.inner_steps}, k={terms.steps_per_segment}"
        )
    return None
