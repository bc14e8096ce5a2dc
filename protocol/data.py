"""Content-addressed datasets and the batches of (run seed, round, solver, step).

A corpus is cut into fixed-size shards; each shard is named by its SHA-256 and the dataset by
`compute_dataset_root` over the ordered shard list. The run pins the root, so a verifier on a
machine whose default corpus differs (another Python version) fetches shards by hash instead
and can never train on different bytes by accident.

Batches are a pure function of (run seed, round, solver, step) and the shards: the start
positions come from SHA-256 in counter mode, never from a global RNG. The last `eval_shards`
shards are held out for evaluation.

Tokens are bytes (the built-in byte-level tokenizer, manifest format GLDATA1, unchanged) or the ids
of a tokenizer stored little-endian in 2 or 4 bytes each (GLDATA2). A GLDATA2 manifest also names the
tokenizer by its content hash and the vocabulary size its ids stay below, so the dataset root pins the
tokenizer the shards were made with and a run's model is checked to cover every id
(`verify_dataset_fits_config`). `gradledger data prepare` writes such datasets.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy
import torch
from eth_utils import is_address, to_canonical_address

from protocol.errors import GradledgerError
from protocol.hashing import Hash32, compute_content_hash, hash_to_hex
from protocol.sketch import expand_seed

if TYPE_CHECKING:
    from protocol.config import RunConfig

SHARD_BYTES = 1 << 20
DATASET_MAGIC = b"GLDATA1\0"
DATASET_MAGIC_V2 = b"GLDATA2\0"
BYTE_VOCAB_SIZE = 256
TOKEN_WIDTHS = (1, 2, 4)
_NO_TOKENIZER = bytes(32)


class DataError(GradledgerError):
    """A shard is missing or corrupt, or the dataset cannot serve the requested batches."""


class VocabularyMismatchError(DataError):
    """The dataset's tokenizer produces ids the run's model has no embedding for."""


class DatasetTooSmallError(DataError):
    """The dataset cannot serve the batches a run's config asks for: a run on it could never train or evaluate."""


@dataclass(frozen=True)
class ShardRef:
    """One shard of a dataset: its content hash and size in bytes."""

    hash: Hash32
    size: int


@dataclass(frozen=True)
class TokenFormat:
    """How shard bytes encode tokens: bytes themselves (width 1, no tokenizer, vocabulary 256), or the ids of
    the tokenizer artifact `tokenizer` in `width` little-endian bytes each, every id below `vocab_size`."""

    width: int = 1
    tokenizer: Hash32 | None = None
    vocab_size: int = BYTE_VOCAB_SIZE

    @property
    def is_bytes(self) -> bool:
        return self.width == 1 and self.tokenizer is None and self.vocab_size == BYTE_VOCAB_SIZE


BYTE_TOKENS = TokenFormat()


def verify_token_format(fmt: TokenFormat) -> None:
    """Refuse a token format no shard can hold: the width must fit every id below the vocabulary size."""
    if fmt.width not in TOKEN_WIDTHS:
        raise DataError(f"token width must be one of {TOKEN_WIDTHS} bytes, got {fmt.width}")
    if not 2 <= fmt.vocab_size <= 1 << (8 * fmt.width) or fmt.vocab_size > 1 << 31:
        raise DataError(f"a vocabulary of {fmt.vocab_size} ids does not fit {fmt.width}-byte tokens")


@dataclass(frozen=True)
class DatasetManifest:
    """The ordered shard list, how its bytes encode tokens, and the root the run pins."""

    shards: tuple[ShardRef, ...]
    root: Hash32
    tokens: TokenFormat = BYTE_TOKENS


@dataclass(frozen=True)
class TokenDataset:
    """Byte tokens of the training and held-out shards, ready to index."""

    root: Hash32
    train: torch.Tensor
    eval: torch.Tensor


