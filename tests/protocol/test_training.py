"""The training engine: determinism, exact replay, the outer step, detection, bad input."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from protocol.config import ExecutionProfileConfig, ModelConfig, build_run_config
from protocol.data import DataError, build_token_dataset, get_train_batch
from protocol.errors import ConfigError, StateEncodingError
from protocol.hashing import keccak256
from protocol.merkle import build_merkle_tree, compute_leaf_hash
from protocol.model import build_model
from protocol.outer import compute_outer_step, get_initial_global_state
from protocol.replay import judge_exact, replay_segment, verify_leaf_chain
from protocol.state import compute_state_hash, decode_state, encode_state
from protocol.training import (
    CheckpointError,
    build_optimizer,
    compute_pseudo_gradient,
    get_checkpoint_state,
    get_params,
    keep_checkpoints,
    load_checkpoint_state,
    make_start_checkpoint,
    run_inner_steps,
    train_round,
)
from tests.conftest import RUN_SEED, SOLVER_A, SOLVER_B


def _with_threads(threads: int, fn):
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return fn()
    finally:
        torch.set_num_threads(previous)


def _train_round(config, dataset, solver=SOLVER_A, round_index=0):
    checkpoints = {}
    theta = get_params(get_initial_global_state(config))
    records, end = train_round(
        config, dataset, theta, round_index, solver, save_checkpoint=keep_checkpoints(checkpoints)
    )
    return theta, records, end, checkpoints


def test_batches_are_a_pure_function_of_seed_round_solver_step(tiny_config, dataset):
    seed, bs, ctx = tiny_config.seed_bytes, 4, 32
    x1, y1 = get_train_batch(dataset, seed, 3, SOLVER_A, 7, bs, ctx)
    x2, y2 = get_train_batch(dataset, seed, 3, SOLVER_A, 7, bs, ctx)
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert torch.equal(x1[:, 1:], y1[:, :-1])  # targets are the next bytes
    for other in ((4, SOLVER_A, 7), (3, SOLVER_B, 7), (3, SOLVER_A, 8)):
        assert not torch.equal(get_train_batch(dataset, seed, *other, bs, ctx)[0], x1)


def test_init_is_a_pure_function_of_config_and_seed():
    profile, config = ExecutionProfileConfig(), ModelConfig(n_layer=1, n_embd=32, n_head=2, block_size=16)
    a = build_model(config, profile, keccak256(b"seed"))
    b = build_model(config, profile, keccak256(b"seed"))
    c = build_model(config, profile, keccak256(b"other"))
    hash_of = lambda m: compute_state_hash({k: v for k, v in m.state_dict().items()})  # noqa: E731
    assert hash_of(a) == hash_of(b) != hash_of(c)


@pytest.mark.parametrize("inner_optimizer", ["adamw", "muon"])
def test_training_is_bit_identical_at_one_and_two_threads(corpus, inner_optimizer):
    """The execution profile's promise, on the default-width model so ops really go parallel."""
    manifest, shards = corpus
    config = build_run_config(
        preset="default",
        run_seed=RUN_SEED,
        dataset_root="0x" + manifest.root.hex(),
        overrides={
            "train": {"inner_steps": 6, "steps_per_segment": 3, "inner_optimizer": inner_optimizer},
            "model": {"n_layer": 2},
        },
    )
    dataset = build_token_dataset(manifest, shards, 1)
    theta = get_params(get_initial_global_state(config))

    def train():
        model = build_model(config.model, config.profile, config.seed_bytes)
        optimizer = build_optimizer(model, config.train)
        load_checkpoint_state(model, optimizer, make_start_checkpoint(theta))
        run_inner_steps(model, optimizer, dataset, config, 0, SOLVER_A, 0, 6)
        return get_checkpoint_state(model, optimizer)

    one, two = _with_threads(1, train), _with_threads(2, train)
    assert one.keys() == two.keys()
    assert all(torch.equal(one[k], two[k]) for k in one)


@pytest.mark.parametrize("inner_optimizer", ["adamw", "muon"])
def test_replay_of_a_segment_at_another_thread_count_matches_the_commitment(tiny_config, dataset, inner_optimizer):
    config = build_run_config(
        preset="tiny",
        run_seed=RUN_SEED,
        dataset_root=tiny_config.data.dataset_root,
        overrides={"train": {"inner_optimizer": inner_optimizer}},
    )
    _, records, _, checkpoints = _with_threads(2, lambda: _train_round(config, dataset))
    for segment in range(config.train.num_segments):
        replayed = _with_threads(1, lambda s=segment: replay_segment(config, dataset, 0, SOLVER_A, s, checkpoints[s]))
        leaf = records[segment].to_leaf(1, 0, SOLVER_A)
        verdict = judge_exact(config, leaf, checkpoints[segment], replayed)
        assert verdict.accepted, verdict.reason
        assert compute_state_hash(replayed) == records[segment].end_hash


