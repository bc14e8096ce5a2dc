"""Muon inner steps (`train.inner_optimizer = "muon"`, protocol/muon.py): what it trains, that its checkpoints keep the
AdamW layout and round-trip, that every role replays it bit for bit, and that a run at the defaults hashes as before.

Replay at another thread count in one process is parametrized in test_training.py with the AdamW twins."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.checkpoints import get_fresh_optimizer_state
from protocol.config import (
    TRAIN_KEYS_LEFT_OUT_AT_DEFAULT,
    HFModelConfig,
    TrainConfig,
    build_run_config,
    compute_config_hash,
    encode_config,
)
from protocol.errors import ConfigError
from protocol.muon import MuonWithAdamW, get_muon_parameter_names, orthogonalize
from protocol.outer import compute_outer_step, get_initial_global_state
from protocol.replay import judge_exact, replay_segment
from protocol.state import compute_state_hash
from protocol.training import (
    ADAM_STEP,
    build_trainer,
    compute_pseudo_gradient,
    get_checkpoint_state,
    get_moments,
    get_params,
    keep_checkpoints,
    make_start_checkpoint,
    run_inner_steps,
    train_round,
)
from tests.conftest import RUN_SEED, SOLVER_A
from tests.fresh_processes import get_outputs_at_thread_counts
from tests.protocol.test_hf_model import LLAMA

SQUARE = "param/h.0.attn.c_proj.weight"
"""A square hidden matrix of the built-in GPT (n_embd x n_embd)."""


def _config(dataset_root: str, preset: str = "tiny", **train):
    return build_run_config(
        preset=preset,
        run_seed=RUN_SEED,
        dataset_root=dataset_root,
        overrides={"train": {"inner_optimizer": "muon", **train}},
    )


@pytest.fixture(scope="module")
def muon_config(tiny_config):
    return _config(tiny_config.data.dataset_root)


def _one_step(config, dataset) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """θ0 and the checkpoint one step from θ0 and a fresh optimizer ends at (tiny preset: no warmup)."""
    theta = get_params(get_initial_global_state(config))
    model, optimizer = build_trainer(config, make_start_checkpoint(theta))
    run_inner_steps(model, optimizer, dataset, config, 0, SOLVER_A, 0, 1)
    return theta, get_checkpoint_state(model, optimizer)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(2, 48), cols=st.integers(2, 48), seed=st.integers(0, 2**31 - 1))
def test_orthogonalize_pushes_every_singular_value_near_one(rows, cols, seed):
    """Newton-Schulz's quintic maps a matrix with singular values spread over [0.1, 10] to one whose singular values
    all lie in about [0.7, 1.2]: the update's direction, not its spectrum."""
    g = torch.Generator().manual_seed(seed)
    rank = min(rows, cols)
    u, _ = torch.linalg.qr(torch.randn(rows, rank, generator=g))
    v, _ = torch.linalg.qr(torch.randn(cols, rank, generator=g))
    spread = 10 ** torch.linspace(-1, 1, rank)
    out = orthogonalize(u @ torch.diag(spread) @ v.mT, 5)
    assert out.shape == (rows, cols) and out.dtype == torch.float32
    singular = torch.linalg.svdvals(out)
    assert float(singular.min()) > 0.5 and float(singular.max()) < 1.3, singular
    assert torch.equal(orthogonalize(torch.zeros(rows, cols), 5), torch.zeros(rows, cols))


