"""Documents into token shards (protocol/tokenization.py): widths, separators, trained and loaded tokenizers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers

from protocol.data import BYTE_TOKENS, DataError, build_token_dataset, decode_tokens
from protocol.hashing import compute_content_hash
from protocol.tokenization import (
    END_OF_TEXT,
    MIN_TRAIN_VOCAB,
    TokenizerError,
    get_separator_ids,
    get_shard_tokens,
    get_token_width,
    get_tokenizer_vocab_size,
    load_tokenizer,
    split_token_stream,
    tokenize_documents,
    train_bpe_tokenizer,
)

DOCUMENTS = [
    f"Document {i}: the quick brown fox jumps over the lazy dog {i % 7} times; ünïcödé ✓ and tabs\tand\nlines."
    for i in range(40)
]


@pytest.fixture(scope="module")
def trained() -> bytes:
    return train_bpe_tokenizer(DOCUMENTS, 300)


def _word_level(vocab: dict[str, int], whitespace: bool = True) -> bytes:
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    if whitespace:
        tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tokenizer.to_str().encode()


@given(vocab=st.integers(2, 1 << 31))
def test_token_width_is_the_narrowest_that_holds_every_id(vocab):
    width = get_token_width(vocab)
    assert width in (1, 2, 4) and vocab <= 1 << (8 * width)
    assert width == 1 or vocab > 1 << (8 * (width // 2))


def test_token_width_refuses_a_vocabulary_of_one():
    with pytest.raises(TokenizerError, match="at least 2 ids"):
        get_token_width(1)


@given(stream=st.binary(max_size=400), width=st.sampled_from([1, 2, 4]), per_shard=st.integers(1, 50))
def test_split_token_stream_keeps_every_token_and_never_splits_one(stream, width, per_shard):
    stream = stream[: len(stream) - len(stream) % width]
    shards = split_token_stream(stream, width, per_shard)
    assert b"".join(shards) == stream
    assert all(len(s) == per_shard * width for s in shards[:-1])
    assert all(0 < len(s) <= per_shard * width and len(s) % width == 0 for s in shards)


@given(total=st.integers(0, 10**8), width=st.sampled_from([1, 2, 4]), min_shards=st.integers(2, 50))
def test_shard_size_is_one_mebibyte_or_a_fraction_of_small_data(total, width, min_shards):
    per_shard = get_shard_tokens(total, width, min_shards)
    assert 1 <= per_shard * width <= 1 << 20
    shards = -(-total // per_shard)
    if total * width <= min_shards * (1 << 20) and total >= 2:  # small data: cut into about min_shards shards
        assert 2 <= shards <= min_shards and shards >= min(total, min_shards) // 2
    elif total * width > min_shards * (1 << 20):
        assert per_shard * width == (1 << 20)


@settings(max_examples=50)
@given(documents=st.lists(st.text(min_size=1, max_size=40), min_size=2, max_size=20))
def test_byte_level_shards_are_utf8_documents_each_followed_by_a_newline(documents):
    expected = b"".join(d.encode() + b"\n" for d in documents)
    tokenized = tokenize_documents(documents, None, shard_tokens=max(1, len(expected) // 3))
    assert b"".join(tokenized.shards) == expected
    assert tokenized.manifest.tokens == BYTE_TOKENS and tokenized.tokenizer_json is None
    assert tokenized.separator == (10,)


def test_trained_tokenizer_is_deterministic_canonical_and_within_its_vocabulary(trained):
    assert train_bpe_tokenizer(DOCUMENTS, 300) == trained  # same documents, same bytes
    assert train_bpe_tokenizer(list(reversed(DOCUMENTS)), 300) == trained  # pair counts do not depend on order
    text = trained.decode()
    assert Tokenizer.from_str(text).to_str() == text  # canonical: parsing and writing again changes nothing
    tokenizer = load_tokenizer(trained)
    assert tokenizer.token_to_id(END_OF_TEXT) == 0 and get_separator_ids(tokenizer) == (0,)
    assert MIN_TRAIN_VOCAB <= get_tokenizer_vocab_size(tokenizer) <= 300
    assert train_bpe_tokenizer(DOCUMENTS, 400) != trained


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=60))
def test_trained_byte_level_tokenizer_round_trips_any_text(trained, text):
    tokenizer = load_tokenizer(trained)
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    assert all(0 < i < get_tokenizer_vocab_size(tokenizer) for i in ids)
    assert tokenizer.decode(ids) == text


def test_tokenized_shards_decode_to_the_documents_with_the_separator_between(trained):
    tokenized = tokenize_documents(DOCUMENTS, trained, shard_tokens=200)
    fmt = tokenized.manifest.tokens
    assert fmt.width == 2 and fmt.tokenizer == compute_content_hash(trained)
    assert fmt.vocab_size == get_tokenizer_vocab_size(load_tokenizer(trained))
    ids = decode_tokens(b"".join(tokenized.shards), fmt.width).tolist()
    assert ids[-1] == 0 and ids.count(0) == len(DOCUMENTS)  # one end-of-text after each document
    tokenizer = load_tokenizer(trained)
    documents, current = [], []
    for token in ids:
        if token == 0:
            documents.append(tokenizer.decode(current))
            current = []
        else:
            current.append(token)
    assert documents == DOCUMENTS
    shards = dict(zip((r.hash for r in tokenized.manifest.shards), tokenized.shards, strict=True))
    dataset = build_token_dataset(tokenized.manifest, shards, eval_shards=1)
    assert dataset.train.numel() + dataset.eval.numel() == len(ids)


def test_a_small_vocabulary_tokenizer_uses_one_byte_ids():
    vocab = {"[UNK]": 0, "</s>": 1, "a": 2, "b": 3}
    tokenized = tokenize_documents(["a b a", "b b"] * 5, _word_level(vocab), shard_tokens=4)
    assert tokenized.manifest.tokens.width == 1 and tokenized.manifest.tokens.vocab_size == 4
    assert tokenized.separator == (1,)  # the end-of-text token </s>
    assert b"".join(tokenized.shards)[:4] == bytes([2, 3, 2, 1])


def test_without_an_end_of_text_token_the_separator_is_the_newline_encoding(trained):
    data = json.loads(trained)
    data["added_tokens"] = []
    del data["model"]["vocab"][END_OF_TEXT]
    tokenizer = load_tokenizer(json.dumps(data).encode())
    assert get_separator_ids(tokenizer) == tuple(tokenizer.encode("\n", add_special_tokens=False).ids)


def test_a_tokenizer_that_cannot_mark_document_ends_is_refused():
    with pytest.raises(TokenizerError, match="no end-of-text token"):
        get_separator_ids(load_tokenizer(_word_level({"[UNK]": 0, "a": 1})))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "not a valid Hugging Face tokenizers JSON"),
        (b'{"version": "1.0", "model": {"type": "Nope"}}', "not a valid Hugging Face tokenizers JSON"),
        (b"\xff\xfe", "not UTF-8 JSON"),
    ],
)
def test_a_file_that_is_not_a_tokenizer_is_refused(data, message):
    with pytest.raises(TokenizerError, match=message):
        load_tokenizer(data, where="tok.json")


def test_too_small_a_vocabulary_to_train_is_refused():
    with pytest.raises(TokenizerError, match=f"at least {MIN_TRAIN_VOCAB}"):
        train_bpe_tokenizer(DOCUMENTS, 256)


def test_too_little_data_for_a_training_and_a_held_out_shard_is_refused():
    with pytest.raises(DataError, match="one shard to train on and one held out"):
        tokenize_documents(["tiny"], None, shard_tokens=1000)
    with pytest.raises(DataError, match="no documents"):
        tokenize_documents([], None)
    assert len(tokenize_documents(["tiny"], None).shards) >= 2  # default shard size splits small data