def test_records_chain_and_form_a_merkle_tree(tiny_config, dataset):
    theta, records, end, checkpoints = _train_round(tiny_config, dataset)
    leaves = [r.to_leaf(1, 0, SOLVER_A) for r in records]
    c0_hash = compute_state_hash(make_start_checkpoint(theta))
    assert verify_leaf_chain(leaves, 1, 0, SOLVER_A, c0_hash, tiny_config.train.num_segments) is None
    assert records[-1].end_hash == compute_state_hash(end)
    assert compute_state_hash(checkpoints[len(records)]) == compute_state_hash(end)
    build_merkle_tree([compute_leaf_hash(leaf) for leaf in leaves])
    swapped = [leaves[1], leaves[0], *leaves[2:]]
    assert "leaf 0" in verify_leaf_chain(swapped, 1, 0, SOLVER_A, c0_hash, tiny_config.train.num_segments)
    assert "does not start" in verify_leaf_chain(leaves, 1, 0, SOLVER_A, keccak256(b"x"), len(leaves))


def test_a_cheating_segment_is_detected(tiny_config, dataset):
    """A solver that shrinks its update (less work, same direction) fails exact replay."""
    _, records, _, checkpoints = _train_round(tiny_config, dataset)
    start, honest_end = checkpoints[1], checkpoints[2]
    forged = {
        k: (start[k] + 0.9 * (honest_end[k] - start[k]) if k.startswith("param/") else v) for k, v in honest_end.items()
    }
    leaf = records[1].to_leaf(1, 0, SOLVER_A)
    cheating_leaf = type(leaf)(**{**leaf.__dict__, "end_hash": compute_state_hash(forged)})
    replayed = replay_segment(tiny_config, dataset, 0, SOLVER_A, 1, start)
    verdict = judge_exact(tiny_config, cheating_leaf, start, replayed)
    assert not verdict.accepted and "differs from the committed end hash" in verdict.reason
    wrong_start = judge_exact(tiny_config, leaf, honest_end, replayed)
    assert not wrong_start.accepted and "start hash" in wrong_start.reason


def test_a_planted_round_fails_an_honest_replay_and_replays_with_its_secret(tiny_config, dataset):
    """A planted round (docs/planted-faults.md) is genuine training on other batches of the same stream: a
    verifier's honest replay of any segment rejects it; a replay with the revealed round secret accepts it."""
    secret = keccak256(b"round secret of a planted round")
    honest_x, _ = get_train_batch(dataset, tiny_config.seed_bytes, 0, SOLVER_A, 0, 4, 32)
    planted_x, _ = get_train_batch(dataset, tiny_config.seed_bytes, 0, SOLVER_A, 0, 4, 32, secret)
    assert not torch.equal(honest_x, planted_x), "a planted step draws other batches"
    theta = get_params(get_initial_global_state(tiny_config))
    checkpoints = {}
    records, _ = train_round(
        tiny_config, dataset, theta, 0, SOLVER_A, save_checkpoint=keep_checkpoints(checkpoints), plant_secret=secret
    )
    for segment in range(tiny_config.train.num_segments):
        leaf, start = records[segment].to_leaf(segment, 0, SOLVER_A), checkpoints[segment]
        honest = judge_exact(
            tiny_config, leaf, start, replay_segment(tiny_config, dataset, 0, SOLVER_A, segment, start)
        )
        assert not honest.accepted, f"segment {segment}: a planted segment must fail an honest replay"
        planted = replay_segment(tiny_config, dataset, 0, SOLVER_A, segment, start, plant_secret=secret)
        assert judge_exact(tiny_config, leaf, start, planted).accepted, "the plant is proven with the secret"