def split_into_shards(corpus: bytes, shard_bytes: int = SHARD_BYTES) -> list[bytes]:
    """Cut a corpus into consecutive shards of `shard_bytes` (the last may be shorter)."""
    if shard_bytes < 1:
        raise DataError(f"shard size must be positive, got {shard_bytes}")
    if not corpus:
        raise DataError("the corpus is empty; point the run at a directory with text files")
    return [corpus[i : i + shard_bytes] for i in range(0, len(corpus), shard_bytes)]


def encode_manifest(shards: Sequence[ShardRef], tokens: TokenFormat = BYTE_TOKENS) -> bytes:
    """Canonical manifest bytes. Byte tokens (GLDATA1): magic, u32 count, then (32-byte hash, u64 size) per
    shard. Tokenizer ids (GLDATA2): magic, u8 width, 32-byte tokenizer hash, u32 vocabulary size, u32 count,
    then the same shard entries."""
    if tokens.is_bytes:
        parts = [DATASET_MAGIC, struct.pack("<I", len(shards))]
    else:
        verify_token_format(tokens)
        tokenizer = bytes(tokens.tokenizer) if tokens.tokenizer is not None else _NO_TOKENIZER
        parts = [
            DATASET_MAGIC_V2,
            struct.pack("<B", tokens.width),
            tokenizer,
            struct.pack("<II", tokens.vocab_size, len(shards)),
        ]
    for shard in shards:
        parts.append(shard.hash + struct.pack("<Q", shard.size))
    return b"".join(parts)


def compute_dataset_root(shards: Sequence[ShardRef], tokens: TokenFormat = BYTE_TOKENS) -> Hash32:
    """SHA-256 of the canonical manifest bytes, so the manifest artifact is named by the root."""
    return compute_content_hash(encode_manifest(shards, tokens))


def decode_manifest(data: bytes) -> DatasetManifest:
    """Parse manifest bytes (e.g. fetched from a peer by the dataset root)."""
    if len(data) >= 12 and data[:8] == DATASET_MAGIC:
        tokens, header = BYTE_TOKENS, 12
    elif len(data) >= 49 and data[:8] == DATASET_MAGIC_V2:
        (width,) = struct.unpack("<B", data[8:9])
        tokenizer = data[9:41]
        (vocab,) = struct.unpack("<I", data[41:45])
        tokens = TokenFormat(width, None if tokenizer == _NO_TOKENIZER else Hash32(tokenizer), vocab)
        verify_token_format(tokens)
        header = 49
    else:
        raise DataError("not a dataset manifest: missing the GLDATA1 or GLDATA2 header")
    (count,) = struct.unpack("<I", data[header - 4 : header])
    if len(data) != header + 40 * count:
        raise DataError(f"dataset manifest of {count} shards has {len(data)} bytes, expected {header + 40 * count}")
    shards = []
    for i in range(count):
        offset = header + 40 * i
        (size,) = struct.unpack("<Q", data[offset + 32 : offset + 40])
        if size % tokens.width:
            raise DataError(f"shard {i} of {size} bytes is not a whole number of {tokens.width}-byte tokens")
        shards.append(ShardRef(Hash32(data[offset : offset + 32]), size))
    return DatasetManifest(shards=tuple(shards), root=compute_content_hash(data), tokens=tokens)


def build_manifest(shards: Sequence[bytes], tokens: TokenFormat = BYTE_TOKENS) -> DatasetManifest:
    """Name each shard by its hash and the dataset by its root."""
    refs = tuple(ShardRef(compute_content_hash(s), len(s)) for s in shards)
    return DatasetManifest(shards=refs, root=compute_dataset_root(refs, tokens), tokens=tokens)


def decode_tokens(data: bytes, width: int) -> torch.Tensor:
    """Shard bytes as a 1-D tensor of token ids (uint8 for bytes, int32 for 2- and 4-byte ids)."""
    if width == 1:
        return torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.zeros(0, dtype=torch.uint8)
    if len(data) % width:
        raise DataError(f"{len(data)} bytes are not a whole number of {width}-byte tokens")
    values = numpy.frombuffer(data, dtype="<u2" if width == 2 else "<u4").astype(numpy.int64)
    if values.size and values.max() >= 1 << 31:
        raise DataError("a token id does not fit 31 bits")
    return torch.from_numpy(values.astype(numpy.int32))


