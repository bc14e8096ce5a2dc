"""A prepared dataset on disk: what `gradledger data prepare` writes and `run create --dataset DIR` reads.

Layout of `<dir>`:

- `dataset.json`: the summary a person reads (root, token width, tokenizer hash, vocabulary size, shard count,
  train / held-out token counts, the input files with size and SHA-256, the options). Not hashed into anything:
  the root is. Written with sorted keys and no timestamps, so the same inputs give the same file.
- `artifacts/`: a LocalArtifactStore holding the manifest (named by the dataset root), every shard and the
  tokenizer JSON (if any), each named by its SHA-256 -- the same artifacts `run create` publishes.

Writing is atomic as a whole: everything goes to a temp directory next to `<dir>`, is fsynced, and is renamed onto
`<dir>` at the end, so a crash or a refused input never leaves a half-written dataset under the name. Loading
checks every hash (manifest against the root, every shard, the tokenizer against the manifest) and says what is
wrong and what to do.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.adapters.artifacts import ArtifactCorruptError, ArtifactNotFoundError, LocalArtifactStore
from protocol.data import DataError, DatasetManifest, decode_manifest, encode_manifest
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex, to_hash32
from protocol.tokenization import get_tokenizer_vocab_size, load_tokenizer

DATASET_FILE = "dataset.json"
ARTIFACTS_DIR = "artifacts"
DATASET_FORMAT = "gradledger-dataset/1"


@dataclass(frozen=True)
class PreparedDataset:
    """A dataset's manifest, its shards by hash, and its tokenizer artifact (None for byte level)."""

    manifest: DatasetManifest
    shards: dict[bytes, bytes]
    tokenizer_json: bytes | None
    """The tokenizer artifact; its SHA-256 is `manifest.tokens.tokenizer`."""