@pytest.mark.parametrize(
    ("threads", "options"),
    [(1, {}), (2, {}), (1, {"aggregate": "senders", "clip_to_median_norm": True}), (2, {"clip_to_median_norm": True})],
)
def test_outer_step_is_bit_identical_in_another_process(tiny_config, dataset, tmp_path: Path, threads, options):
    tiny_config = tiny_config.model_copy(update={"train": tiny_config.train.model_copy(update=options)})
    global_state = get_initial_global_state(tiny_config)
    theta = get_params(global_state)
    deltas = {}
    for solver in (SOLVER_B, SOLVER_A):
        _, end = train_round(tiny_config, dataset, theta, 0, solver)
        deltas[solver] = compute_pseudo_gradient(theta, end)
    here = compute_outer_step(global_state, deltas, tiny_config.train)
    (tmp_path / "global").write_bytes(encode_state(global_state))
    for i, (solver, delta) in enumerate(deltas.items()):
        (tmp_path / f"delta{i}").write_bytes(encode_state(delta))
        (tmp_path / f"solver{i}").write_text(solver)
    (tmp_path / "config.json").write_text(tiny_config.model_dump_json())
    script = textwrap.dedent(
        f"""
        import torch; torch.set_num_threads({threads})
        from pathlib import Path
        from protocol.config import RunConfig
        from protocol.outer import compute_outer_step
        from protocol.state import compute_state_hash, decode_state
        d = Path({str(tmp_path)!r})
        config = RunConfig.model_validate_json((d / "config.json").read_text())
        load = lambda name: decode_state((d / name).read_bytes())
        deltas = {{(d / f"solver{{i}}").read_text(): load(f"delta{{i}}") for i in (1, 0)}}
        assert config.train.model_dump() == {tiny_config.train.model_dump()!r}
        print(compute_state_hash(compute_outer_step(load("global"), deltas, config.train)).hex())
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == compute_state_hash(here).hex()
    assert compute_state_hash(here) != compute_state_hash(global_state)


def test_outer_step_with_nothing_accepted_keeps_theta(tiny_config):
    state = get_initial_global_state(tiny_config)
    assert compute_state_hash(compute_outer_step(state, {}, tiny_config.train)) == compute_state_hash(state)


def test_config_that_does_not_fit_the_model_is_a_clear_error(tiny_config):
    with pytest.raises(ConfigError, match=r"n_embd \(30\) must be a multiple of n_head \(4\)"):
        build_run_config(
            preset="tiny", run_seed=RUN_SEED, dataset_root=tiny_config.data.dataset_root,
            overrides={"model": {"n_embd": 30, "n_head": 4}},
        )  # fmt: skip
    with pytest.raises(ConfigError, match="unknown preset"):
        build_run_config(preset="huge", run_seed=RUN_SEED, dataset_root=tiny_config.data.dataset_root)
    with pytest.raises(ConfigError, match=r"train\.batch_size"):
        build_run_config(
            preset="tiny", run_seed=RUN_SEED, dataset_root=tiny_config.data.dataset_root,
            overrides={"train": {"batch_size": 0}},
        )  # fmt: skip


def test_missing_or_corrupt_shard_is_a_clear_error(corpus):
    manifest, shards = corpus
    first = manifest.shards[0].hash
    missing = {h: b for h, b in shards.items() if h != first}
    with pytest.raises(DataError, match=r"shard 0 .* is missing; fetch it"):
        build_token_dataset(manifest, missing, 1)
    corrupt = dict(shards)
    corrupt[first] = b"x" + shards[first][1:]
    with pytest.raises(DataError, match="do not match their hash"):
        build_token_dataset(manifest, corrupt, 1)


def test_checkpoint_of_another_model_is_a_clear_error(tiny_config):
    model = build_model(tiny_config.model, tiny_config.profile, tiny_config.seed_bytes)
    optimizer = build_optimizer(model, tiny_config.train)
    other = build_model(
        ModelConfig(n_layer=1, n_embd=32, n_head=2, block_size=32),
        tiny_config.profile,
        tiny_config.seed_bytes,
    )
    other_checkpoint = get_checkpoint_state(other, build_optimizer(other, tiny_config.train))
    with pytest.raises(CheckpointError, match=r"does not fit this run's model: missing"):
        load_checkpoint_state(model, optimizer, other_checkpoint)
    wider = build_model(
        ModelConfig(n_layer=2, n_embd=64, n_head=2, block_size=32),
        tiny_config.profile,
        tiny_config.seed_bytes,
    )
    with pytest.raises(CheckpointError, match="has shape"):
        load_checkpoint_state(model, optimizer, get_checkpoint_state(wider, build_optimizer(wider, tiny_config.train)))


def test_a_file_that_is_not_a_checkpoint_is_a_clear_error(tmp_path: Path):
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, path)
    with pytest.raises(StateEncodingError, match="not a canonical state"):
        decode_state(path.read_bytes())
    with pytest.raises(StateEncodingError, match="not a canonical state"):
        decode_state(pickle.dumps([1, 2, 3]))
