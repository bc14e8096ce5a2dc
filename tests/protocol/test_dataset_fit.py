"""protocol.data.verify_dataset_fits_config: a corpus too small for the config is refused, with what to do."""

from __future__ import annotations

import pytest

from protocol.config import build_run_config
from protocol.data import (
    SHARD_BYTES,
    DatasetTooSmallError,
    build_manifest,
    build_token_dataset,
    get_eval_batch,
    get_min_stream_tokens,
    get_train_batch,
    split_into_shards,
    verify_dataset_fits_config,
)
from protocol.hashing import hash_to_hex

SEED = "0x" + "5e" * 32
SOLVER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


def _config(manifest, preset: str = "tiny", eval_shards: int = 1):
    return build_run_config(
        preset=preset, run_seed=SEED, dataset_root=hash_to_hex(manifest.root),
        overrides={"data": {"eval_shards": eval_shards}},
    )  # fmt: skip


def _corpus(size: int, shard_bytes: int):
    shards = split_into_shards(bytes(i % 251 for i in range(size)), shard_bytes)
    manifest = build_manifest(shards)
    return manifest, {ref.hash: data for ref, data in zip(manifest.shards, shards, strict=True)}


def test_a_twelve_byte_corpus_has_no_training_shard():
    manifest, _ = _corpus(12, SHARD_BYTES)
    config = _config(manifest)
    with pytest.raises(DatasetTooSmallError) as caught:
        verify_dataset_fits_config(manifest, config, where="/data/mine")
    message = str(caught.value)
    assert "/data/mine holds 12 bytes: 1 shard(s)" in message
    assert "holds out the last 1 for evaluation (data.eval_shards) and needs at least 1 more to train" in message
    need = get_min_stream_tokens(config.model.block_size, config.train.batch_size)
    assert f"add at least {SHARD_BYTES + need - 12:,} bytes of text to /data/mine" in message


@pytest.mark.parametrize("eval_shards", [1, 2])
def test_the_smallest_corpus_it_names_fits_and_one_byte_less_does_not(eval_shards):
    shard_bytes = 100
    manifest, _ = _corpus(5, shard_bytes)
    config = _config(manifest, eval_shards=eval_shards)
    with pytest.raises(DatasetTooSmallError) as caught:
        verify_dataset_fits_config(manifest, config, shard_bytes=shard_bytes)
    smallest = int(str(caught.value).split("needs ")[-1].split(" bytes")[0].replace(",", ""))
    fits, shards = _corpus(smallest, shard_bytes)
    verify_dataset_fits_config(fits, config, shard_bytes=shard_bytes)
    # what the check admits trains and evaluates: a batch of distinct windows from each stream
    dataset = build_token_dataset(fits, shards, eval_shards)
    x, _ = get_train_batch(dataset, config.seed_bytes, 0, SOLVER, 0, config.train.batch_size, config.model.block_size)
    e, _ = get_eval_batch(dataset, config.seed_bytes, 0, config.train.batch_size, config.model.block_size)
    assert x.shape == e.shape == (config.train.batch_size, config.model.block_size)
    short, _ = _corpus(smallest - 1, shard_bytes)
    with pytest.raises(DatasetTooSmallError):
        verify_dataset_fits_config(short, config, shard_bytes=shard_bytes)


def test_a_held_out_tail_shorter_than_a_batch_is_refused():
    manifest, _ = _corpus(100 + 10, 100)
    config = _config(manifest)
    need = get_min_stream_tokens(config.model.block_size, config.train.batch_size)
    with pytest.raises(DatasetTooSmallError) as e:
        verify_dataset_fits_config(manifest, config, where="DIR", shard_bytes=100)
    assert "the held-out shard(s) of DIR (the last 1) hold 10 tokens" in str(e.value)
    assert f"add at least {need - 10:,} bytes of text to DIR" in str(e.value)
    assert "--preset tiny" in str(e.value)


def test_training_shards_shorter_than_a_batch_are_refused():
    manifest, _ = _corpus(60, 20)  # 3 shards of 20 bytes: 40 training tokens
    config = _config(manifest, preset="default")  # block 64, batch 16: a stream needs 81 tokens
    with pytest.raises(DatasetTooSmallError, match="the training shards of the corpus hold 40 tokens"):
        verify_dataset_fits_config(manifest, config, shard_bytes=20)


def test_the_default_corpus_fits_every_preset(corpus):
    manifest, _ = corpus
    for preset in ("tiny", "default", "large"):
        verify_dataset_fits_config(manifest, _config(manifest, preset))
