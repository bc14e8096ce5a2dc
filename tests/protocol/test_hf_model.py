"""Hugging Face models as run models: pinned by config, seeded, thread-invariant, replayable, refused when unsafe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from protocol.config import (
    ExecutionProfileConfig,
    HFModelConfig,
    ModelConfig,
    build_run_config,
    compute_config_hash,
    parse_model_config,
    parse_run_config,
)
from protocol.errors import ConfigError
from protocol.hashing import hash_to_hex, keccak256
from protocol.model import build_model
from protocol.outer import get_initial_global_state
from protocol.profile import apply_execution_profile, explain_profile_mismatch
from protocol.replay import judge_exact, judge_tolerance, replay_segment
from protocol.state import compute_state_hash
from protocol.training import get_params, keep_checkpoints, train_round
from tests.conftest import RUN_SEED, SOLVER_A
from tests.protocol.test_training import _with_threads

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LLAMA = {
    "architecture": "hf",
    "block_size": 32,
    "hf_config": {
        "model_type": "llama", "vocab_size": 256, "hidden_size": 32, "intermediate_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
    },
}  # fmt: skip
GPT2 = {
    "architecture": "hf",
    "block_size": 32,
    "hf_config": {
        "model_type": "gpt2", "vocab_size": 256, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64,
        "bos_token_id": 1, "eos_token_id": 2, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
    },
}  # fmt: skip


def _config(corpus, model, **overrides):
    manifest, _ = corpus
    return build_run_config(
        preset="tiny", run_seed=RUN_SEED, dataset_root=hash_to_hex(manifest.root), model=model, overrides=overrides
    )


@pytest.mark.parametrize("model", [LLAMA, GPT2], ids=["llama", "gpt2"])
def test_hf_round_is_bit_identical_at_one_and_two_threads_and_replays_exactly(corpus, dataset, model):
    config = _config(corpus, model)
    theta = get_params(get_initial_global_state(config))
    runs = []
    for threads in (1, 2):
        checkpoints: dict = {}
        records, end = _with_threads(
            threads,
            lambda c=checkpoints: train_round(config, dataset, theta, 0, SOLVER_A, save_checkpoint=keep_checkpoints(c)),
        )
        runs.append((records, compute_state_hash(end), checkpoints))
    (records, end_hash, checkpoints), (records_2, end_hash_2, _) = runs
    assert end_hash == end_hash_2
    assert [r.end_hash for r in records] == [r.end_hash for r in records_2]
    # a verifier replays segment 1 at the other thread count: the same bits
    leaf = records[1].to_leaf(1, 0, SOLVER_A)
    replayed = _with_threads(2, lambda: replay_segment(config, dataset, 0, SOLVER_A, 1, checkpoints[1]))
    assert judge_exact(config, leaf, checkpoints[1], replayed).accepted


def test_hf_fused_kernels_drift_but_stay_within_tolerance(corpus, dataset):
    """The emulated other profile (fused RMSNorm, SDPA attention) is not bit-identical, and is accepted by the
    tolerance verdict: what `gradledger calibrate` measures."""
    config = _config(corpus, LLAMA)
    fused = config.model_copy(
        update={"profile": config.profile.model_copy(update={"layer_norm": "fused", "attention": "sdpa"})}
    )
    theta = get_params(get_initial_global_state(config))
    checkpoints: dict = {}
    records, _ = train_round(config, dataset, theta, 0, SOLVER_A, save_checkpoint=keep_checkpoints(checkpoints))
    other = replay_segment(fused, dataset, 0, SOLVER_A, 0, checkpoints[0])
    assert compute_state_hash(other) != records[0].end_hash
    leaf = records[0].to_leaf(1, 0, SOLVER_A)
    verdict = judge_tolerance(config, leaf, records[0].sketch, checkpoints[0], other, checkpoints[1])
    assert verdict.accepted, verdict.reason


def test_hf_state_names_are_the_transformers_names_and_init_is_seeded():
    config, profile = HFModelConfig.model_validate(LLAMA), ExecutionProfileConfig(transformers_version="x")
    before = torch.random.get_rng_state()
    a = build_model(config, profile, keccak256(b"seed"))
    assert torch.equal(torch.random.get_rng_state(), before), "building a model must not consume the global RNG"
    b = build_model(config, profile, keccak256(b"seed"))
    c = build_model(config, profile, keccak256(b"other"))
    hash_of = lambda m: compute_state_hash({n: p.detach() for n, p in m.named_parameters()})  # noqa: E731
    assert hash_of(a) == hash_of(b) != hash_of(c)
    names = {n for n, _ in a.named_parameters()}
    assert names == {n for n, _ in a.transformers_model.named_parameters()}
    assert "model.layers.0.self_attn.q_proj.weight" in names


def test_gpt2_layer_norms_are_elementary_under_the_pinned_profile():
    from protocol.norms import ElementaryLayerNorm

    profile = ExecutionProfileConfig(transformers_version="x")
    model = build_model(HFModelConfig.model_validate(GPT2), profile, b"\0" * 32)
    assert not any(type(m) is torch.nn.LayerNorm for m in model.modules())
    assert sum(isinstance(m, ElementaryLayerNorm) for m in model.modules()) == 2 * 2 + 1


@pytest.mark.parametrize(
    ("hf_config", "needle"),
    [
        ({"vocab_size": 256}, "model_type"),
        ({"model_type": "llama"}, "vocab_size"),
        ({"model_type": "llama", "vocab_size": 256, "auto_map": {"AutoModel": "x.Y"}}, "remote code"),
        ({"model_type": "llama", "vocab_size": 256, "attn_implementation": "sdpa"}, "execution profile"),
        ({"model_type": "llama", "vocab_size": 256, "max_position_embeddings": 16}, "exceeds"),
    ],
)
def test_parse_model_config_bad_hf_config_is_refused(hf_config, needle):
    with pytest.raises(ConfigError, match=needle):
        parse_model_config({"architecture": "hf", "block_size": 32, "hf_config": hf_config}, "m.json")


def test_build_model_unknown_model_type_is_refused():
    config = HFModelConfig.model_validate({"block_size": 8, "hf_config": {"model_type": "no-such", "vocab_size": 9}})
    with pytest.raises(ConfigError, match="no-such"):
        build_model(config, ExecutionProfileConfig(transformers_version="x"), b"\0" * 32)


def test_parse_model_config_bare_config_json_becomes_an_hf_section():
    section = parse_model_config({"model_type": "llama", "vocab_size": 300, "max_position_embeddings": 64})
    assert section == {
        "architecture": "hf",
        "block_size": 64,
        "hf_config": {"model_type": "llama", "vocab_size": 300, "max_position_embeddings": 64},
    }


def test_examples_are_valid_model_configs_and_pin_transformers(corpus):
    for name in ("llama-tiny.json", "gpt2-tiny.json"):
        config = _config(corpus, parse_model_config(json.loads((EXAMPLES / name).read_text()), name))
        assert isinstance(config.model, HFModelConfig)
        assert config.profile.transformers_version
        assert parse_run_config(config.model_dump(mode="json")) == config  # survives its own canonical JSON


def test_run_config_hf_model_without_transformers_version_is_refused(corpus):
    config = _config(corpus, LLAMA).model_dump(mode="json")
    config["profile"]["transformers_version"] = None
    with pytest.raises(ConfigError, match="transformers_version"):
        parse_run_config(config)


def test_config_hash_pins_the_architecture(corpus):
    wider = json.loads(json.dumps(LLAMA))
    wider["hf_config"]["intermediate_size"] = 96
    assert compute_config_hash(_config(corpus, LLAMA)) != compute_config_hash(_config(corpus, wider))
    assert isinstance(_config(corpus, None).model, ModelConfig)


def test_apply_execution_profile_other_transformers_release_refuses_exact_verdicts():
    profile = ExecutionProfileConfig(transformers_version="0.0.1")
    assert "transformers 0.0.1" in (explain_profile_mismatch(profile) or "")
    with pytest.raises(ConfigError, match=r"refusing exact verdicts.*transformers==0\.0\.1"):
        apply_execution_profile(profile, 1)


def test_build_model_unknown_hf_config_key_is_refused_naming_the_nearest():
    # issue 39: `num_hiden_layers` was kept as a stray attribute and Llama's default 32 layers were built
    hf = {"model_type": "llama", "vocab_size": 64, "num_hiden_layers": 1, "hiden_size": 32, "zzz": 1}
    config = HFModelConfig.model_validate({"block_size": 8, "hf_config": hf})
    with pytest.raises(ConfigError) as info:
        build_model(config, ExecutionProfileConfig(transformers_version="x"), b"\0" * 32)
    message = str(info.value)
    assert "'num_hiden_layers' (did you mean 'num_hidden_layers'?)" in message, message
    assert "'hiden_size' (did you mean 'hidden_size'?)" in message and "'zzz'" in message, message


@pytest.mark.parametrize("example", ["llama-tiny.json", "gpt2-tiny.json"])
def test_build_hf_config_accepts_config_json_keys_the_class_consumes(example):
    # a legacy rope_theta, gpt2's hidden_size alias and a config.json's bookkeeping keys are known, not typos
    from protocol.hf_model import build_hf_config

    section = json.loads((Path(__file__).parents[2] / "examples" / example).read_text())
    section["hf_config"] |= {"architectures": ["X"], "transformers_version": "4.0.0"}
    if section["hf_config"]["model_type"] == "gpt2":
        section["hf_config"]["hidden_size"] = section["hf_config"].pop("n_embd")
    built = build_hf_config(HFModelConfig.model_validate(section))
    assert built.num_hidden_layers == section["hf_config"].get("num_hidden_layers", section["hf_config"].get("n_layer"))
