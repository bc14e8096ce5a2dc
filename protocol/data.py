"""Content-addressed datasets and the batches of (run seed, round, solver, step).

A corpus is cut into fixed-size shards; each shard is named by its SHA-256 and the dataset by
`compute_dataset_root` over the ordered shard list. The run pins the root, so a verifier on a
machine whose default corpus differs (another Python version) fetches shards by hash instead
and can never train on different bytes by accident.

Batches are a pure function of (run seed, round, solver, step) and the shards: the start
positions come from SHA-256 in counter mode, never from a global RNG. The last `eval_shards`
shards are held out for evaluation.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from eth_utils import is_address, to_canonical_address

from protocol.errors import GradledgerError
from protocol.hashing import Hash32, compute_content_hash, hash_to_hex
from protocol.sketch import expand_seed

if TYPE_CHECKING:
    from protocol.config import RunConfig

SHARD_BYTES = 1 << 20
DATASET_MAGIC = b"GLDATA1\0"


class DataError(GradledgerError):
    """A shard is missing or corrupt, or the dataset cannot serve the requested batches."""


class DatasetTooSmallError(DataError):
    """The dataset cannot serve the batches a run's config asks for: a run on it could never train or evaluate."""


@dataclass(frozen=True)
class ShardRef:
    """One shard of a dataset: its content hash and size in bytes."""

    hash: Hash32
    size: int


@dataclass(frozen=True)
class DatasetManifest:
    """The ordered shard list and the root the run pins."""

    shards: tuple[ShardRef, ...]
    root: Hash32


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


def encode_manifest(shards: Sequence[ShardRef]) -> bytes:
    """Canonical manifest bytes: magic, u32 count, then (32-byte hash, u64 size) per shard."""
    parts = [DATASET_MAGIC, struct.pack("<I", len(shards))]
    for shard in shards:
        parts.append(shard.hash + struct.pack("<Q", shard.size))
    return b"".join(parts)


def compute_dataset_root(shards: Sequence[ShardRef]) -> Hash32:
    """SHA-256 of the canonical manifest bytes, so the manifest artifact is named by the root."""
    return compute_content_hash(encode_manifest(shards))


def decode_manifest(data: bytes) -> DatasetManifest:
    """Parse manifest bytes (e.g. fetched from a peer by the dataset root)."""
    if len(data) < 12 or data[:8] != DATASET_MAGIC:
        raise DataError("not a dataset manifest: missing the GLDATA1 header")
    (count,) = struct.unpack("<I", data[8:12])
    if len(data) != 12 + 40 * count:
        raise DataError(f"dataset manifest of {count} shards has {len(data)} bytes, expected {12 + 40 * count}")
    shards = []
    for i in range(count):
        offset = 12 + 40 * i
        (size,) = struct.unpack("<Q", data[offset + 32 : offset + 40])
        shards.append(ShardRef(Hash32(data[offset : offset + 32]), size))
    return DatasetManifest(shards=tuple(shards), root=compute_content_hash(data))


def build_manifest(shards: Sequence[bytes]) -> DatasetManifest:
    """Name each shard by its hash and the dataset by its root."""
    refs = tuple(ShardRef(compute_content_hash(s), len(s)) for s in shards)
    return DatasetManifest(shards=refs, root=compute_dataset_root(refs))


def build_token_dataset(
    manifest: DatasetManifest, shard_bytes: Mapping[bytes, bytes], eval_shards: int
) -> TokenDataset:
    """Check every shard against its hash and assemble the train / held-out token streams."""
    if compute_dataset_root(manifest.shards) != manifest.root:
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
    train = torch.frombuffer(bytearray(b"".join(chunks[:split])), dtype=torch.uint8)
    held_out = torch.frombuffer(bytearray(b"".join(chunks[split:])), dtype=torch.uint8)
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
    says where to add text. Raises DatasetTooSmallError naming what is short and what to do.
    """
    held_out = config.data.eval_shards
    count = len(manifest.shards)
    total = sum(s.size for s in manifest.shards)
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
    train = sum(s.size for s in manifest.shards[: count - held_out])
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
