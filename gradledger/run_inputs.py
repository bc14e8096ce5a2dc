"""What a run is made of, read from the files a user names: model, data, θ0 and thresholds.

`gradledger run create` and `gradledger demo` take the same inputs and resolve them here, in one
order, so both check the same things before anything is published or sent:

- the model: a preset's built-in GPT, or `--model-config FILE` (a model section or a bare
  transformers config.json), or the config.json of `--init-from DIR` (a local Hugging Face model
  directory whose weights become θ0: continued training);
- the data: `--dataset DIR` written by `gradledger data prepare` (token shards, manifest and tokenizer,
  every hash checked), or `--data DIR` of text files (byte-level), or the default corpus;
- the replay thresholds: `--thresholds FILE` written by `gradledger calibrate` (`load_thresholds_file`), else the
  config's.

The dataset is checked against the config (`verify_dataset_fits_config`: size, and the tokenizer's
vocabulary against the model's) and θ0 against the model (`verify_params_fit_model`) here, so a
mistake ends with a clear error and nothing published.

This module sits below the commands that use it (`run create`, `calibrate`, `data prepare`, the demos) and imports
none of them. It loads torch (protocol/training.py), so commands import it inside the function that runs, never at
module level (issue 38: `gradledger --help` loads no torch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from protocol.config import (
    ReplayThresholds,
    RunConfig,
    build_run_config,
    parse_config_assignments,
    parse_model_config,
)
from protocol.data import DatasetManifest, verify_dataset_fits_config
from protocol.errors import ConfigError
from protocol.hashing import hash_to_hex
from protocol.training import State, verify_params_fit_model


@dataclass(frozen=True)
class RunInputs:
    """A validated run config with the dataset and θ0 it is published with."""

    config: RunConfig
    manifest: DatasetManifest
    shards: dict[bytes, bytes]
    tokenizer_json: bytes | None
    theta0_params: State | None
    where: str
    """The dataset as error messages name it."""


def parse_settings_but_h_and_k(settings: list[str], hint: str) -> dict[str, Any]:
    """`--set KEY=VALUE` settings as config overrides; H and k are run terms with their own flags (`hint` says
    which), so a setting of either is refused before anything is read or sent."""
    overrides = parse_config_assignments(settings)
    fixed = sorted(set(overrides.get("train", {})) & {"inner_steps", "steps_per_segment"})
    if fixed:
        raise ConfigError(f"--set train.{fixed[0]}: {hint}")
    return overrides


def read_json_file(path: Path, what: str, missing_hint: str, unreadable_hint: str) -> Any:
    """The parsed JSON of a file a user named; a ConfigError naming `what`, the file and the fix otherwise."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist; {missing_hint}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{what} {path} is not readable JSON ({exc}); {unreadable_hint}") from None


def read_model_config_file(path: Path) -> dict[str, Any]:
    """A `--model-config` file as the run config's model section (protocol.config.parse_model_config)."""
    data = read_json_file(
        path, "--model-config", "give a JSON file (e.g. examples/llama-tiny.json)", "give a JSON model config"
    )
    return parse_model_config(data, where=str(path))


def load_thresholds_file(path: Path) -> ReplayThresholds:
    """The `ReplayThresholds` of a file `gradledger calibrate` wrote (or of a bare thresholds object);
    a ConfigError naming the file and the problem otherwise."""
    data = read_json_file(
        path,
        "thresholds file",
        "write one with `gradledger calibrate --out DIR`",
        "give a calibrate thresholds.json",
    )
    section = data.get("thresholds", data) if isinstance(data, dict) else data
    if not isinstance(section, dict):
        raise ConfigError(f"thresholds file {path} has no thresholds object; give a calibrate thresholds.json")
    try:
        return ReplayThresholds.model_validate(section)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'thresholds'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"thresholds file {path} has invalid thresholds ({problems}); calibrate again") from None


def load_dataset_inputs(
    data: Path | None, dataset: Path | None
) -> tuple[DatasetManifest, dict[bytes, bytes], bytes | None, str]:
    """(manifest, shards, tokenizer JSON or None, how errors name it) of `--dataset`, `--data` or the default corpus."""
    if data is not None and dataset is not None:
        raise ConfigError("give --dataset (a prepared dataset directory) or --data (a directory of text), not both")
    if dataset is not None:
        from protocol.adapters.prepared_data import load_prepared_dataset

        prepared = load_prepared_dataset(dataset)
        return prepared.manifest, prepared.shards, prepared.tokenizer_json, str(dataset)
    from protocol.adapters.corpus import describe_corpus, load_corpus_shards

    manifest, shards = load_corpus_shards(data)
    return manifest, shards, None, describe_corpus(data)


def resolve_run_inputs(
    *,
    preset: str,
    seed: str,
    data: Path | None = None,
    dataset: Path | None = None,
    model_config: Path | None = None,
    init_from: Path | None = None,
    thresholds: Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> RunInputs:
    """Read and check everything a run is created from (see the module docstring); raises a GradledgerError
    naming the file and the problem."""
    model = read_model_config_file(model_config) if model_config is not None else None
    theta0: State | None = None
    if init_from is not None:
        from protocol.adapters.hf_checkpoints import load_hf_checkpoint

        block_size = model.get("block_size") if model is not None else None
        checkpoint_model, theta0 = load_hf_checkpoint(init_from, block_size=block_size)
        if model is not None and model.get("hf_config") != checkpoint_model.get("hf_config"):
            raise ConfigError(
                f"--init-from {init_from} holds a model whose config.json differs from --model-config {model_config}; "
                "give only --init-from (its config.json defines the model), or a matching model config"
            )
        model = model if model is not None else checkpoint_model
    manifest, shards, tokenizer_json, where = load_dataset_inputs(data, dataset)
    layered = dict(overrides or {})
    if thresholds is not None:
        layered["thresholds"] = load_thresholds_file(thresholds).model_dump()
    config = build_run_config(
        preset=preset, run_seed=seed, dataset_root=hash_to_hex(manifest.root), overrides=layered, model=model
    )
    verify_dataset_fits_config(manifest, config, where=where)
    if config.model.architecture == "hf":  # a typo in hf_config is refused here, before anything is sent
        from protocol.hf_model import build_hf_config

        build_hf_config(config.model)
    if theta0 is not None:
        verify_params_fit_model(config, theta0)
    return RunInputs(config, manifest, shards, tokenizer_json, theta0, where)
