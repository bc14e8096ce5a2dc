"""Documents into token shards: byte level, a Hugging Face `tokenizers` tokenizer, or one trained on the documents.

What `gradledger data prepare` computes once the documents are read (protocol/adapters/text_sources.py). Pure:
documents in, shard bytes and a `DatasetManifest` out, so the same documents and options give the same shards and
the same root on every machine with the same `tokenizers` release.

- Byte level (today's tokenizer): each document's UTF-8 bytes followed by b"\\n" -- exactly what
  protocol/adapters/corpus.py makes of a directory of text files (GLDATA1, no tokenizer artifact).
- A tokenizer: ids little-endian in the narrowest width (1, 2 or 4 bytes) that holds every id of its vocabulary
  (GLDATA2 names the tokenizer artifact by hash). Documents are encoded without the post-processor's special
  tokens (no BOS) and each is followed by the separator: the tokenizer's end-of-text token if it has one of the
  usual names (`EOS_TOKENS`), else its encoding of "\\n" -- the same boundary the byte level uses.
- A trained tokenizer: byte-level BPE (GPT-2 style: the 256 byte symbols, then merges of pairs seen at least twice)
  with one special token, `<|endoftext|>` (id 0), which is then the separator. Training is deterministic: the
  `tokenizers` BPE trainer counts pairs exactly (threads only split the counting) and breaks count ties by the
  smaller pair of ids, and the alphabet ids are fixed by ByteLevel.alphabet(); the artifact is
  `Tokenizer.to_str()`, whose vocabulary is written in id order and merges in rank order, so the bytes are
  canonical (`Tokenizer.from_str(s).to_str() == s`, tested, as is training at 1 and 2 threads in two processes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from protocol.data import (
    BYTE_TOKENS,
    BYTE_VOCAB_SIZE,
    SHARD_BYTES,
    DataError,
    DatasetManifest,
    TokenFormat,
    build_manifest,
)
from protocol.hashing import compute_content_hash

END_OF_TEXT = "<|endoftext|>"
"""The one special token of a trained tokenizer (id 0): the document separator."""
EOS_TOKENS = (END_OF_TEXT, "</s>", "<eos>", "<|end_of_text|>", "<|im_end|>")
"""Names of end-of-text tokens, in order of preference, that a loaded tokenizer's separator is chosen from."""
DEFAULT_TRAIN_VOCAB = 512
MIN_TRAIN_VOCAB = BYTE_VOCAB_SIZE + 1
"""A trained tokenizer holds the 256 byte symbols and the end-of-text token at least."""
MIN_PAIR_FREQUENCY = 2
"""A pair seen once is not merged: it would be a token for one spot of the corpus, not a reusable piece."""
DEFAULT_MIN_SHARDS = 10
"""Data smaller than this many ~1 MiB shards is cut into this many smaller shards (see `get_shard_tokens`)."""
ENCODE_BATCH_DOCUMENTS = 256

ProgressCallback = Callable[[int, int], None]
"""Hears (documents done, documents in all) while documents are encoded."""


class TokenizerError(DataError):
    """A tokenizer file is not a `tokenizers` tokenizer, or cannot tokenize the documents."""


@dataclass(frozen=True)
class TokenizedData:
    """The shards of a prepared dataset, named by its manifest, and the tokenizer artifact (None: byte level)."""

    manifest: DatasetManifest
    shards: tuple[bytes, ...]
    tokenizer_json: bytes | None
    separator: tuple[int, ...]
    """The token ids that end every document."""
    documents: int


def get_token_width(vocab_size: int) -> int:
    """The narrowest token width (bytes) that holds every id below `vocab_size`."""
    if vocab_size < 2:
        raise TokenizerError(f"a tokenizer needs at least 2 ids, this one has {vocab_size}")
    for width in (1, 2):
        if vocab_size <= 1 << (8 * width):
            return width
    if vocab_size > 1 << 31:
        raise TokenizerError(f"a vocabulary of {vocab_size:,} ids is larger than 2**31, which shards cannot hold")
    return 4


