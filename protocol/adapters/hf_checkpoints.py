"""Local Hugging Face model directories in and out: θ0 from a checkpoint, a settled θ as a model directory.

Reading (`load_hf_checkpoint`) takes `config.json` and `model.safetensors` (or a sharded
`model.safetensors.index.json`) of a local directory and returns the run config's model section and the
parameters under the run model's own names ("param/<name>", exactly `build_model(...).named_parameters()`). Only
safetensors are read, never a pickle (`pytorch_model.bin`, `torch.load`): a checkpoint from someone else must not
be able to run code on the machine that loads it. Remote-code models (`auto_map`) are refused for the same reason,
and so are quantized ones (their weights are not the float tensors the run trains). Weights stored in float16 or
bfloat16 are widened to float32, the dtype of every execution profile; the widening is exact.

Writing (`write_hf_model_dir`) turns a run config and θ's parameters into a directory that
`AutoModelForCausalLM.from_pretrained` and `AutoTokenizer.from_pretrained` load: a Hugging Face run model is saved
with its own `save_pretrained`; the built-in GPT is converted to a `GPT2LMHeadModel` (protocol/export.py). The
directory is assembled under a temporary name next to `out`, its weights are read back and compared bit for bit
with the parameters given, and only then renamed into place: a crash or a mismatch never leaves a half-written or
wrong model under `out`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from protocol.config import ExecutionProfileConfig, HFModelConfig, ModelConfig, RunConfig, parse_model_config
from protocol.errors import ConfigError, GradledgerError
from protocol.export import (
    ExportError,
    build_byte_tokenizer_json,
    convert_gpt2_to_gpt,
    convert_gpt_to_gpt2,
    get_gpt2_config,
    get_tokenizer_config,
    get_tokenizer_vocab_size,
)
from protocol.state import is_same_state
from protocol.training import PARAM, get_params

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_INDEX_FILE = "model.safetensors.index.json"
PICKLE_FILES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "model.pt", "model.ckpt")
DEFAULT_MAX_BLOCK = 128

_DROPPED_KEYS = frozenset({"architectures", "_name_or_path", "torch_dtype", "dtype", "transformers_version"})
"""Keys `save_pretrained` writes that describe the file, not the architecture (the profile owns the dtype)."""
_REMOTE_CODE_KEYS = ("auto_map", "trust_remote_code")
_LEGACY_BUFFER_SUFFIXES = (".attn.bias", ".attn.masked_bias", ".rotary_emb.inv_freq")
"""Buffers older checkpoints saved alongside the weights (GPT-2's causal mask, rotary frequencies): not parameters,
rebuilt from the config, safe to skip."""


class HFCheckpointError(GradledgerError):
    """A Hugging Face model directory cannot be read as a run model, or a model directory cannot be written."""


class CheckpointNotFoundError(HFCheckpointError):
    """The directory, its config.json or its safetensors weights are missing."""


class RemoteCodeError(HFCheckpointError):
    """The checkpoint needs code from outside transformers (`auto_map`), which is never run."""


class CheckpointMismatchError(HFCheckpointError):
    """The weights do not fit the architecture config.json describes (missing names, other shapes or dtypes)."""


# -- reading ---------------------------------------------------------------------------------------


def _read_config_json(directory: Path) -> dict[str, Any]:
    if not directory.is_dir():
        raise CheckpointNotFoundError(f"{directory} is not a directory; give the local Hugging Face model directory")
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise CheckpointNotFoundError(
            f"{directory} has no {CONFIG_FILE}: a Hugging Face model directory holds config.json next to "
            "model.safetensors (save one with `model.save_pretrained(DIR)`)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HFCheckpointError(f"{path} is not valid JSON ({exc}); fix or re-save the model") from None
    if not isinstance(data, dict):
        raise HFCheckpointError(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data


def get_model_section(config_json: Mapping[str, Any], block_size: int | None = None, where: str = CONFIG_FILE) -> dict:
    """The run config's model section for a transformers config.json: file-only keys dropped, remote code and
    quantized weights refused, trained at `block_size` tokens (default min(128, the model's context length))."""
    remote = [k for k in _REMOTE_CODE_KEYS if k in config_json]
    if remote:
        raise RemoteCodeError(
            f"{where} sets {remote}: the model needs code from outside transformers, which gradledger never loads; "
            "use a model whose architecture ships with transformers (e.g. llama, qwen2, gpt2)"
        )
    if "quantization_config" in config_json:
        raise HFCheckpointError(
            f"{where} describes a quantized checkpoint; a run trains float32 weights: use the unquantized model"
        )
    if not isinstance(config_json.get("model_type"), str):
        raise HFCheckpointError(f"{where} has no 'model_type'; is it a transformers config.json?")
    hf_config = {k: v for k, v in config_json.items() if k not in _DROPPED_KEYS and not k.startswith("_")}
    hf_config.pop("attn_implementation", None)  # the execution profile picks the attention kernel
    if block_size is None:
        limit = hf_config.get("max_position_embeddings") or hf_config.get("n_positions") or DEFAULT_MAX_BLOCK
        block_size = min(DEFAULT_MAX_BLOCK, int(limit))
    return parse_model_config({"architecture": "hf", "block_size": block_size, "hf_config": hf_config}, where)


def _weight_files(directory: Path) -> list[Path]:
    index = directory / WEIGHTS_INDEX_FILE
    if (directory / WEIGHTS_FILE).is_file():
        return [directory / WEIGHTS_FILE]
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            names = sorted(set(weight_map.values()))
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise HFCheckpointError(f"{index} is not a safetensors index ({exc!r}); re-save the model") from None
        files = []
        for name in names:
            if not isinstance(name, str) or Path(name).name != name or not name.endswith(".safetensors"):
                raise HFCheckpointError(f"{index} names shard {name!r}; shards must be .safetensors files beside it")
            if not (directory / name).is_file():
                raise CheckpointNotFoundError(f"{index} names shard {name}, which is missing from {directory}")
            files.append(directory / name)
        return files
    pickles = [name for name in PICKLE_FILES if (directory / name).exists()]
    hint = (
        f" It holds {pickles}: pickle checkpoints are never loaded (loading one can run arbitrary code); convert it "
        "with `AutoModelForCausalLM.from_pretrained(DIR).save_pretrained(OUT)` on a machine you trust."
        if pickles
        else ""
    )
    raise CheckpointNotFoundError(f"{directory} has neither {WEIGHTS_FILE} nor {WEIGHTS_INDEX_FILE}.{hint}")


def _read_tensors(files: list[Path]) -> dict[str, torch.Tensor]:
    tensors: dict[str, torch.Tensor] = {}
    for path in files:
        try:
            loaded = load_file(str(path))
        except (SafetensorError, OSError, ValueError) as exc:
            raise HFCheckpointError(f"{path} is not a readable safetensors file ({exc}); re-save the model") from None
        overlap = sorted(set(loaded) & set(tensors))
        if overlap:
            raise HFCheckpointError(f"{path} repeats tensors {overlap[:3]} of another shard; re-save the model")
        tensors.update(loaded)
    return tensors


def _candidates(name: str, aliases: list[str], prefix: str) -> list[str]:
    """Where a parameter may sit in a file: its name, a tied alias's name, each without the base model prefix
    (GPT-2 checkpoints saved from `GPT2Model` name "h.0..." what `GPT2LMHeadModel` calls "transformer.h.0...")."""
    names = [name, *aliases]
    stripped = [n.removeprefix(prefix + ".") for n in names if prefix and n.startswith(prefix + ".")]
    return names + stripped


def _to_float32(name: str, tensor: torch.Tensor, where: Path) -> torch.Tensor:
    if not tensor.is_floating_point():
        raise CheckpointMismatchError(f"{where}: tensor {name} is {tensor.dtype}, not a float weight")
    return tensor.to(torch.float32).contiguous()


def get_expected_parameters(config: HFModelConfig) -> tuple[dict[str, torch.Size], dict[str, list[str]], str]:
    """(run parameter name -> shape, name -> its tied aliases, base model prefix), from the model built on the meta
    device (no memory, no init): the names `build_model(...).named_parameters()` gives, tied weights once."""
    from protocol.hf_model import HFCausalLM

    with torch.device("meta"):
        model = HFCausalLM(config, ExecutionProfileConfig())
    shapes = {name: p.shape for name, p in model.named_parameters()}
    by_param: dict[int, list[str]] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        by_param.setdefault(id(p), []).append(name)
    aliases = {names[0]: names[1:] for names in by_param.values()}
    return shapes, aliases, str(getattr(model.transformers_model, "base_model_prefix", ""))


def match_parameters(
    config: HFModelConfig, tensors: Mapping[str, torch.Tensor], where: Path
) -> dict[str, torch.Tensor]:
    """The run's "param/<name>" state from a checkpoint's tensors: every expected name present (under its own
    name, a tied alias, or without the base prefix), shapes equal, floats widened to float32. Anything else in the
    file that is not a known buffer or an equal tied copy is refused: it means config.json describes another model."""
    shapes, aliases, prefix = get_expected_parameters(config)
    params: dict[str, torch.Tensor] = {}
    used: set[str] = set()
    missing = []
    for name, shape in shapes.items():
        found = [c for c in _candidates(name, aliases.get(name, []), prefix) if c in tensors]
        if not found:
            missing.append(name)
            continue
        value = _to_float32(found[0], tensors[found[0]], where)
        if value.shape != shape:
            raise CheckpointMismatchError(
                f"{where}: {found[0]} has shape {tuple(value.shape)} but config.json's model needs {tuple(shape)}; "
                "config.json and the weights are of different models"
            )
        for other in found[1:]:  # a tied weight saved twice must be saved equal
            if not torch.equal(_to_float32(other, tensors[other], where), value):
                raise CheckpointMismatchError(f"{where}: tied weights {found[0]} and {other} differ")
        used.update(found)
        params[PARAM + name] = value
    if missing:
        raise CheckpointMismatchError(
            f"{where} lacks {len(missing)} weight(s) the model of config.json has, e.g. {missing[:3]}; the files "
            "are incomplete or of another model"
        )
    extra = sorted(k for k in tensors if k not in used and not k.endswith(_LEGACY_BUFFER_SUFFIXES))
    if extra:
        raise CheckpointMismatchError(
            f"{where} holds {len(extra)} tensor(s) the model of config.json does not have, e.g. {extra[:3]}; "
            "config.json and the weights are of different models"
        )
    return params


def load_hf_checkpoint(directory: Path, block_size: int | None = None) -> tuple[dict, dict[str, torch.Tensor]]:
    """(model section for the run config, θ0 parameters as {"param/<name>": float32 tensor}) of a local Hugging
    Face model directory. `block_size` is the context the run trains at (default min(128, the model's context)).

    Raises CheckpointNotFoundError, RemoteCodeError, CheckpointMismatchError or HFCheckpointError, each naming the
    file and what to do, or ConfigError for a config.json the run config refuses (e.g. a block_size above its
    context)."""
    directory = Path(directory)
    section = get_model_section(_read_config_json(directory), block_size, str(directory / CONFIG_FILE))
    config = HFModelConfig.model_validate(section)
    params = match_parameters(config, _read_tensors(_weight_files(directory)), directory)
    return section, params


# -- writing ---------------------------------------------------------------------------------------


def _check_params_fit(expected: Mapping[str, torch.Size], params: Mapping[str, torch.Tensor]) -> None:
    missing = sorted(set(expected) - set(params))
    extra = sorted(set(params) - set(expected))
    if missing or extra:
        raise HFCheckpointError(
            f"θ's parameters do not fit the run's model: missing {missing[:3]}, unexpected {extra[:3]}"
        )
    for name, shape in expected.items():
        if params[name].shape != shape:
            raise HFCheckpointError(f"θ's {name} has shape {tuple(params[name].shape)}, the model needs {tuple(shape)}")


def _save_hf_model(config: RunConfig, params: Mapping[str, torch.Tensor], directory: Path) -> None:
    from protocol.hf_model import HFCausalLM
    from protocol.model import build_model

    model = build_model(config.model, config.profile, config.seed_bytes)
    if not isinstance(model, HFCausalLM):
        raise HFCheckpointError(f"an 'hf' run model was built as {type(model).__name__}, not a transformers model")
    _check_params_fit({PARAM + n: p.shape for n, p in model.named_parameters()}, params)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(params[PARAM + name])
    lm = model.transformers_model
    lm.config.use_cache = True  # the run trains without a KV cache; generation wants one
    lm.save_pretrained(str(directory), safe_serialization=True)


def _save_gpt_as_gpt2(config: ModelConfig, params: Mapping[str, torch.Tensor], directory: Path) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    converted = convert_gpt_to_gpt2({k.removeprefix(PARAM): v for k, v in params.items()}, config.n_layer)
    with torch.random.fork_rng(devices=[]):  # transformers' init draws from the global RNG; it is overwritten
        model = GPT2LMHeadModel(GPT2Config(**get_gpt2_config(config)))
    expected = {n: p.shape for n, p in model.named_parameters()}
    _check_params_fit(expected, converted)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(converted[name])
    model.save_pretrained(str(directory), safe_serialization=True)


def _read_back_params(config: RunConfig, directory: Path) -> dict[str, torch.Tensor]:
    """θ's parameters as the written directory holds them, under the run model's names."""
    _, params = load_hf_checkpoint(directory, config.model.block_size)
    if isinstance(config.model, HFModelConfig):
        return params
    return {PARAM + k: v for k, v in convert_gpt2_to_gpt({k.removeprefix(PARAM): v for k, v in params.items()}).items()}


def _write_tokenizer(config: RunConfig, directory: Path, tokenizer_json: bytes | None) -> None:
    data = tokenizer_json if tokenizer_json is not None else build_byte_tokenizer_json()
    vocab = get_tokenizer_vocab_size(data)
    if vocab > config.model.vocab_size:
        raise HFCheckpointError(
            f"the tokenizer has {vocab:,} ids but the model's vocabulary holds {config.model.vocab_size:,}; "
            "export with the tokenizer the run's dataset names"
        )
    hf_config = config.model.hf_config if isinstance(config.model, HFModelConfig) else {}
    (directory / "tokenizer.json").write_bytes(data)
    tokenizer_config = get_tokenizer_config(data, hf_config, config.model.block_size)
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2, sort_keys=True) + "\n")


def _fsync_tree(directory: Path) -> None:
    for path in sorted(directory.iterdir()):
        if path.is_file():
            with path.open("rb") as handle:
                os.fsync(handle.fileno())


def write_hf_model_dir(
    out: Path, config: RunConfig, params: dict[str, torch.Tensor], tokenizer_json: bytes | None, card: str
) -> None:
    """Write θ's parameters ("param/<name>") as a Hugging Face model directory at `out`: config.json,
    model.safetensors, tokenizer.json (`tokenizer_json`, or the byte-level tokenizer when None), tokenizer_config.json
    and README.md (`card`). Atomic: assembled in a temporary directory beside `out`, checked by reading the weights
    back, then renamed. Refuses an `out` that exists and is not an empty directory."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise HFCheckpointError(f"{out} already exists and is not empty; choose a new --out directory or remove it")
    params = get_params(params)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        if isinstance(config.model, HFModelConfig):
            _save_hf_model(config, params, tmp)
        else:
            _save_gpt_as_gpt2(config.model, params, tmp)
        _write_tokenizer(config, tmp, tokenizer_json)
        (tmp / "README.md").write_text(card, encoding="utf-8")
        if not is_same_state(_read_back_params(config, tmp), params):
            raise HFCheckpointError("the written weights do not read back as θ's parameters; nothing was exported")
        _fsync_tree(tmp)
        if out.exists():
            out.rmdir()  # empty (checked above): rename needs the name free
        os.rename(tmp, out)
    except (ConfigError, ExportError, OSError) as exc:
        raise HFCheckpointError(f"could not write the model directory {out}: {exc}") from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
