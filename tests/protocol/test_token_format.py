"""Datasets of tokenizer ids (GLDATA2): the root pins width, tokenizer and vocabulary; bad shards are refused."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.config import build_run_config
from protocol.data import (
    BYTE_TOKENS,
    DataError,
    TokenFormat,
    VocabularyMismatchError,
    build_manifest,
    build_token_dataset,
    decode_manifest,
    decode_tokens,
    encode_manifest,
    verify_dataset_fits_config,
)
from protocol.hashing import Hash32, hash_to_hex
from tests.conftest import RUN_SEED

TOKENIZER = Hash32(b"\x07" * 32)


def _shards(ids: list[int], width: int, per_shard: int) -> list[bytes]:
    fmt = {1: "B", 2: "H", 4: "I"}[width]
    data = struct.pack(f"<{len(ids)}{fmt}", *ids)
    step = per_shard * width
    return [data[i : i + step] for i in range(0, len(data), step)]


@given(
    width=st.sampled_from([2, 4]),
    vocab=st.integers(2, 65536),
    sizes=st.lists(st.integers(1, 50), min_size=1, max_size=5),
    tokenizer=st.one_of(st.none(), st.binary(min_size=32, max_size=32).filter(lambda b: b != bytes(32))),
)
def test_decode_manifest_round_trips_any_token_format(width, vocab, sizes, tokenizer):
    fmt = TokenFormat(width, None if tokenizer is None else Hash32(tokenizer), vocab)
    shards = [bytes(width * n) for n in sizes]
    manifest = build_manifest(shards, fmt)
    assert decode_manifest(encode_manifest(manifest.shards, fmt)) == manifest


def test_dataset_root_pins_tokenizer_width_and_vocabulary():
    shards = _shards(list(range(100)), 2, 40)
    roots = {
        build_manifest(shards, TokenFormat(2, TOKENIZER, 512)).root,
        build_manifest(shards, TokenFormat(2, Hash32(b"\x08" * 32), 512)).root,
        build_manifest(shards, TokenFormat(2, TOKENIZER, 600)).root,
        build_manifest(shards, BYTE_TOKENS).root,
    }
    assert len(roots) == 4


def test_byte_datasets_keep_the_gldata1_root():
    """Byte-level datasets are encoded exactly as before the token formats existed, so their roots do not move."""
    shards = [b"hello", b"world"]
    assert encode_manifest(build_manifest(shards).shards).startswith(b"GLDATA1\0")


def test_build_token_dataset_two_byte_ids_decode_in_order():
    ids = [(i * 37) % 500 for i in range(300)]
    manifest = build_manifest(_shards(ids, 2, 200), TokenFormat(2, TOKENIZER, 500))
    shards = dict(zip((s.hash for s in manifest.shards), _shards(ids, 2, 200), strict=True))
    dataset = build_token_dataset(manifest, shards, 1)
    assert dataset.train.tolist() == ids[:200] and dataset.eval.tolist() == ids[200:]


def test_build_token_dataset_id_outside_vocabulary_is_refused():
    ids = [1, 2, 3, 900] * 10
    manifest = build_manifest(_shards(ids, 2, 20), TokenFormat(2, TOKENIZER, 512))
    shards = dict(zip((s.hash for s in manifest.shards), _shards(ids, 2, 20), strict=True))
    with pytest.raises(DataError, match="token id 900, outside its declared vocabulary of 512"):
        build_token_dataset(manifest, shards, 1)


def test_decode_tokens_partial_token_is_refused():
    with pytest.raises(DataError, match="not a whole number of 2-byte tokens"):
        decode_tokens(b"\x01\x02\x03", 2)


@pytest.mark.parametrize(("width", "vocab"), [(3, 10), (1, 300), (2, 70000)])
def test_encode_manifest_format_that_cannot_hold_its_vocabulary_is_refused(width, vocab):
    with pytest.raises(DataError):
        encode_manifest((), TokenFormat(width, TOKENIZER, vocab))


def test_verify_dataset_fits_config_tokenizer_larger_than_model_vocabulary_is_refused():
    manifest = build_manifest(_shards(list(range(400)) * 4, 2, 800), TokenFormat(2, TOKENIZER, 400))
    config = build_run_config(preset="tiny", run_seed=RUN_SEED, dataset_root=hash_to_hex(manifest.root))
    with pytest.raises(VocabularyMismatchError, match="400 ids but the model's vocabulary holds 256"):
        verify_dataset_fits_config(manifest, config, where="data/")