def build_token_dataset(
    manifest: DatasetManifest, shard_bytes: Mapping[bytes, bytes], eval_shards: int
) -> TokenDataset:
    """Check every shard against its hash and assemble the train / held-out token streams."""
    if compute_dataset_root(manifest.shards, manifest.tokens) != manifest.root:
        raise DataError("dataset manifest does not hash to its root; the shard list was altered")
    if not 1 <= eval_shards < len(manifest.shards):
        raise DataError(
            f"need at least one training shard and {eval_shards} held-out shard(s), "
            f"but the dataset has {len(manifest.shards)} shard(s); use a larger corpus or fewer eval shards"
        )
    chunks = []
    for i, ref in enumerate(manifest.shards):
        data = shard_bytes.get(ref.hash)
        if data is None:
            raise DataError(
                f"shard {i} ({hash_to_hex(ref.hash)}) of dataset {hash_to_hex(manifest.root)} is missing; "
                "fetch it from a peer's artifact store by hash"
            )
        if len(data) != ref.size or compute_content_hash(data) != ref.hash:
            raise DataError(f"shard {i} bytes do not match their hash {hash_to_hex(ref.hash)}; refetch it")
        chunks.append(data)
    split = len(chunks) - eval_shards
    width = manifest.tokens.width
    train = decode_tokens(b"".join(chunks[:split]), width)
    held_out = decode_tokens(b"".join(chunks[split:]), width)
    for stream in (train, held_out):
        if stream.numel() and int(stream.max()) >= manifest.tokens.vocab_size:
            raise DataError(
                f"dataset {hash_to_hex(manifest.root)} holds token id {int(stream.max())}, outside its declared "
                f"vocabulary of {manifest.tokens.vocab_size}; the shards were not made by its tokenizer"
            )
    return TokenDataset(root=manifest.root, train=train, eval=held_out)


def get_min_stream_tokens(block_size: int, batch_size: int) -> int:
    """Tokens a stream needs to hold `batch_size` distinct windows of block_size + 1 tokens (inputs and targets).

    Batches draw start positions from [0, tokens - block_size - 1) (`get_batch_positions`), so this is the
    smallest stream whose every batch can be made of different windows instead of one window repeated."""
    return block_size + batch_size + 1