def load_tokenizer(data: bytes, where: str = "the tokenizer") -> Tokenizer:
    """Parse a `tokenizers` JSON artifact (a tokenizer.json); a TokenizerError naming `where` if it is not one."""
    try:
        return Tokenizer.from_str(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TokenizerError(
            f"{where} is not UTF-8 JSON (byte {exc.start}); give a tokenizers tokenizer.json"
        ) from None
    except Exception as exc:  # the Rust parser raises a bare Exception with serde's message
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TokenizerError(
            f"{where} is not a valid Hugging Face tokenizers JSON ({first}); give the tokenizer.json a "
            "`tokenizers` Tokenizer saves (Tokenizer.save / tokenizer.save_pretrained), or --tokenizer train"
        ) from None


def get_tokenizer_vocab_size(tokenizer: Tokenizer) -> int:
    """One more than the largest id the tokenizer can produce (its added tokens included): what the model's
    embedding must cover, and what TokenFormat.vocab_size declares."""
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    if not vocab:
        raise TokenizerError("the tokenizer has an empty vocabulary")
    return max(vocab.values()) + 1


def get_separator_ids(tokenizer: Tokenizer) -> tuple[int, ...]:
    """The ids that end each document: the end-of-text token (`EOS_TOKENS`) if the tokenizer has one, else its
    encoding of "\\n". A tokenizer that has neither cannot mark where one document ends: refused."""
    for name in EOS_TOKENS:
        token_id = tokenizer.token_to_id(name)
        if token_id is not None:
            return (token_id,)
    ids = tuple(tokenizer.encode("\n", add_special_tokens=False).ids)
    if not ids:
        raise TokenizerError(
            f"the tokenizer has no end-of-text token ({', '.join(EOS_TOKENS)}) and encodes a newline to nothing, "
            "so documents could not be told apart; add an end-of-text token to it or use --tokenizer train"
        )
    return ids


def train_bpe_tokenizer(documents: Sequence[str], vocab_size: int = DEFAULT_TRAIN_VOCAB) -> bytes:
    """A byte-level BPE tokenizer of at most `vocab_size` ids trained on `documents`, as canonical JSON bytes.

    Fewer ids when the documents hold fewer pairs seen twice. Deterministic (see the module docstring)."""
    if vocab_size < MIN_TRAIN_VOCAB:
        raise TokenizerError(
            f"--vocab-size {vocab_size} is too small: a byte-level BPE tokenizer holds the 256 byte symbols and "
            f"{END_OF_TEXT}, so at least {MIN_TRAIN_VOCAB}"
        )
    if vocab_size > 1 << 20:
        raise TokenizerError(f"--vocab-size {vocab_size:,} is larger than any model here takes (at most {1 << 20:,})")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=MIN_PAIR_FREQUENCY,
        show_progress=False,
        special_tokens=[END_OF_TEXT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(list(documents), trainer=trainer, length=len(documents))
    return tokenizer.to_str().encode("utf-8")


def encode_byte_documents(documents: Sequence[str]) -> bytes:
    """Byte-level tokens: every document's UTF-8 bytes followed by b"\\n" (as protocol/adapters/corpus.py)."""
    return b"".join(doc.encode("utf-8") + b"\n" for doc in documents)


def encode_documents(
    tokenizer: Tokenizer,
    documents: Sequence[str],
    separator: Sequence[int],
    width: int,
    on_progress: ProgressCallback | None = None,
) -> bytes:
    """The token stream: each document's ids (no post-processor specials) then `separator`, as `width`-byte
    little-endian ids. Encoded in batches (the tokenizer's threads keep the batch order)."""
    dtype = {1: "<u1", 2: "<u2", 4: "<u4"}[width]
    sep = numpy.asarray(separator, dtype=numpy.int64)
    parts: list[numpy.ndarray] = []
    for start in range(0, len(documents), ENCODE_BATCH_DOCUMENTS):
        batch = list(documents[start : start + ENCODE_BATCH_DOCUMENTS])
        for encoding in tokenizer.encode_batch(batch, add_special_tokens=False):
            parts.append(numpy.asarray(encoding.ids, dtype=numpy.int64))
            parts.append(sep)
        if on_progress is not None:
            on_progress(min(start + len(batch), len(documents)), len(documents))
    ids = numpy.concatenate(parts) if parts else numpy.zeros(0, dtype=numpy.int64)
    if ids.size and int(ids.max()) >= 1 << (8 * width):
        raise TokenizerError(f"the tokenizer produced id {int(ids.max())}, which does not fit {width}-byte tokens")
    return ids.astype(dtype).tobytes()


def get_shard_tokens(total_tokens: int, width: int, min_shards: int = DEFAULT_MIN_SHARDS) -> int:
    """Tokens per shard: ~1 MiB shards (SHARD_BYTES), or, for data smaller than `min_shards` of those, shards of
    1/`min_shards` of the data -- so a small corpus still has a training part and a held-out last shard
    (data.eval_shards = 1 holds out about 1/`min_shards` of it)."""
    if min_shards < 2:
        raise DataError(f"--min-shards must be at least 2 (one to train, one held out), got {min_shards}")
    return max(1, min(SHARD_BYTES // width, math.ceil(total_tokens / min_shards)))


def split_token_stream(stream: bytes, width: int, shard_tokens: int) -> tuple[bytes, ...]:
    """Consecutive shards of `shard_tokens` ids (the last may be shorter), never splitting an id."""
    if shard_tokens < 1:
        raise DataError(f"--shard-tokens must be positive, got {shard_tokens}")
    if len(stream) % width:
        raise DataError(f"a stream of {len(stream)} bytes is not a whole number of {width}-byte tokens")
    step = shard_tokens * width
    return tuple(stream[i : i + step] for i in range(0, len(stream), step))


def verify_two_shards(shards: Sequence[bytes], width: int, shard_tokens: int) -> None:
    """Without a model config, the least a run needs: one shard to train on and one held out (data.eval_shards=1)."""
    if len(shards) < 2:
        total = sum(len(s) for s in shards) // width
        raise DataError(
            f"the documents make {total:,} tokens, {len(shards)} shard(s) of {shard_tokens:,} tokens; a run needs "
            "one shard to train on and one held out for evaluation: add text, or give a smaller --shard-tokens "
            "(or leave it out: small data is then cut into --min-shards shards)"
        )


def tokenize_documents(
    documents: Sequence[str],
    tokenizer_json: bytes | None,
    *,
    shard_tokens: int | None = None,
    min_shards: int = DEFAULT_MIN_SHARDS,
    on_progress: ProgressCallback | None = None,
) -> TokenizedData:
    """Documents -> shards + manifest, byte level (`tokenizer_json` None) or with the tokenizer artifact given.

    `shard_tokens` None picks `get_shard_tokens`. Refuses no documents and fewer than two shards."""
    if not documents:
        raise DataError("no documents to prepare; give files with text in them")
    separator: tuple[int, ...]
    if tokenizer_json is None:
        stream, fmt, separator = encode_byte_documents(documents), BYTE_TOKENS, (ord("\n"),)
    else:
        tokenizer = load_tokenizer(tokenizer_json)
        vocab_size = get_tokenizer_vocab_size(tokenizer)
        width = get_token_width(vocab_size)
        fmt = TokenFormat(width, compute_content_hash(tokenizer_json), vocab_size)
        separator = get_separator_ids(tokenizer)
        stream = encode_documents(tokenizer, documents, separator, width, on_progress)
    total = len(stream) // fmt.width
    per_shard = shard_tokens if shard_tokens is not None else get_shard_tokens(total, fmt.width, min_shards)
    shards = split_token_stream(stream, fmt.width, per_shard)
    verify_two_shards(shards, fmt.width, per_shard)
    return TokenizedData(build_manifest(shards, fmt), shards, tokenizer_json, separator, len(documents))