def describe_manifest(manifest: DatasetManifest, eval_shards: int = 1) -> dict[str, Any]:
    """The fields of dataset.json that follow from the manifest (so they can never disagree with it)."""
    width = manifest.tokens.width
    sizes = [ref.size // width for ref in manifest.shards]
    held = sum(sizes[len(sizes) - eval_shards :]) if 0 < eval_shards < len(sizes) else 0
    return {
        "format": DATASET_FORMAT,
        "root": hash_to_hex(manifest.root),
        "token_width": width,
        "tokenizer": hash_to_hex(manifest.tokens.tokenizer) if manifest.tokens.tokenizer is not None else None,
        "vocab_size": manifest.tokens.vocab_size,
        "shard_count": len(manifest.shards),
        "tokens": sum(sizes),
        "eval_shards": eval_shards,
        "train_tokens": sum(sizes) - held,
        "eval_tokens": held,
    }


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every filesystem lets a directory be opened for fsync
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def verify_output_directory(directory: Path) -> None:
    """Refuse to replace anything but nothing, an empty directory, or an earlier prepared dataset."""
    if not directory.exists():
        return
    if not directory.is_dir():
        raise DataError(f"--out {directory} exists and is not a directory; choose another --out")
    if any(directory.iterdir()) and not (directory / DATASET_FILE).is_file():
        raise DataError(
            f"--out {directory} exists and is not a prepared dataset (no {DATASET_FILE}); it is not replaced: "
            "choose a new or empty directory"
        )


def write_prepared_dataset(directory: Path, prepared: PreparedDataset, summary: dict) -> None:
    """Write `prepared` and `summary` (plus the manifest's own fields, `describe_manifest`) to `directory`.

    Built in a temp directory next to it and renamed at the end; an earlier prepared dataset there is replaced
    only once the new one is complete. Anything else at `directory` is refused (`verify_output_directory`)."""
    directory = Path(directory)
    verify_output_directory(directory)
    manifest = prepared.manifest
    named = manifest.tokens.tokenizer
    if (named is None) != (prepared.tokenizer_json is None):
        raise DataError("the manifest names a tokenizer but none was given, or the reverse; prepare the data again")
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}.tmp-"))
    try:
        store = LocalArtifactStore(staging / ARTIFACTS_DIR)
        if store.put(encode_manifest(manifest.shards, manifest.tokens)) != manifest.root:
            raise DataError("the manifest does not hash to its root; prepare the data again")
        for i, ref in enumerate(manifest.shards):
            data = prepared.shards.get(ref.hash)
            if data is None or store.put(data) != ref.hash:
                raise DataError(f"shard {i} ({hash_to_hex(ref.hash)}) is missing or does not match its hash")
        if prepared.tokenizer_json is not None and store.put(prepared.tokenizer_json) != named:
            raise DataError("the tokenizer does not hash to the one the manifest names; prepare the data again")
        content = {**summary, **describe_manifest(manifest, int(summary.get("eval_shards", 1)))}
        with open(staging / DATASET_FILE, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(content, indent=2, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        _fsync_dir(staging)
        if not directory.exists():
            os.replace(staging, directory)
        else:  # the earlier dataset steps aside only once the new one is complete, and comes back if the swap fails
            old = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}.old-"))
            os.replace(directory, old / "dataset")
            try:
                os.replace(staging, directory)
            except BaseException:
                os.replace(old / "dataset", directory)
                old.rmdir()
                raise
            shutil.rmtree(old, ignore_errors=True)
        _fsync_dir(directory.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _read_artifact(store: LocalArtifactStore, digest: bytes, what: str, directory: Path) -> bytes:
    try:
        return store.get(digest)
    except ArtifactNotFoundError:
        raise DataError(
            f"prepared dataset {directory}: {what} ({hash_to_hex(digest)}) is missing from {store.root}; "
            "run `gradledger data prepare` again"
        ) from None
    except ArtifactCorruptError:
        raise DataError(
            f"prepared dataset {directory}: {what} ({hash_to_hex(digest)}) does not match its hash (the file was "
            "altered or the disk is bad); run `gradledger data prepare` again"
        ) from None


def _read_summary(directory: Path) -> dict[str, Any]:
    path = directory / DATASET_FILE
    if not directory.is_dir():
        raise DataError(
            f"dataset {directory} is not a directory; give a directory written by `gradledger data prepare`"
        )
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(
            f"{directory} is not a prepared dataset (no {DATASET_FILE}); write one with `gradledger data prepare`"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path} is not readable JSON ({exc}); run `gradledger data prepare` again") from None
    if not isinstance(summary, dict) or summary.get("format") != DATASET_FORMAT:
        raise DataError(f"{path} is not a {DATASET_FORMAT} summary; run `gradledger data prepare` again")
    return summary


def load_prepared_dataset(directory: Path) -> PreparedDataset:
    """The dataset at `directory`, every hash checked; a DataError naming what is wrong otherwise."""
    directory = Path(directory)
    summary = _read_summary(directory)
    try:
        root = to_hash32(str(summary.get("root")), "root")
    except GradledgerError:
        raise DataError(
            f"{directory / DATASET_FILE} has no valid 'root'; run `gradledger data prepare` again"
        ) from None
    if not (directory / ARTIFACTS_DIR).is_dir():
        raise DataError(
            f"prepared dataset {directory} has no {ARTIFACTS_DIR}/ directory; run `gradledger data prepare`"
        )
    store = LocalArtifactStore(directory / ARTIFACTS_DIR, quarantine_corrupt=False)
    manifest = decode_manifest(_read_artifact(store, root, "the manifest", directory))
    described = describe_manifest(manifest, int(summary.get("eval_shards", 1)))
    differing = sorted(
        k for k in ("token_width", "tokenizer", "vocab_size", "shard_count") if summary.get(k) != described[k]
    )
    if differing:
        raise DataError(
            f"{directory / DATASET_FILE} disagrees with the manifest it names on {', '.join(differing)}; "
            "run `gradledger data prepare` again"
        )
    shards: dict[bytes, bytes] = {
        ref.hash: _read_artifact(store, ref.hash, f"shard {i}", directory) for i, ref in enumerate(manifest.shards)
    }
    tokenizer_json = None
    if manifest.tokens.tokenizer is not None:
        tokenizer_json = _read_artifact(store, manifest.tokens.tokenizer, "the tokenizer", directory)
        tokenizer = load_tokenizer(tokenizer_json, where=f"the tokenizer of prepared dataset {directory}")
        if get_tokenizer_vocab_size(tokenizer) > manifest.tokens.vocab_size:
            raise DataError(
                f"the tokenizer of prepared dataset {directory} has more ids than the {manifest.tokens.vocab_size} "
                "its manifest declares; run `gradledger data prepare` again"
            )
    return PreparedDataset(manifest=manifest, shards=shards, tokenizer_json=tokenizer_json)