def verify_dataset_fits_config(
    manifest: DatasetManifest, config: RunConfig, where: str = "the corpus", shard_bytes: int = SHARD_BYTES
) -> None:
    """Refuse a dataset on which a run with `config` could never train or evaluate, before anything is published.

    Checked from the shard sizes alone (no shard bytes needed): the dataset has at least one training shard
    besides the `data.eval_shards` held out, and both the training stream and the held-out stream hold one batch
    (`get_min_stream_tokens`). Without this a run is created, its reward pool locked, and every solver refuses
    it at `build_token_dataset`. `where` names the corpus in the message (e.g. its directory), so the error
    says where to add text. Raises DatasetTooSmallError naming what is short and what to do, or
    VocabularyMismatchError when the dataset's tokenizer has more ids than the model's vocabulary.
    """
    held_out = config.data.eval_shards
    if manifest.tokens.vocab_size > config.model.vocab_size:
        raise VocabularyMismatchError(
            f"the tokenizer of {where} has {manifest.tokens.vocab_size:,} ids but the model's vocabulary holds "
            f"{config.model.vocab_size:,}: use a model config with vocab_size >= {manifest.tokens.vocab_size:,}, or "
            "prepare the data with a smaller tokenizer (gradledger data prepare --vocab-size)"
        )
    count = len(manifest.shards)
    width = manifest.tokens.width
    total = sum(s.size for s in manifest.shards) // width
    need = get_min_stream_tokens(config.model.block_size, config.train.batch_size)
    shape = f"model.block_size {config.model.block_size}, train.batch_size {config.train.batch_size}"
    if count < held_out + 1:
        # smallest corpus that fits: the held-out shards, one more byte for training, and a held-out tail of a batch
        smallest = held_out * shard_bytes + max(1, need - (held_out - 1) * shard_bytes)
        raise DatasetTooSmallError(
            f"{where} holds {total:,} bytes: {count} shard(s) of up to {shard_bytes:,} bytes; the config holds out "
            f"the last {held_out} for evaluation (data.eval_shards) and needs at least 1 more to train: add at least "
            f"{smallest - total:,} bytes of text to {where} (a run with this config needs {smallest:,} bytes or more)"
        )
    train = sum(s.size for s in manifest.shards[: count - held_out]) // width
    held = total - train
    if train < need:
        raise DatasetTooSmallError(
            f"the training shards of {where} hold {train:,} tokens; one training batch ({shape}) needs at least "
            f"{need:,}: add text to {where}, or use a config with a smaller block or batch (e.g. --preset tiny)"
        )
    if held < need:
        raise DatasetTooSmallError(
            f"the held-out shard(s) of {where} (the last {held_out}) hold {held:,} tokens; one evaluation batch "
            f"({shape}) needs at least {need:,}: add at least {need - held:,} bytes of text to {where} (the "
            "held-out shard is the corpus's tail), or use a config with a smaller block or batch (e.g. --preset tiny)"
        )


def _solver_bytes(solver: str) -> bytes:
    if not isinstance(solver, str) or not is_address(solver):
        raise DataError(f"solver must be a 20-byte hex address, got {solver!r}")
    return to_canonical_address(solver)


def get_batch_positions(run_seed: Hash32, domain: bytes, count: int, num_positions: int) -> list[int]:
    """`count` start positions in [0, num_positions) from the seed and a domain tag."""
    if num_positions < 1:
        raise DataError("the token stream is shorter than one sequence; use a larger corpus or block size")
    raw = expand_seed(run_seed, domain, 8 * count)
    return [int.from_bytes(raw[8 * i : 8 * i + 8], "little") % num_positions for i in range(count)]


def _gather(tokens: torch.Tensor, positions: list[int], block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    starts = torch.tensor(positions, dtype=torch.long).unsqueeze(1)
    offsets = torch.arange(block_size + 1, dtype=torch.long).unsqueeze(0)
    window = tokens[starts + offsets].long()
    return window[:, :-1].contiguous(), window[:, 1:].contiguous()


def get_train_batch(
    dataset: TokenDataset,
    run_seed: Hash32,
    round_index: int,
    solver: str,
    step: int,
    batch_size: int,
    block_size: int,
    plant_secret: Hash32 | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets) of shape (batch_size, block_size) for one inner step of one solver.

    With `plant_secret` (the solver's round secret, protocol/planting.py) the batch of a planted round:
    other positions of the same stream, so the step is genuine training on real data that only a replay
    with the committed batches tells apart (docs/planted-faults.md)."""
    domain = b"train" + struct.pack("<Q", round_index) + _solver_bytes(solver) + struct.pack("<Q", step)
    if plant_secret is not None:
        domain = b"plant" + bytes(plant_secret) + domain
    positions = get_batch_positions(run_seed, domain, batch_size, dataset.train.numel() - block_size - 1)
    return _gather(dataset.train, positions, block_size)


def get_eval_batch(
    dataset: TokenDataset, run_seed: Hash32, index: int, batch_size: int, block_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The `index`-th held-out batch: the same for every party and every round."""
    positions = get_batch_positions(
        run_seed, b"eval" + struct.pack("<Q", index), batch_size, dataset.eval.numel() - block_size - 1
    )
    return _gather(dataset.eval, positions, block_size)