def test_muon_trains_the_blocks_matrices_and_adamw_the_embeddings_head_and_vectors(muon_config, corpus):
    model, optimizer = build_trainer(
        muon_config, make_start_checkpoint(get_params(get_initial_global_state(muon_config)))
    )
    names = get_muon_parameter_names(model)
    assert names == sorted(
        f"h.{i}.{part}.weight" for i in range(2) for part in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
    )
    assert isinstance(optimizer, MuonWithAdamW)
    muon_group, decay, no_decay = optimizer.param_groups
    by_id = {id(p): n for n, p in model.named_parameters()}
    assert [by_id[id(p)] for p in muon_group["params"]] == names and muon_group["base_lr"] == 0.02
    assert sorted(by_id[id(p)] for p in decay["params"]) == ["wpe.weight", "wte.weight"]  # the tied head is wte
    assert decay["weight_decay"] == muon_group["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() == 1 for p in no_decay["params"]) and optimizer.adamw.param_groups == [decay, no_decay]


def test_an_untied_output_head_and_the_embeddings_stay_with_adamw():
    """A transformers Llama: embed_tokens and the untied lm_head are AdamW's, the attention and MLP matrices Muon's."""
    from protocol.config import ExecutionProfileConfig
    from protocol.hashing import keccak256
    from protocol.model import build_model

    model = build_model(HFModelConfig(**LLAMA), ExecutionProfileConfig(transformers_version="x"), keccak256(b"s"))
    names = get_muon_parameter_names(model)
    assert "lm_head.weight" not in names and "model.embed_tokens.weight" not in names
    parts = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj")
    parts += ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")
    assert names == sorted(f"model.layers.{i}.{part}.weight" for i in range(2) for part in parts)


def test_a_muon_step_is_orthogonal_where_adamw_is_not(tiny_config, muon_config, dataset):
    """A broken switch that trained AdamW under inner_optimizer="muon" fails here: one Muon step moves a square hidden
    matrix by lr times a near-orthogonal matrix (its leading half of singular values within [0.6, 1.25] lr), one
    AdamW step by a sign-like matrix whose spectrum falls off fast."""
    theta, muon_end = _one_step(muon_config, dataset)
    lr, decay = muon_config.train.muon_lr, muon_config.train.weight_decay
    muon = torch.linalg.svdvals(muon_end[SQUARE] - theta[SQUARE] * (1 - lr * decay)) / lr
    half = len(muon) // 2
    assert float(muon[half - 1]) > 0.6 and float(muon[0]) < 1.25, muon
    _, adamw_end = _one_step(tiny_config, dataset)
    adamw = torch.linalg.svdvals(adamw_end[SQUARE] - theta[SQUARE])
    assert float(adamw[half - 1] / adamw[0]) < 0.4, adamw
    # the embeddings are AdamW's in both runs: the very same first step
    assert torch.equal(muon_end["param/wte.weight"], adamw_end["param/wte.weight"])


def test_the_warmups_scale_muons_lr_as_they_scale_adamws(muon_config, dataset):
    config = _config(muon_config.data.dataset_root, warmup_steps=10, round_warmup_steps=4, muon_lr=0.05)
    model, optimizer = build_trainer(config, make_start_checkpoint(get_params(get_initial_global_state(config))))
    run_inner_steps(model, optimizer, dataset, config, 0, SOLVER_A, 1, 1)  # global step 1, round step 1
    lrs = [group["lr"] for group in optimizer.param_groups]
    assert lrs == [0.05 * 2 / 10 * 2 / 4, 1e-3 * 2 / 10 * 2 / 4, 1e-3 * 2 / 10 * 2 / 4]


def test_muon_checkpoints_keep_the_adamw_layout_and_round_trip(muon_config, dataset):
    theta = get_params(get_initial_global_state(muon_config))
    fresh = make_start_checkpoint(theta)
    model, optimizer = build_trainer(muon_config, fresh)
    read = get_checkpoint_state(model, optimizer)
    assert read.keys() == fresh.keys() and all(torch.equal(read[k], fresh[k]) for k in fresh)
    run_inner_steps(model, optimizer, dataset, muon_config, 0, SOLVER_A, 0, 2)
    end = get_checkpoint_state(model, optimizer)
    assert end.keys() == {**theta, **get_fresh_optimizer_state(theta)}.keys() and float(end[ADAM_STEP]) == 2.0
    for name in get_muon_parameter_names(model):
        assert end[f"adam/{name}/exp_avg"].abs().max() > 0, "Muon's momentum is stored as exp_avg"
        assert torch.equal(end[f"adam/{name}/exp_avg_sq"], torch.zeros_like(end[f"adam/{name}/exp_avg_sq"]))
    assert end["adam/wte.weight/exp_avg_sq"].abs().max() > 0  # AdamW's second moment where AdamW trains
    again = get_checkpoint_state(*build_trainer(muon_config, end))
    assert again.keys() == end.keys() and all(torch.equal(again[k], end[k]) for k in end)


def test_carried_muon_moments_round_trip_and_their_round_replays(muon_config, dataset):
    config = muon_config.model_copy(update={"train": muon_config.train.model_copy(update={"carry_moments": True})})
    state0 = get_initial_global_state(config)
    theta0 = get_params(state0)
    _, end0 = train_round(config, dataset, theta0, 0, SOLVER_A)
    theta1 = get_params(compute_outer_step(state0, {SOLVER_A: compute_pseudo_gradient(theta0, end0)}, config.train))
    moments = get_moments(end0)
    c0 = make_start_checkpoint(theta1, moments)
    assert get_moments(c0).keys() == moments.keys() and all(torch.equal(c0[k], v) for k, v in moments.items())
    checkpoints: dict[int, dict[str, torch.Tensor]] = {}
    records, _ = train_round(
        config, dataset, theta1, 1, SOLVER_A, save_checkpoint=keep_checkpoints(checkpoints), start_moments=moments
    )
    assert compute_state_hash(checkpoints[0]) == compute_state_hash(c0) == records[0].start_hash
    for segment in (0, len(records) - 1):
        replayed = replay_segment(config, dataset, 1, SOLVER_A, segment, checkpoints[segment])
        leaf = records[segment].to_leaf(1, 1, SOLVER_A)
        assert judge_exact(config, leaf, checkpoints[segment], replayed).accepted


_SEGMENT = """
from protocol.adapters.corpus import load_corpus_shards
from protocol.config import build_run_config
from protocol.data import build_token_dataset
from protocol.outer import get_initial_global_state
from protocol.state import compute_state_hash
from protocol.training import build_trainer, get_checkpoint_state, get_params, make_start_checkpoint, run_inner_steps


def train_segment():
    manifest, shards = load_corpus_shards()
    train = {"inner_optimizer": "muon", "inner_steps": 3, "steps_per_segment": 3}
    config = build_run_config(
        run_seed="0x" + "5e" * 32, dataset_root="0x" + manifest.root.hex(),
        overrides={"train": train, "model": {"n_layer": 2}},
    )
    dataset = build_token_dataset(manifest, shards, 1)
    model, optimizer = build_trainer(config, make_start_checkpoint(get_params(get_initial_global_state(config))))
    run_inner_steps(model, optimizer, dataset, config, 0, "0x" + "ab" * 20, 0, 3)
    return compute_state_hash(get_checkpoint_state(model, optimizer)).hex()
"""
"""3 Muon steps of the default-width GPT (2 layers: its matrices are wide enough that a thread-split reduction would
show), as the state hash."""
_SUBPROCESS = """
import sys
from protocol.adapters.execution_env import pin_execution_environment
pin_execution_environment()
import torch
torch.set_num_threads(int(sys.argv[1]))
"""


def test_muon_segments_hash_the_same_in_fresh_processes_at_one_and_two_threads():
    outputs = get_outputs_at_thread_counts(_SUBPROCESS + _SEGMENT + "sys.stdout.write(train_segment())")
    here: dict = {}
    exec(_SEGMENT, here)
    assert outputs == {here["train_segment"]()}


def test_a_config_at_the_defaults_hashes_as_before_and_muon_changes_the_hash(tiny_config):
    root = tiny_config.data.dataset_root
    plain = build_run_config(preset="tiny", run_seed=RUN_SEED, dataset_root=root)
    explicit = build_run_config(
        preset="tiny", run_seed=RUN_SEED, dataset_root=root, overrides={"train": {"inner_optimizer": "adamw"}}
    )
    assert encode_config(plain) == encode_config(explicit)
    assert all(key.encode() not in encode_config(plain) for key in TRAIN_KEYS_LEFT_OUT_AT_DEFAULT)
    assert {key: TrainConfig.model_fields[key].default for key in TRAIN_KEYS_LEFT_OUT_AT_DEFAULT} == (
        TRAIN_KEYS_LEFT_OUT_AT_DEFAULT
    )
    muon = _config(root)
    assert b'"inner_optimizer":"muon"' in encode_config(muon) and b"muon_lr" not in encode_config(muon)
    assert compute_config_hash(muon) != compute_config_hash(plain)
    assert compute_config_hash(_config(root, muon_lr=0.01)) != compute_config_hash(muon)
    with pytest.raises(ConfigError, match="muon_lr set, but inner_optimizer is 'adamw'"):
        build_run_config(preset="tiny", run_seed=RUN_SEED, dataset_root=root, overrides={"train": {"muon_lr": 0.01}})
