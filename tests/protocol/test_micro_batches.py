"""Canonical micro-batches (train.micro_batches = M): what they change, and what they must not."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from protocol.checkpoints import build_trainer, get_checkpoint_state, get_params, make_start_checkpoint
from protocol.config import build_run_config
from protocol.data import build_token_dataset
from protocol.errors import ConfigError
from protocol.hashing import hash_to_hex
from protocol.inner_step import MicroBatchError, get_local_micro_batches, run_inner_steps
from protocol.outer import get_initial_global_state
from tests.conftest import RUN_SEED, SOLVER_A


@dataclass(frozen=True)
class OneRank:
    """A group of one: every row is its own (the group code path, with nothing to exchange)."""

    rank: int = 0
    world_size: int = 1

    def gather(self, local: torch.Tensor) -> torch.Tensor:
        return local.clone()


def _config(corpus, micro_batches: int, preset: str = "tiny", **train):
    manifest, _ = corpus
    overrides = {"train": {"micro_batches": micro_batches, **train}}
    if preset == "default":
        overrides["model"] = {"n_layer": 2}
        overrides["train"] |= {"batch_size": 8, "inner_steps": 4, "steps_per_segment": 2}
    return build_run_config(
        preset=preset, run_seed=RUN_SEED, dataset_root=hash_to_hex(manifest.root), overrides=overrides
    )


def _train(config, corpus, steps: int, exchanger=None, threads: int = 1):
    manifest, shards = corpus
    dataset = build_token_dataset(manifest, shards, config.data.eval_shards)
    theta = get_params(get_initial_global_state(config))
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model, optimizer = build_trainer(config, make_start_checkpoint(theta))
        losses = run_inner_steps(model, optimizer, dataset, config, 0, SOLVER_A, 0, steps, exchanger=exchanger)
        return get_checkpoint_state(model, optimizer), losses
    finally:
        torch.set_num_threads(previous)


def _same_bits(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_one_micro_batch_through_the_group_path_is_the_plain_step(corpus):
    """M = 1: fold of one row, divided by 1, is the plain backward's gradient bit for bit."""
    config = _config(corpus, 1)
    plain, plain_losses = _train(config, corpus, 4)
    grouped, grouped_losses = _train(config, corpus, 4, exchanger=OneRank())
    assert _same_bits(plain, grouped) and plain_losses == grouped_losses


def test_micro_batches_change_only_the_rounding(corpus):
    """M = 4 computes the same mean gradient as M = 1 up to float32 rounding (another summation order), which is
    why M is part of the hashed run config: a replay must use the run's M to get the same bits."""
    one, one_losses = _train(_config(corpus, 1), corpus, 1)
    four, four_losses = _train(_config(corpus, 4), corpus, 1)
    assert one_losses == pytest.approx(four_losses, rel=1e-5)
    assert not _same_bits(one, four)
    for key in one:
        assert torch.allclose(one[key], four[key], rtol=1e-3, atol=1e-6), key


def test_the_same_micro_batches_are_bit_identical_at_one_and_two_threads(corpus):
    config = _config(corpus, 4, preset="default")
    one, one_losses = _train(config, corpus, 2, threads=1)
    two, two_losses = _train(config, corpus, 2, threads=2)
    assert _same_bits(one, two) and one_losses == two_losses


def test_micro_batches_must_divide_the_batch(corpus):
    with pytest.raises(ConfigError, match="multiple of micro_batches"):
        _config(corpus, 3)  # tiny: batch_size 4


def test_a_group_must_divide_the_micro_batches():
    assert list(get_local_micro_batches(4, OneRank(rank=1, world_size=2))) == [2, 3]
    assert list(get_local_micro_batches(4, None)) == [0, 1, 2, 3]
    with pytest.raises(MicroBatchError, match="cannot share"):
        get_local_micro_batches(4, OneRank(rank=0, world_size=3))
